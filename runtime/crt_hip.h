/* runtime/crt_hip.h: the HIP module API, loaded at run time.
 *
 * Like crt_cuda for NVIDIA, covenant needs no ROCm to build: it dlopen()s
 * libamdhip64 and uses the module API (hipModuleLoadData,
 * hipModuleGetFunction, hipModuleLaunchKernel) with device buffers. Without
 * the runtime, or without an AMD GPU, crt_hip_open fails with
 * COV_DEVICE_ERROR naming what HIP reported. */
#ifndef CRT_HIP_H
#define CRT_HIP_H

#include <stddef.h>

#include "covenant/status.h"

typedef struct crt_hip crt_hip;
typedef struct crt_hip_module crt_hip_module;

cov_status crt_hip_open(crt_hip **out);
void crt_hip_close(crt_hip *h);
const char *crt_hip_device_name(const crt_hip *h);
cov_status crt_hip_alloc(crt_hip *h, size_t bytes, void **out);
void crt_hip_free(crt_hip *h, void *p);
cov_status crt_hip_upload(crt_hip *h, void *dst, const void *src, size_t bytes);
cov_status crt_hip_download(crt_hip *h, void *dst, const void *src, size_t bytes);
/* Loads a HSACO code object. */
cov_status crt_hip_load(crt_hip *h, const void *hsaco, crt_hip_module **out);
void crt_hip_unload(crt_hip *h, crt_hip_module *m);
/* Launches and waits; with out_ms, the time measured with HIP events. */
cov_status crt_hip_launch(crt_hip *h, crt_hip_module *m, const char *kernel, const unsigned grid[3],
                             const unsigned block[3], unsigned shared_bytes, void **args, float *out_ms);

#endif
