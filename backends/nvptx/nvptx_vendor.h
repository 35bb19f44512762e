/* backends/nvptx/nvptx_vendor.h: NVIDIA's entry in the GPU vendor list
 * (backends/gpu/gpu_vendor.h), which the backend registry holds. */
#ifndef COV_NVPTX_VENDOR_H
#define COV_NVPTX_VENDOR_H

#include "backends/gpu/gpu_vendor.h"

extern const gpu_vendor nvptx_vendor;

#endif
