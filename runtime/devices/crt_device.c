/* runtime/devices/crt_device.c: the devices the runtime runs artifacts on,
 * and the backend name an artifact gives for each: the one table of them.
 * The reader and the session ask it for a device kind and its code format
 * and never compare names; runtime/devices/ is the runtime's backend code
 * (tests/arch/check_backend_names.py reads it as it reads backends/). */
#include <string.h>

#include "runtime/crt_internal.h"

static const struct {
  const char *backend;     /* the artifact's "backend" */
  const char *code_format; /* its modules' "format"; NULL: it runs no kernels */
} k_devices[] = {
    [CRT_DEV_CUDA] = {"nvptx", "ptx"},
    [CRT_DEV_HIP] = {"amdgpu", "hsaco"},
    [CRT_DEV_NPU] = {"npu-sim", NULL},
};

crt_device crt_device_of(const char *backend) {
  for (int d = 0; d < CRT_DEV_COUNT; d++)
    if (backend && !strcmp(backend, k_devices[d].backend)) return (crt_device)d;
  return CRT_DEV_NONE;
}

const char *crt_device_backend(crt_device d) {
  return d >= 0 && d < CRT_DEV_COUNT ? k_devices[d].backend : "?";
}

const char *crt_device_code_format(crt_device d) {
  return d >= 0 && d < CRT_DEV_COUNT ? k_devices[d].code_format : NULL;
}

const char *crt_device_backends(void) { return "nvptx, amdgpu, npu-sim"; }
