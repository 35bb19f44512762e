/* backends/amdgpu/amdgpu_vendor.h: AMD's entry in the GPU vendor list
 * (backends/gpu/gpu_vendor.h), which the backend registry holds. */
#ifndef COV_AMDGPU_VENDOR_H
#define COV_AMDGPU_VENDOR_H

#include "backends/gpu/gpu_vendor.h"

extern const gpu_vendor amdgpu_vendor;

#endif
