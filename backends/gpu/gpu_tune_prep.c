/* backends/gpu/gpu_tune_prep.c: step 1 of measured tuning (gpu_tune.h):
 * the tuning artifact. For every distinct matrix or depthwise kernel (by
 * gpu_tune_key) of the suite layers or the model asked for: the compiler's
 * own pick and
 * the mapper's top N schedules, compiled as kernels into one directory
 * with manifest.json (launch, problem, plan: what `covenant gpu compile`
 * writes) and tune.json (which kernels are one key's candidates). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_layer.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_tune.h"
#include "common/json_write.h"
#include "covenant/acg.h"
#include "covenant/mapper.h"
#include "covenant/model.h"


enum { TUNE_MAX_GROUPS = 512 };

typedef struct tune_group {
  gpu_layer layer;
  char key[GPU_TUNE_KEY_MAX];
} tune_group;

/* Adds `layer` unless its key is there already. */
static void add_group(tune_group *g, int *n, const gpu_layer *layer, const char *target) {
  char key[GPU_TUNE_KEY_MAX];
  gpu_tune_key(&layer->prob, target, key, sizeof key);
  for (int i = 0; i < *n; i++)
    if (!strcmp(g[i].key, key)) return;
  if (*n == TUNE_MAX_GROUPS) return;
  g[*n].layer = *layer;
  snprintf(g[*n].key, sizeof g[*n].key, "%s", key);
  (*n)++;
}

/* The matrix and depthwise kernels of a model (GPU_KERNEL_MATRIX steps),
 * as layers named after their kernels. */
static cov_status model_groups(const gpu_target *t, const char *path, tune_group *g, int *n) {
  cov_model *m = NULL;
  gpu_model_plan mp;
  cov_model *wide = NULL; /* a 16-bit model: the kernels it compiles to in f32 */
  COV_RETURN_IF_ERROR(cov_model_load_file(path, NULL, &m));
  cov_status st = gpu_widened(m, path, &wide);
  if (!st) st = gpu_model_compile_with(wide ? wide : m, path, t, 0, &mp);
  cov_model_free(wide);
  cov_model_free(m);
  if (st) return st;
  for (int i = 0; i < mp.n_steps; i++) {
    const gpu_mstep *s = &mp.steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre) continue;
    gpu_layer l = {.prob = s->plan.prob, .group = s->group};
    const char *k = strncmp(s->kernel, "covenant_", 9) ? s->kernel : s->kernel + 9;
    snprintf(l.name, sizeof l.name, "tune_%.80s", k);
    snprintf(l.node, sizeof l.node, "%s", s->label);
    add_group(g, n, &l, cov_acg_name(t->acg));
  }
  gpu_model_plan_free(&mp);
  return NULL;
}

static cov_status spec_groups(const gpu_target *t, const cov_gpu_options *o, const char *const *specs, int n_specs,
                              tune_group *g, int *n, FILE *log) {
  char suite[4096];
  if (o->suite) snprintf(suite, sizeof suite, "%s", o->suite);
  else COV_RETURN_IF_ERROR(cov_suite_find(suite, sizeof suite));
  for (int i = 0; i < n_specs; i++) {
    gpu_layer l;
    COV_RETURN_IF_ERROR(gpu_layer_from_spec(suite, specs[i], o->dtype ? o->dtype : COV_F16, &l));
    if (l.prob.kind == GPU_OP_MAXPOOL) {
      if (log) fprintf(log, "%s: a pool has no schedule to tune: left out\n", specs[i]);
      continue;
    }
    add_group(g, n, &l, cov_acg_name(t->acg));
  }
  return NULL;
}

/* Compiles `layer` with schedule s (NULL: the compiler's pick), writes its
 * code object into dir and appends its manifest entry to kernels; *kernel
 * receives its name. */
static cov_status emit(const gpu_target *t, const cov_gpu_options *o, gpu_layer layer, const gpu_sched *s,
                       const char *dir, json_t *kernels, char kernel[128]) {
  gpu_plan plan;
  char *code = NULL;
  size_t n = 0;
  gpu_kernel_info info;
  if (s && s->kind == GPU_SCHED_DW) { /* named as `covenant gpu compile LAYER:dwP` names it */
    COV_RETURN_IF_ERROR(gpu_plan_scheduled(t, &layer.prob, s, &plan));
    size_t len = strlen(layer.name);
    snprintf(layer.name + len, sizeof layer.name - len, "_dw%d", s->s[0]);
    char kname[160];
    snprintf(kname, sizeof kname, "covenant_%s", layer.name);
    COV_RETURN_IF_ERROR(gpu_build_kernel(t, &plan, kname, o->code_object_version, &code, &n, &info));
  } else {
    COV_RETURN_IF_ERROR(gpu_compile_layer(t, o, &layer, s ? s->s : NULL, &plan, &code, &n, &info));
  }
  json_t *k = NULL;
  cov_status st = gpu_write_kernel(t, dir, layer.name, &plan, code, n, &k, kernel);
  free(code);
  if (!st) json_array_append_new(kernels, k);
  return st;
}

/* One key: the pick, then the candidates; its tune.json group. */
static cov_status emit_group(const gpu_target *t, const cov_gpu_options *o, const tune_group *g, int top,
                             const char *dir, json_t *kernels, json_t *groups, FILE *log) {
  gpu_tune_cand *c = malloc(sizeof *c * (size_t)top);
  if (!c) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int n = 0;
  char pick[128];
  cov_status st = gpu_tune_candidates(t, &g->layer.prob, top, c, &n);
  if (!st) st = emit(t, o, g->layer, NULL, dir, kernels, pick);
  json_t *grp = json_object(), *cands = json_array();
  json_object_set_new(grp, "key", json_string(g->key));
  json_object_set_new(grp, "layer", json_string(g->layer.name));
  if (g->layer.node[0]) json_object_set_new(grp, "node", json_string(g->layer.node));
  json_object_set_new(grp, "pick", json_string(pick));
  json_object_set_new(grp, "candidates", cands);
  json_array_append_new(groups, grp);
  for (int i = 0; !st && i < n; i++) {
    char kernel[128], sched[64];
    st = emit(t, o, g->layer, &c[i].sched, dir, kernels, kernel);
    if (st) break;
    gpu_sched_format(&c[i].sched, sched, sizeof sched);
    json_t *x = json_object();
    json_object_set_new(x, "schedule", json_string(sched));
    json_object_set_new(x, "kernel", json_string(kernel));
    json_object_set_new(x, "rank", json_integer(c[i].rank));
    json_object_set_new(x, "cycles", json_real(c[i].cycles));
    json_array_append_new(cands, x);
  }
  if (!st && log) fprintf(log, "%s: %s and %d candidate%s\n", g->key, pick, n, n == 1 ? "" : "s");
  free(c);
  return st ? cov_status_annotate(st, "%s: ", g->key) : NULL;
}

static cov_status write_json(json_t *j, const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return common_write_json(path, j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
}

cov_status gpu_tune_prepare(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                            int top, const char *out_dir, FILE *log) {
  gpu_target t;
  cov_gpu_options o = *opts;
  o.allow_unfused = 1; /* the matrix kernel is tuned; post-ops it does not fuse do not change it */
  o.tuning = NULL;     /* the pick is the compiler's own */
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, o.target, o.dtype ? o.dtype : COV_F16, &t));
  tune_group *g = calloc(TUNE_MAX_GROUPS, sizeof *g);
  int n = 0;
  cov_status st = g ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  size_t len0 = n_specs ? strlen(specs[0]) : 0;
  int model = len0 > 5 && !strcmp(specs[0] + len0 - 5, ".onnx");
  if (!st && model && n_specs != 1)
    st = cov_error(COV_INVALID_ARGUMENT, GPU_LOC(specs[0], NULL), "a model is tuned alone (not with other models or layers)");
  if (!st) st = model ? model_groups(&t, specs[0], g, &n) : spec_groups(&t, &o, specs, n_specs, g, &n, log);
  if (!st && !n) st = cov_error(COV_INVALID_ARGUMENT, GPU_LOC(specs[0], NULL), "nothing to tune: no matrix or depthwise kernel");
  if (!st) st = gpu_mkdir_p(out_dir);
  json_t *man = json_object(), *kernels = json_array(), *tune = json_object(), *groups = json_array();
  json_object_set_new(man, "target", json_string(cov_acg_name(t.acg)));
  json_object_set_new(man, "mcpu", json_string(t.acg->backend.mcpu));
  json_object_set_new(man, "kernels", kernels);
  json_object_set_new(tune, "covenant_tune", json_integer(1));
  json_object_set_new(tune, "target", json_string(cov_acg_name(t.acg)));
  if (model) json_object_set_new(tune, "model", json_string(specs[0]));
  json_object_set_new(tune, "top", json_integer(top));
  json_object_set_new(tune, "groups", groups);
  for (int i = 0; !st && i < n; i++) st = emit_group(&t, &o, &g[i], top, out_dir, kernels, groups, log);
  if (!st) st = write_json(man, out_dir, "manifest.json");
  if (!st) st = write_json(tune, out_dir, "tune.json");
  json_decref(man);
  json_decref(tune);
  free(g);
  gpu_target_close(&t);
  return st;
}
