/* backends/registry/backend_registry.c: the table of backends and the
 * public cov_gpu_* entry points, which hand the shared GPU code its vendors
 * (backends/gpu/gpu_vendor.h). */
#include "backends/registry/backend_registry.h"

#include <stdio.h>
#include <string.h>

#include "covenant/npu.h"
#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/amdgpu/amdgpu_vendor.h"
#include "backends/nvptx/nvptx_vendor.h"
#include "backends/gpu/gpu_artifact.h"
#include "covenant/gpu.h"
#endif

static cov_status run_ref(const backend_target *t, const cov_model *m, const char *name, const cov_tensor *inputs,
                          size_t n_inputs, cov_tensor *outputs, size_t n_outputs) {
  (void)t, (void)name;
  return cov_model_run_ref(m, inputs, n_inputs, outputs, n_outputs);
}

static cov_status run_npu(const backend_target *t, const cov_model *m, const char *name, const cov_tensor *inputs,
                          size_t n_inputs, cov_tensor *outputs, size_t n_outputs) {
  (void)name;
  cov_npu_report *r = NULL; /* where each group ran: the CLI's business */
  cov_status st = cov_npu_run_model(m, t->acg, inputs, n_inputs, outputs, n_outputs, &r);
  cov_npu_report_free(r);
  return st;
}

#ifdef COV_HAVE_GPU_BACKENDS
static const gpu_vendor *const k_gpu_vendors[] = {&amdgpu_vendor, &nvptx_vendor, NULL};

static cov_status run_gpu(const backend_target *t, const cov_model *m, const char *name, const cov_tensor *inputs,
                          size_t n_inputs, cov_tensor *outputs, size_t n_outputs) {
  return gpu_run_model_on_device(k_gpu_vendors, cov_acg_file(t->acg), COV_F16, m, name, inputs, n_inputs, outputs,
                                 n_outputs);
}
#endif

static const backend_info k_backends[] = {
    {.name = "npu-sim",
     .summary = "the NPU instruction set (backends/npu-sim/ISA.md), simulated cycle by cycle",
     .ops = BACKEND_MAP | BACKEND_COMPILE | BACKEND_RUN | BACKEND_VERIFY,
     .run_model = run_npu},
#ifdef COV_HAVE_GPU_BACKENDS
    {.name = "amdgpu",
     .summary = "AMD GPUs: HSACO through LLVM, run through HIP",
     .ops = BACKEND_MAP | BACKEND_COMPILE | BACKEND_RUN,
     .run_model = run_gpu,
     .gpu = &amdgpu_vendor},
    {.name = "nvptx",
     .summary = "NVIDIA GPUs: PTX through LLVM, run through the CUDA driver",
     .ops = BACKEND_MAP | BACKEND_COMPILE | BACKEND_RUN,
     .run_model = run_gpu,
     .gpu = &nvptx_vendor},
#endif
    {.name = BACKEND_REF,
     .summary = "the CPU reference interpreter (codelets), the oracle of every backend",
     .ops = BACKEND_RUN,
     .run_model = run_ref},
};
enum { N_BACKENDS = (int)(sizeof k_backends / sizeof k_backends[0]) };

int backend_count(void) { return N_BACKENDS; }
const backend_info *backend_at(int i) { return i >= 0 && i < N_BACKENDS ? &k_backends[i] : NULL; }

const backend_info *backend_find(const char *name) {
  for (int i = 0; name && i < N_BACKENDS; i++)
    if (!strcmp(k_backends[i].name, name)) return &k_backends[i];
  return NULL;
}

cov_status backend_target_open(const char *name, backend_target *out) {
  memset(out, 0, sizeof *out);
  if (!name) name = BACKEND_DEFAULT_TARGET;
  if (!strcmp(name, BACKEND_REF)) {
    out->backend = backend_find(BACKEND_REF);
    return NULL;
  }
  COV_RETURN_IF_ERROR(cov_acg_load_target(name, &out->acg));
  const char *be = cov_acg_backend(out->acg);
  out->backend = be && strcmp(be, BACKEND_REF) ? backend_find(be) : NULL;
  if (out->backend) return NULL;
  char names[128] = "";
  for (int i = 0; i < N_BACKENDS; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", k_backends[i].name);
  cov_loc loc = {cov_acg_file(out->acg), 0, 0, "$.backend.name"};
  cov_status st = cov_error(COV_UNSUPPORTED, &loc, "target %s has backend '%s', which this covenant does not have (%s)",
                            cov_acg_name(out->acg), be ? be : "(none)", names);
  backend_target_close(out);
  return st;
}

void backend_target_close(backend_target *t) {
  if (t->acg) cov_acg_free(t->acg);
  t->acg = NULL;
  t->backend = NULL;
}

#ifdef COV_HAVE_GPU_BACKENDS
gpu_vendors backend_gpu_vendors(void) { return k_gpu_vendors; }

cov_status cov_gpu_compile(const cov_gpu_options *opts, const char *const *specs, int n_specs,
                           const char *out_dir, FILE *report) {
  return gpu_compile(k_gpu_vendors, opts, specs, n_specs, out_dir, report);
}

cov_status cov_gpu_compile_model(const cov_gpu_options *opts, const char *model_path, const char *out_path) {
  return gpu_compile_artifact(k_gpu_vendors, opts, model_path, out_path);
}

cov_status cov_gpu_run(const cov_gpu_options *opts, const char *const *specs, int n_specs, FILE *out) {
  return gpu_run(k_gpu_vendors, opts, specs, n_specs, out);
}

cov_status cov_gpu_run_model(const cov_gpu_options *opts, const char *path, double tolerance,
                             cov_gpu_inputs_fn inputs, void *user, FILE *out) {
  return gpu_run_model(k_gpu_vendors, opts, path, tolerance, inputs, user, out);
}
#endif
