/* backends/amdgpu/amdgpu_hip.h: the HIP module API, loaded at run time.
 *
 * Like nvptx_cuda for NVIDIA, covenant needs no ROCm to build: it dlopen()s
 * libamdhip64 and uses the module API (hipModuleLoadData,
 * hipModuleGetFunction, hipModuleLaunchKernel) with device buffers. Without
 * the runtime, or without an AMD GPU, amdgpu_hip_open fails with
 * COV_DEVICE_ERROR naming what HIP reported. */
#ifndef COV_AMDGPU_HIP_H
#define COV_AMDGPU_HIP_H

#include <stddef.h>

#include "covenant/status.h"

typedef struct amdgpu_hip amdgpu_hip;
typedef struct amdgpu_hip_module amdgpu_hip_module;

cov_status amdgpu_hip_open(amdgpu_hip **out);
void amdgpu_hip_close(amdgpu_hip *h);
const char *amdgpu_hip_device_name(const amdgpu_hip *h);
cov_status amdgpu_hip_alloc(amdgpu_hip *h, size_t bytes, void **out);
void amdgpu_hip_free(amdgpu_hip *h, void *p);
cov_status amdgpu_hip_upload(amdgpu_hip *h, void *dst, const void *src, size_t bytes);
cov_status amdgpu_hip_download(amdgpu_hip *h, void *dst, const void *src, size_t bytes);
/* Loads a HSACO code object. */
cov_status amdgpu_hip_load(amdgpu_hip *h, const void *hsaco, amdgpu_hip_module **out);
void amdgpu_hip_unload(amdgpu_hip *h, amdgpu_hip_module *m);
/* Launches and waits; with out_ms, the time measured with HIP events. */
cov_status amdgpu_hip_launch(amdgpu_hip *h, amdgpu_hip_module *m, const char *kernel, const unsigned grid[3],
                             const unsigned block[3], unsigned shared_bytes, void **args, float *out_ms);

#endif
