/* backends/registry/backend_registry.c: the table of backends (one row of
 * entry points each, backend_registry.h), opening targets, and the public
 * cov_gpu_* entry points, which hand the shared GPU code its vendors
 * (backends/gpu/gpu_vendor.h). */
#include "backends/registry/backend_registry.h"
#include "backends/registry/backend_rows.h"
#include "common/loc.h"

#include <stdio.h>
#include <string.h>

#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/amdgpu/amdgpu_vendor.h"
#include "backends/nvptx/nvptx_vendor.h"
#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_tune.h"
#include "covenant/gpu.h"
#endif

#ifdef COV_HAVE_GPU_BACKENDS
static const gpu_vendor *const k_gpu_vendors[] = {&amdgpu_vendor, &nvptx_vendor, NULL};

/* The entries the two GPU rows share: everything but the vendor. */
#define GPU_ROW                                                                                                \
  .kind = "GPU", .ops = BACKEND_MAP | BACKEND_COMPILE | BACKEND_RUN,                                          \
  .options = BACKEND_OPT_DTYPE | BACKEND_OPT_REPORT | BACKEND_OPT_UNFUSED | BACKEND_OPT_CODE_OBJECT |          \
             BACKEND_OPT_TUNING | BACKEND_OPT_SHAPE | BACKEND_OPT_PRECISION,                                                           \
  .check_with = "gpu run", .compile_layers = backend_gpu_compile_layers,                                       \
  .compile_model = backend_gpu_compile_model, .run_model = backend_gpu_run_model,                              \
  .run_layers = backend_gpu_run_layers, .check_model = backend_gpu_check_model,                                \
  .map_layer = backend_gpu_map_layer, .map_candidates = backend_gpu_map_candidates,                            \
  .tune_prepare = backend_gpu_tune_prepare, .op_support = backend_gpu_op_support
#endif

static const backend_info k_backends[] = {
    {.name = "npu-sim",
     .summary = "the NPU instruction set (backends/npu-sim/ISA.md), simulated cycle by cycle",
     .kind = "NPU",
     .ops = BACKEND_MAP | BACKEND_COMPILE | BACKEND_RUN | BACKEND_VERIFY,
     .options = BACKEND_OPT_SCALE | BACKEND_OPT_TRACE | BACKEND_OPT_SHAPE,
     .max_layers = 1,
     .compile_layers = backend_npu_compile_layers,
     .compile_model = backend_npu_compile_model,
     .run_model = backend_npu_run_model,
     .run_models = backend_npu_run_models,
     .report_summary = backend_npu_report_summary,
     .report_check = backend_npu_report_check,
     .report_narrowed_bits = backend_npu_report_narrowed_bits,
     .report_details = backend_npu_report_details,
     .report_times = backend_npu_report_times,
     .report_free = backend_npu_report_free,
     .report_json = backend_npu_report_json,
     .op_support = backend_npu_op_support,
     .open_layer = backend_npu_open_layer,
     .run_layer = backend_npu_run_layer,
     .close_layer = backend_npu_close_layer,
     .program_open = backend_npu_program_open,
     .program_acg = backend_npu_program_acg,
     .program_disasm = backend_npu_program_disasm,
     .program_sim = backend_npu_program_sim,
     .program_sim_report = backend_npu_program_sim_report,
     .program_close = backend_npu_program_close,
     .simulator = &backend_npu_simulator},
#ifdef COV_HAVE_GPU_BACKENDS
    {.name = "amdgpu", .summary = "AMD GPUs: HSACO through LLVM, run through HIP", GPU_ROW, .gpu = &amdgpu_vendor},
    {.name = "nvptx",
     .summary = "NVIDIA GPUs: PTX through LLVM, run through the CUDA driver",
     GPU_ROW,
     .gpu = &nvptx_vendor},
#endif
    {.name = BACKEND_REF,
     .summary = "the CPU reference interpreter (codelets), the oracle of every backend",
     .kind = "CPU",
     .ops = BACKEND_RUN | BACKEND_ORACLE,
     .run_model = backend_ref_run_model},
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
    out->name = BACKEND_REF;
    return NULL;
  }
  out->name = BACKEND_REF;
  COV_RETURN_IF_ERROR(backend_acg_load(name, &out->acg));
  out->name = cov_acg_name(out->acg);
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
  t->name = NULL;
}

cov_status backend_lacks(const backend_target *t, const char *what, const char *entry) {
  const backend_info *b = t->backend;
  const char *a = strchr("AEFHILMNORSX", b->kind[0]) ? "an" : "a"; /* as the letter is spoken */
  if (b->check_with)
    return cov_error(COV_UNSUPPORTED, COV_AT_CALL(what), "%s is %s %s target (backend %s), which does not %s; "
                     "'covenant %s' checks its code", t->name, a, b->kind, b->name, entry, b->check_with);
  return cov_error(COV_UNSUPPORTED, COV_AT_CALL(what), "%s is %s %s target (backend %s), which does not %s", t->name, a,
                   b->kind, b->name, entry);
}

const char *backend_option_names(unsigned bits, char *buf, size_t n) {
  static const char *const names[] = {"--scale",       "--dtype",  "--report",           "--allow-unfused",
                                      "--code-object", "--tuning", "--trace and --per-call", "--shape",
                                      "--precision"};
  int count = 0, total = 0;
  for (unsigned b = bits; b; b &= b - 1) total++;
  if (n) buf[0] = '\0';
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
    if (!(bits & (1u << i))) continue;
    size_t len = strlen(buf);
    const char *sep = !count ? "" : count == total - 1 ? " and " : ", ";
    snprintf(buf + len, n - len, "%s%s", sep, names[i]);
    count++;
  }
  return buf;
}

cov_status backend_program_open(const char *path, const char *target, const char *what, const backend_info **row,
                                backend_program **out) {
  *row = NULL;
  *out = NULL;
  backend_target t;
  cov_status st = target ? backend_target_open(target, &t) : NULL;
  if (target && !st) {
    st = t.backend->program_open ? NULL : backend_lacks(&t, what, "read program files");
    const backend_info *b = t.backend;
    backend_target_close(&t);
    if (st) return st;
    *row = b;
    return b->program_open(path, out);
  }
  /* a target that does not open is the row's to report, when it loads the
   * program's ACG (program_acg), after the program itself */
  cov_status_free(st);
  cov_status first = NULL;
  for (int i = 0; i < N_BACKENDS; i++) {
    const backend_info *b = &k_backends[i];
    if (!b->program_open) continue;
    st = b->program_open(path, out);
    if (!st) {
      cov_status_free(first);
      *row = b;
      return NULL;
    }
    if (first) cov_status_free(st);
    else first = st;
  }
  if (first) return first;
  return cov_error(COV_UNSUPPORTED, COV_AT_CALL(what), "this covenant has no backend that reads program files");
}

cov_status backend_tune_record(const char *times, const char *out, FILE *msg) {
#ifdef COV_HAVE_GPU_BACKENDS
  return gpu_tune_record(times, out, msg);
#else
  (void)out, (void)msg;
  cov_loc loc = {times, 0, 0, NULL};
  return cov_error(COV_UNSUPPORTED, &loc, "this covenant was built without the GPU backends (LLVM), "
                   "whose kernels tuning times");
#endif
}

#ifdef COV_HAVE_GPU_BACKENDS
gpu_vendors backend_gpu_vendors(void) { return k_gpu_vendors; }

/* The public GPU entry points open their target by name in the shared GPU
 * code; its backend section is checked here first, as backend_target_open
 * does (a missing target is the GPU code's to report). */
static cov_status check_gpu_target(const cov_gpu_options *opts) {
  if (!opts || !opts->target) return NULL;
  cov_acg *g = NULL;
  cov_status st = backend_acg_load(opts->target, &g);
  cov_acg_free(g);
  return st;
}

cov_status cov_gpu_compile(const cov_gpu_options *opts, const char *const *specs, int n_specs,
                           const char *out_dir, FILE *report) {
  COV_RETURN_IF_ERROR(check_gpu_target(opts));
  return gpu_compile(k_gpu_vendors, opts, specs, n_specs, out_dir, report);
}

cov_status cov_gpu_compile_model(const cov_gpu_options *opts, const char *model_path, const char *out_path) {
  COV_RETURN_IF_ERROR(check_gpu_target(opts));
  return gpu_compile_artifact(k_gpu_vendors, opts, model_path, out_path);
}

cov_status cov_gpu_run(const cov_gpu_options *opts, const char *const *specs, int n_specs, FILE *out) {
  COV_RETURN_IF_ERROR(check_gpu_target(opts));
  return gpu_run(k_gpu_vendors, opts, specs, n_specs, out);
}

cov_status cov_gpu_run_model(const cov_gpu_options *opts, const char *path, double tolerance,
                             cov_gpu_inputs_fn inputs, void *user, FILE *out) {
  COV_RETURN_IF_ERROR(check_gpu_target(opts));
  return gpu_run_model(k_gpu_vendors, opts, path, tolerance, inputs, user, out);
}
#endif
