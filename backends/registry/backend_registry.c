/* backends/registry/backend_registry.c: the backend registry's tables. */
#include "backends/registry/backend_registry.h"

#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/amdgpu/amdgpu_vendor.h"
#include "backends/nvptx/nvptx_vendor.h"
#include "covenant/gpu.h"

static const gpu_vendor *const k_gpu_vendors[] = {&amdgpu_vendor, &nvptx_vendor, NULL};

gpu_vendors backend_gpu_vendors(void) { return k_gpu_vendors; }

cov_status cov_gpu_compile(const cov_gpu_options *opts, const char *const *specs, int n_specs,
                           const char *out_dir, FILE *report) {
  return gpu_compile(k_gpu_vendors, opts, specs, n_specs, out_dir, report);
}

cov_status cov_gpu_run(const cov_gpu_options *opts, const char *const *specs, int n_specs, FILE *out) {
  return gpu_run(k_gpu_vendors, opts, specs, n_specs, out);
}

cov_status cov_gpu_run_model(const cov_gpu_options *opts, const char *path, double tolerance,
                             cov_gpu_inputs_fn inputs, void *user, FILE *out) {
  return gpu_run_model(k_gpu_vendors, opts, path, tolerance, inputs, user, out);
}
#endif
