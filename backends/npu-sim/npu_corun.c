/* backends/npu-sim/npu_corun.c: several models co-scheduled on one
 * multi-core NPU (cov_npu_corun_models; README "Co-scheduled models").
 *
 * 1. Each model runs alone on all the cores (layer by layer, every layer
 *    spread over them, as cov_npu_run_model runs it): the one-after-the-
 *    other baseline. Each layer it runs on the NPU is also mapped on the
 *    designs of 1 .. C - n + 1 cores (the ACG with that many instances of
 *    every per-core node), which gives the mapper's estimate of the model
 *    on each core count.
 * 2. The cores are divided: of every way to give each model at least one
 *    core and all C in all, the one whose largest estimate (the estimated
 *    makespan) is least, then whose sum is least, then the first.
 * 3. Each model runs alone on the design of its cores, checked against
 *    the reference as a model run is, its programs recorded (npu_tape).
 * 4. The recorded programs of all models run at once on one DRAM
 *    interface (npu_cosim.c): each model's latency there, the makespan.
 *
 * Throughput is inferences per million cycles: n / makespan against
 * n / (the sum of the models' cycles on all cores). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "backends/npu-sim/npu_report.h"
#include "common/loc.h"
#include "covenant/arena.h"
#include "covenant/model.h"

typedef struct corun_model {
  char name[128];
  uint32_t cores;
  double est[NPU_MAX_CORES + 1]; /* the mapper's estimate on k cores; -1: not mapped */
  uint64_t all_cores, alone, latency;
  size_t programs;
  cov_npu_report *rep; /* its run on its cores */
} corun_model;

struct cov_npu_corun {
  char target[128];
  uint32_t cores;
  size_t n;
  corun_model *m;
  uint64_t makespan, sequential;
};

/* The ACG of k cores: every compute node and on-chip buffer of the
 * target's C instances gets k (the nodes of one core, as explore's
 * instances rule brings them along). */
cov_status npu_acg_with_cores(const cov_acg *g, uint32_t C, uint32_t k, cov_acg **out) {
  *out = NULL;
  char *text = NULL;
  COV_RETURN_IF_ERROR(cov_acg_to_json(g, &text, NULL));
  json_t *doc = json_loads(text, 0, NULL);
  cov_free(text);
  if (!doc) return cov_error(COV_OUT_OF_MEMORY, COV_AT(NULL, g->name), "the ACG's JSON");
  static const char *const sections[] = {"compute", "storage"};
  for (int s = 0; s < 2; s++) {
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(doc, sections[s]), i, node) {
      if (json_integer_value(json_object_get(node, "instances")) == (json_int_t)C)
        json_object_set_new(node, "instances", json_integer((json_int_t)k));
    }
  }
  char name[160];
  snprintf(name, sizeof name, "%s-%uc", g->name, k);
  json_object_set_new(doc, "name", json_string(name));
  text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  if (!text) return cov_error(COV_OUT_OF_MEMORY, COV_AT(NULL, g->name), "the ACG's JSON");
  cov_status st = cov_acg_load_buffer(text, strlen(text), name, out);
  free(text);
  return st ? cov_status_annotate(st, "the design of %u of %s's cores: ", k, g->name) : NULL;
}

/* Co-scheduling needs cores that share nothing but DRAM. */
static cov_status check_target(const cov_acg *g, const npu_target *t, size_t n) {
  if (n < 2 || n > t->cores)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, g->name),
                     "%zu models on %u core%s: co-scheduling takes 2 models or more, at most one per core", n,
                     t->cores, t->cores == 1 ? "" : "s");
  for (int s = 0; s < g->n_storage; s++)
    if (s != t->dram && g->storage[s].kind != ACG_DRAM && g->storage[s].instances != t->cores)
      return cov_error(COV_UNSUPPORTED, COV_AT(NULL, g->storage[s].name),
                       "co-scheduling gives each model cores of their own; buffer '%s' has %d instances, not one "
                       "per core (%u)",
                       g->storage[s].name, (int)g->storage[s].instances, t->cores);
  for (int c = 0; c < g->n_compute; c++)
    if (g->compute[c].instances != t->cores)
      return cov_error(COV_UNSUPPORTED, COV_AT(NULL, g->compute[c].name),
                       "co-scheduling gives each model cores of their own; unit '%s' has %d instances, not one "
                       "per core (%u)",
                       g->compute[c].name, (int)g->compute[c].instances, t->cores);
  return NULL;
}

/* Every division of C cores among models i.. (each at least one), the
 * best into best[] (make: its estimated makespan, sum: its sum). */
static void divide(corun_model *m, size_t n, size_t i, uint32_t left, uint32_t *cur, uint32_t *best,
                   double make, double sum, double *best_make, double *best_sum) {
  if (i == n - 1) {
    double e = m[i].est[left];
    if (e < 0) return;
    if (e > make) make = e;
    sum += e;
    if (*best_make < 0 || make < *best_make || (make == *best_make && sum < *best_sum)) {
      cur[i] = left;
      memcpy(best, cur, n * sizeof *cur);
      *best_make = make, *best_sum = sum;
    }
    return;
  }
  for (uint32_t k = 1; k + (uint32_t)(n - 1 - i) <= left; k++) {
    if (m[i].est[k] < 0) continue;
    cur[i] = k;
    divide(m, n, i + 1, left - k, cur, best, m[i].est[k] > make ? m[i].est[k] : make, sum + m[i].est[k],
           best_make, best_sum);
  }
}

/* Step 1 for model i: alone on all C cores (the mapper's estimate of the
 * layers it ran there: est[C]), estimates on acgs[1..kmax]. */
static cov_status run_all_cores(const cov_model *m, const cov_acg *acg, const cov_acg *const *acgs, uint32_t C,
                                uint32_t kmax,
                                const cov_tensor *in, size_t ni, size_t no, corun_model *cm) {
  cov_tensor *out = calloc(no ? no : 1, sizeof *out);
  if (!out) return cov_error(COV_OUT_OF_MEMORY, NULL, "outputs");
  for (uint32_t k = 0; k <= NPU_MAX_CORES; k++) cm->est[k] = -1;
  for (uint32_t k = 1; k <= kmax; k++) cm->est[k] = 0;
  npu_model_rec rec = {.est = acgs + 1, .n_est = (int)kmax, .est_cycles = cm->est + 1};
  cov_npu_report *rep = NULL;
  cov_status st = npu_run_model_rec(m, acg, in, ni, out, no, NULL, &rec, &rep);
  if (!st) {
    cm->all_cores = cov_npu_report_cycles(rep);
    int nr = 0;
    const npu_row *rows = npu_report_rows(rep, &nr);
    cm->est[C] = 0;
    for (int i = 0; i < nr; i++)
      if (rows[i].kind != NPU_ROW_CPU) cm->est[C] += rows[i].predicted;
  }
  if (!st && cov_npu_report_narrowed_error(rep) > COV_NPU_NARROWED_TOLERANCE)
    st = cov_error(COV_INTERNAL, COV_AT(NULL, cm->name), "a program on all the cores does not match the reference");
  cov_npu_report_free(rep);
  for (size_t i = 0; i < no; i++) cov_tensor_release(&out[i]);
  free(out);
  return st ? cov_status_annotate(st, "%s alone on every core: ", cm->name) : NULL;
}

static cov_status corun_steps(cov_npu_corun *r, const cov_model *const *models, const cov_acg *const *acgs,
                              const cov_npu_corun_io *io, npu_tape *tapes) {
  uint32_t C = r->cores, kmax = C - (uint32_t)r->n + 1;
  for (size_t i = 0; i < r->n; i++)
    COV_RETURN_IF_ERROR(run_all_cores(models[i], acgs[C], acgs, C, kmax, io[i].inputs, io[i].n_inputs,
                                      io[i].n_outputs, &r->m[i]));
  uint32_t cur[NPU_MAX_CORES], best[NPU_MAX_CORES];
  double bm = -1, bs = -1;
  divide(r->m, r->n, 0, C, cur, best, 0, 0, &bm, &bs);
  if (bm < 0)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, r->target),
                     "no division of %u cores among %zu models: some layer maps on none of the smaller designs", C,
                     r->n);
  const cov_acg *sub[NPU_MAX_CORES];
  const npu_tape *tp[NPU_MAX_CORES];
  uint64_t lat[NPU_MAX_CORES];
  for (size_t i = 0; i < r->n; i++) {
    corun_model *cm = &r->m[i];
    cm->cores = best[i];
    sub[i] = acgs[best[i]];
    tp[i] = &tapes[i];
    npu_model_rec rec = {.tape = &tapes[i]};
    cov_status st = npu_run_model_rec(models[i], sub[i], io[i].inputs, io[i].n_inputs, io[i].outputs,
                                      io[i].n_outputs, NULL, &rec, &cm->rep);
    if (st) return cov_status_annotate(st, "%s on %u cores: ", cm->name, cm->cores);
    cm->alone = cov_npu_report_cycles(cm->rep);
    cm->programs = tapes[i].n;
  }
  COV_RETURN_IF_ERROR(npu_cosim(tp, sub, r->n, lat));
  for (size_t i = 0; i < r->n; i++) {
    r->m[i].latency = lat[i];
    if (lat[i] > r->makespan) r->makespan = lat[i];
    r->sequential += r->m[i].all_cores;
  }
  return NULL;
}

cov_status cov_npu_corun_models(const cov_model *const *models, const char *const *names, size_t n,
                                const cov_acg *acg, const cov_npu_corun_io *io, cov_npu_corun **out) {
  *out = NULL;
  if (!models || !io || !acg)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_corun_models"), "NULL models, io or ACG");
  npu_target t;
  COV_RETURN_IF_ERROR(npu_target_init(acg, &t));
  COV_RETURN_IF_ERROR(check_target(acg, &t, n));
  cov_npu_corun *r = calloc(1, sizeof *r);
  cov_acg *acgs[NPU_MAX_CORES + 1] = {0};
  npu_tape tapes[NPU_MAX_CORES] = {{0}};
  cov_status st = r ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "co-scheduling report");
  if (!st) {
    snprintf(r->target, sizeof r->target, "%s", acg->name);
    r->cores = t.cores, r->n = n;
    r->m = calloc(n, sizeof *r->m);
    if (!r->m) st = cov_error(COV_OUT_OF_MEMORY, NULL, "co-scheduling report");
  }
  for (size_t i = 0; !st && i < n; i++)
    snprintf(r->m[i].name, sizeof r->m[i].name, "%s", names && names[i] ? names[i] : "model");
  for (uint32_t k = 1; !st && k < t.cores; k++) st = npu_acg_with_cores(acg, t.cores, k, &acgs[k]);
  if (!st) {
    const cov_acg *use[NPU_MAX_CORES + 1] = {0};
    for (uint32_t k = 1; k < t.cores; k++) use[k] = acgs[k];
    use[t.cores] = acg;
    st = corun_steps(r, models, use, io, tapes);
  }
  for (size_t i = 0; i < n && i < NPU_MAX_CORES; i++) npu_tape_clear(&tapes[i]);
  for (uint32_t k = 0; k <= NPU_MAX_CORES; k++) cov_acg_free(acgs[k]);
  if (st) {
    cov_npu_corun_free(r);
    return st;
  }
  *out = r;
  return NULL;
}

void cov_npu_corun_free(cov_npu_corun *r) {
  if (!r) return;
  for (size_t i = 0; r->m && i < r->n; i++) cov_npu_report_free(r->m[i].rep);
  free(r->m);
  free(r);
}

size_t cov_npu_corun_num_models(const cov_npu_corun *r) { return r->n; }
const char *cov_npu_corun_target(const cov_npu_corun *r) { return r->target; }
const char *cov_npu_corun_name(const cov_npu_corun *r, size_t i) { return i < r->n ? r->m[i].name : ""; }
uint32_t cov_npu_corun_cores(const cov_npu_corun *r, size_t i) { return i < r->n ? r->m[i].cores : 0; }
uint64_t cov_npu_corun_latency(const cov_npu_corun *r, size_t i) { return i < r->n ? r->m[i].latency : 0; }
uint64_t cov_npu_corun_alone_cycles(const cov_npu_corun *r, size_t i) { return i < r->n ? r->m[i].alone : 0; }
uint64_t cov_npu_corun_all_cores_cycles(const cov_npu_corun *r, size_t i) {
  return i < r->n ? r->m[i].all_cores : 0;
}
double cov_npu_corun_estimate(const cov_npu_corun *r, size_t i, uint32_t k) {
  return i < r->n && k <= NPU_MAX_CORES ? r->m[i].est[k] : -1;
}
const cov_npu_report *cov_npu_corun_report(const cov_npu_corun *r, size_t i) { return i < r->n ? r->m[i].rep : NULL; }
uint64_t cov_npu_corun_makespan(const cov_npu_corun *r) { return r->makespan; }
uint64_t cov_npu_corun_sequential_cycles(const cov_npu_corun *r) { return r->sequential; }
double cov_npu_corun_throughput(const cov_npu_corun *r) {
  return r->makespan ? 1e6 * (double)r->n / (double)r->makespan : 0;
}
double cov_npu_corun_weighted_speedup(const cov_npu_corun *r) {
  double w = 0;
  for (size_t i = 0; i < r->n; i++)
    if (r->m[i].latency) w += (double)r->m[i].all_cores / (double)r->m[i].latency;
  return w;
}
double cov_npu_corun_sequential_throughput(const cov_npu_corun *r) {
  return r->sequential ? 1e6 * (double)r->n / (double)r->sequential : 0;
}
