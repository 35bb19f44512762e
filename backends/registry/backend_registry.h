/* backends/registry/backend_registry.h: the registry of backends, the one
 * module above every backend (cmake/modules.txt).
 *
 * Today it holds the GPU vendor list (backends/gpu/gpu_vendor.h), which the
 * shared GPU code receives from here so that it names no vendor, and it
 * defines the public cov_gpu_* entry points with that list. */
#ifndef COV_BACKEND_REGISTRY_H
#define COV_BACKEND_REGISTRY_H

#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/gpu/gpu_vendor.h"

/* Every GPU vendor built in, NULL-terminated (for gpu_target_open). */
gpu_vendors backend_gpu_vendors(void);
#endif

#endif
