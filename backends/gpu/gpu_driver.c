/* backends/gpu/gpu_driver.c: cov_gpu_compile: specs -> plans -> kernels ->
 * code objects + manifest.json (+ the --report table).
 *
 * An ACG's backend.name picks the vendor (backends/gpu/gpu_vendor.h: its
 * target operations and emitter) from the list the registry passes in.
 *
 * long: gpu_compile compiles each requested layer, writes its code object and manifest entry and the report row, per layer in one loop
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_attn.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_layer.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_model.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/gpu/gpu_vendor.h"
#include "common/fileio.h"
#include "common/json_write.h"
#include "covenant/acg.h"
#include "covenant/gpu.h"
#include "covenant/mapper.h"

/* Roofline: the larger of matrix (or FMA) time at peak and DRAM time. */
static double roofline_us(const gpu_target *t, const gpu_plan *p) {
  const cov_acg *a = t->acg;
  double macs = (double)p->G * (double)p->M * (double)p->N * (double)p->K, rate = 0;
  for (int c = 0; c < a->n_compute; c++) {
    const acg_compute *u = &a->compute[c];
    for (int j = 0; j < u->n_caps; j++) {
      const acg_capability *cap = &u->caps[j];
      if (cap->op != COV_OP_MAC || cap->in[0] != p->prob.in_dtype) continue;
      int is_tile = cap->tile_rank == 3 && (int)cap->tile[0] == p->fm && (int)cap->tile[1] == p->fn &&
                    (int)cap->tile[2] == p->fk;
      /* warpgroup MMAs run on the same matrix units as the listed tiles */
      if ((p->matrix && u->kind == ACG_MATRIX && (is_tile || (p->wgmma && cap->tile_rank == 3))) ||
          (!p->matrix && u->kind == ACG_SIMD)) {
        double r = cap->throughput * u->instances;
        if (r > rate) rate = r;
      }
    }
  }
  if (!p->matrix && rate == 0) /* f16 on the vector unit: widened to f32 */
    for (int c = 0; c < a->n_compute; c++)
      for (int j = 0; j < a->compute[c].n_caps; j++)
        if (a->compute[c].kind == ACG_SIMD && a->compute[c].caps[j].op == COV_OP_MAC)
          rate = fmax(rate, a->compute[c].caps[j].throughput * a->compute[c].instances);
  const gpu_problem *q = &p->prob;
  double es = (double)cov_dtype_size(q->in_dtype), bytes;
  if (q->kind == GPU_OP_MAXPOOL)
    bytes = es * (double)(q->cn * q->cc * q->ch * q->cw) + 4.0 * (double)p->M;
  else if (q->kind == GPU_OP_MATMUL)
    bytes = es * (double)p->G * (double)(p->M * p->K + p->K * p->N) + 4.0 * (double)p->G * (double)(p->M * p->N);
  else
    bytes = es * (double)(q->cn * q->cc * q->ch * q->cw + q->ck * p->K) +
            (p->out_f16 ? 2.0 : 4.0) * (double)(q->cn * q->ck * p->oh * p->ow) / (q->epi.maxpool2x2 ? 4.0 : 1.0);
  double hz = a->clock_mhz * 1e6, bw = acg_dram_bandwidth(a);
  double t_compute = rate > 0 ? macs / (rate * hz) : INFINITY, t_mem = bw > 0 ? bytes / (bw * hz) : 0;
  return 1e6 * fmax(t_compute, t_mem);
}

typedef struct report_row {
  char kernel[128], view[64], vg[16], ag[16], occ[32], plan[256];
  unsigned shared;
  double roofline;
} report_row;

static void print_report(FILE *f, const report_row *rows, int n) {
  int wk = 6, wv = 9;
  for (int i = 0; i < n; i++) {
    if ((int)strlen(rows[i].kernel) > wk) wk = (int)strlen(rows[i].kernel);
    if ((int)strlen(rows[i].view) > wv) wv = (int)strlen(rows[i].view);
  }
  fprintf(f, "%-*s %-*s %10s %6s %6s %9s %12s  %s\n", wk, "kernel", wv, "GEMM-view", "shared B", "VGPR",
          "AGPR", "occupancy", "roofline us", "plan");
  for (int i = 0; i < n; i++)
    fprintf(f, "%-*s %-*s %10u %6s %6s %9s %12.2f  %s\n", wk, rows[i].kernel, wv, rows[i].view,
            rows[i].shared, rows[i].vg, rows[i].ag, rows[i].occ, rows[i].roofline, rows[i].plan);
}

/* A kernel whose schedule came from the tuning file says so: in its
 * manifest entry ("tuned": the schedule) and in the notes. */
static void note_tuned(const gpu_target *t, const cov_gpu_options *opts, const gpu_plan *plan, int hand_fixed,
                       const char *kernel, json_t *k) {
  if (!t->tuning || hand_fixed || plan->prob.kind == GPU_OP_MAXPOOL) return;
  char key[GPU_TUNE_KEY_MAX];
  gpu_tune_key(&plan->prob, cov_acg_name(t->acg), key, sizeof key);
  const gpu_tune_entry *e = gpu_tuning_find(t->tuning, key);
  if (!e) return;
  json_object_set_new(k, "tuned", json_string(e->schedule));
  if (opts->notes) fprintf(opts->notes, "note: %s: schedule %s from the tuning file %s\n", kernel, e->schedule, t->tuning->file);
}

cov_status gpu_compile(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                       const char *out_dir, FILE *report) {
  gpu_target t;
  cov_dtype dt = opts->dtype ? opts->dtype : COV_F16;
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, opts->target, dt, &t));
  cov_status st = gpu_tuning_attach(&t, opts);
  t.f16_operands = opts->f16_operands;
  if (!st) st = gpu_mkdir_p(out_dir);
  size_t len0 = n_specs == 1 ? strlen(specs[0]) : 0;
  if (!st && len0 > 5 && !strcmp(specs[0] + len0 - 5, ".onnx")) {
    /* a whole model: its kernels, buffers, launch sequence and manifest
     * (gpu_mplan.h) */
    cov_model *m = NULL;
    gpu_model_plan mp;
    cov_model_options mo = {.shapes = opts->shapes, .n_shapes = opts->n_shapes};
    cov_model *wide = NULL;
    st = cov_model_load_file(specs[0], &mo, &m);
    if (!st) st = gpu_widened(m, specs[0], &wide);
    if (!st) st = gpu_model_compile_with(wide ? wide : m, specs[0], &t, 1, &mp);
    cov_model_free(wide);
    if (!st) {
      st = gpu_model_plan_write(&mp, specs[0], out_dir, report);
      /* the same plan as one artifact for covenant-run (OUT/model.covart) */
      char art[4096];
      snprintf(art, sizeof art, "%s/model.covart", out_dir);
      if (!st) st = gpu_model_artifact_write(&mp, specs[0], art);
      gpu_model_plan_free(&mp);
    }
    cov_model_free(m);
    gpu_target_close(&t);
    return st;
  }
  int jit = t.vendor->jit_registers;
  json_t *man = json_object(), *kernels = json_array();
  json_object_set_new(man, "target", json_string(cov_acg_name(t.acg)));
  json_object_set_new(man, "mcpu", json_string(t.acg->backend.mcpu));
  json_object_set_new(man, "kernels", kernels);
  /* The report's rows, printed at the end with columns as wide as their
   * longest entry (model kernels have long names, big GEMM views). */
  report_row *rows = NULL;
  int n_rows = 0;
  int spec_i = 0;
  while (!st && spec_i < n_specs) {
    gpu_layer layer;
    gpu_plan plan;
    char *code = NULL;
    size_t n = 0;
    gpu_kernel_info info;
    const char *spec = specs[spec_i++];
    size_t len = strlen(spec);
    if (len > 5 && !strcmp(spec + len - 5, ".onnx")) {
      st = cov_error(COV_INVALID_ARGUMENT, GPU_LOC(spec, NULL),
                     "a model is compiled alone (it writes its own manifest); give it without other layers");
      break;
    }
    if (gpu_attn_is_spec(spec)) { /* fused attention (gpu_attn.h): its own kernel and entry */
      json_t *e = NULL;
      st = gpu_attn_compile(&t, opts, spec, out_dir, &e);
      if (!st) json_array_append_new(kernels, e);
      continue;
    }
    int hand_fixed = strchr(spec, ':') != NULL;
    st = gpu_compile_one(&t, opts, spec, &layer, &plan, &code, &n, &info);
    if (st) break;
    json_t *k = NULL;
    char kname[128];
    st = gpu_write_kernel(&t, out_dir, layer.name, &plan, code, n, &k, kname);
    free(code);
    if (st) break;
    json_object_set_new(k, "unfused", json_string(layer.unfused));
    note_tuned(&t, opts, &plan, hand_fixed, kname, k);
    json_array_append_new(kernels, k);
    if (report) {
      /* occupancy: by the vendor's rule, from the workgroups per core that
       * shared memory allows */
      char occ[32];
      long wg = plan.shared_bytes ? (long)(t.caps.shared_bytes / plan.shared_bytes) : 0;
      t.vendor->occupancy(wg, &info, occ, sizeof occ);
      char view[32], vg[16], ag[16];
      snprintf(view, sizeof view, "%lldx%lldx%lld", (long long)plan.M, (long long)plan.N, (long long)plan.K);
      snprintf(vg, sizeof vg, "%ld", info.vgprs);
      snprintf(ag, sizeof ag, "%ld", info.agprs);
      report_row *more = realloc(rows, (size_t)(n_rows + 1) * sizeof *rows);
      if (!more) {
        st = cov_error(COV_OUT_OF_MEMORY, NULL, "report");
        break;
      }
      rows = more;
      report_row *r = &rows[n_rows++];
      snprintf(r->kernel, sizeof r->kernel, "%s", kname);
      snprintf(r->view, sizeof r->view, "%s", view);
      snprintf(r->vg, sizeof r->vg, "%s", jit ? "jit" : vg);
      snprintf(r->ag, sizeof r->ag, "%s", jit ? "-" : ag);
      snprintf(r->occ, sizeof r->occ, "%s", occ);
      snprintf(r->plan, sizeof r->plan, "%s", json_string_value(json_object_get(k, "plan")));
      r->shared = plan.shared_bytes;
      r->roofline = roofline_us(&t, &plan);
    }
  }
  if (report && n_rows) print_report(report, rows, n_rows);
  free(rows);
  if (!st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    st = common_write_json(path, man, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  }
  json_decref(man);
  gpu_target_close(&t);
  return st;
}
