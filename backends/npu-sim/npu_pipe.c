/* backends/npu-sim/npu_pipe.c: one model's layers pipelined across the
 * cores of an NPU for a stream of inputs (cov_npu_pipeline_model; README
 * "Layer pipelining").
 *
 * 1. The model runs alone on all C cores, layer by layer (every layer
 *    spread over them): the schedule the pipeline is compared with.
 * 2. It runs on the design of one core, checked against the reference as
 *    a model run is, its programs recorded (npu_tape) with their cycles.
 * 3. The programs, in order, are cut into S = min(C, programs) stages of
 *    consecutive programs, the cut whose largest stage (its programs'
 *    cycles summed) is least; stage s runs on core s.
 * 4. The stream: stage s runs its programs for input b once stage s - 1
 *    has finished input b and stage s has finished input b - 1, every
 *    stage on one DRAM interface (npu_cosim_jobs). The inputs of the
 *    stream are the one input given, B times (the timing does not depend
 *    on the values; each program's results are checked against its run
 *    alone as in a co-scheduled run). */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "backends/npu-sim/npu_report.h"
#include "common/loc.h"
#include "covenant/model.h"

struct cov_npu_pipeline {
  char target[128];
  uint32_t cores, stages, stream;
  size_t first[NPU_MAX_CORES + 1]; /* stage s: programs [first[s], first[s + 1]) */
  uint64_t stage_cycles[NPU_MAX_CORES];
  uint64_t layer_by_layer, one_core, makespan, first_latency;
  cov_npu_report *rep; /* the run on one core */
};

/* The cut of t[0..n) into S consecutive parts whose largest sum is least
 * (first[0..S]; the first such cut). */
static cov_status cut(const uint64_t *t, size_t n, uint32_t S, size_t *first) {
  uint64_t *best = malloc((S + 1) * (n + 1) * sizeof *best), *pre = malloc((n + 1) * sizeof *pre);
  size_t *arg = malloc((S + 1) * (n + 1) * sizeof *arg);
  if (!best || !pre || !arg) {
    free(best), free(pre), free(arg);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "the pipeline's stages");
  }
  pre[0] = 0;
  for (size_t i = 0; i < n; i++) pre[i + 1] = pre[i] + t[i];
#define B(s, i) best[(size_t)(s) * (n + 1) + (i)]
  for (size_t i = 0; i <= n; i++) B(1, i) = pre[i], arg[(n + 1) + i] = 0;
  for (uint32_t s = 2; s <= S; s++)
    for (size_t i = s; i <= n; i++) { /* the first i programs in s stages: the last stage [j, i) */
      B(s, i) = UINT64_MAX;
      for (size_t j = s - 1; j < i; j++) {
        uint64_t v = B(s - 1, j) > pre[i] - pre[j] ? B(s - 1, j) : pre[i] - pre[j];
        if (v < B(s, i)) B(s, i) = v, arg[(size_t)s * (n + 1) + i] = j;
      }
    }
#undef B
  first[S] = n;
  for (uint32_t s = S; s >= 1; s--) first[s - 1] = s == 1 ? 0 : arg[(size_t)s * (n + 1) + first[s]];
  free(best), free(pre), free(arg);
  return NULL;
}

/* Step 4: the stream through the stages. */
static cov_status stream(cov_npu_pipeline *r, const npu_tape *tape, const cov_acg *one) {
  uint32_t S = r->stages, B = r->stream;
  npu_cotenant ts[NPU_MAX_CORES];
  size_t total = (size_t)B * tape->n;
  npu_cojob *jobs = calloc(total, sizeof *jobs);
  uint64_t *done = calloc(total, sizeof *done);
  cov_status st = jobs && done ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "the pipeline's jobs");
  for (uint32_t s = 0, k = 0; !st && s < S; s++) {
    size_t len = r->first[s + 1] - r->first[s], prev = s ? r->first[s] - r->first[s - 1] : 0;
    ts[s] = (npu_cotenant){.acg = one, .jobs = jobs + k, .n = (size_t)B * len, .done_at = done + k};
    for (uint32_t b = 0; b < B; b++)
      for (size_t j = 0; j < len; j++, k++) {
        jobs[k] = (npu_cojob){.e = &tape->e[r->first[s] + j], .dep_tenant = -1};
        if (s && j == 0) jobs[k].dep_tenant = (int)s - 1, jobs[k].dep_job = (size_t)b * prev + prev - 1;
      }
  }
  if (!st) st = npu_cosim_jobs(ts, S);
  for (uint32_t s = 0; !st && s < S; s++)
    if (ts[s].done_at[ts[s].n - 1] > r->makespan) r->makespan = ts[s].done_at[ts[s].n - 1];
  if (!st) r->first_latency = ts[S - 1].done_at[r->first[S] - r->first[S - 1] - 1];
  free(jobs);
  free(done);
  return st;
}

static cov_status pipeline_steps(cov_npu_pipeline *r, const cov_model *m, const cov_acg *acg, const cov_acg *one,
                                 const cov_npu_corun_io *io, npu_tape *tape) {
  cov_tensor *tmp = calloc(io->n_outputs ? io->n_outputs : 1, sizeof *tmp);
  if (!tmp) return cov_error(COV_OUT_OF_MEMORY, NULL, "outputs");
  cov_npu_report *all = NULL;
  cov_status st = npu_run_model_rec(m, acg, io->inputs, io->n_inputs, tmp, io->n_outputs, NULL, NULL, &all);
  for (size_t i = 0; i < io->n_outputs; i++) cov_tensor_release(&tmp[i]);
  free(tmp);
  if (!st) r->layer_by_layer = cov_npu_report_cycles(all);
  cov_npu_report_free(all);
  COV_RETURN_IF_ERROR(st);
  npu_model_rec rec = {.tape = tape};
  COV_RETURN_IF_ERROR(npu_run_model_rec(m, one, io->inputs, io->n_inputs, io->outputs, io->n_outputs, NULL, &rec,
                                        &r->rep));
  r->one_core = cov_npu_report_cycles(r->rep);
  if (!tape->n) return cov_error(COV_UNSUPPORTED, COV_AT(NULL, r->target), "the model runs no program on the NPU");
  r->stages = tape->n < r->cores ? (uint32_t)tape->n : r->cores;
  uint64_t *t = malloc(tape->n * sizeof *t);
  if (!t) return cov_error(COV_OUT_OF_MEMORY, NULL, "the pipeline's stages");
  for (size_t i = 0; i < tape->n; i++) t[i] = tape->e[i].cycles;
  st = cut(t, tape->n, r->stages, r->first);
  for (uint32_t s = 0; !st && s < r->stages; s++)
    for (size_t i = r->first[s]; i < r->first[s + 1]; i++) r->stage_cycles[s] += t[i];
  free(t);
  return st ? st : stream(r, tape, one);
}

cov_status cov_npu_pipeline_model(const cov_model *m, const cov_acg *acg, const cov_npu_corun_io *io,
                                  uint32_t n_stream, cov_npu_pipeline **out) {
  *out = NULL;
  if (!m || !acg || !io || n_stream < 1 || n_stream > COV_NPU_PIPELINE_MAX_STREAM)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_pipeline_model"),
                     "a model, an ACG, its inputs and a stream of 1 to %d inputs (got %u)",
                     COV_NPU_PIPELINE_MAX_STREAM, n_stream);
  npu_target t;
  COV_RETURN_IF_ERROR(npu_target_init(acg, &t));
  if (t.cores < 2)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, acg->name),
                     "pipelining takes an NPU of several cores; %s has one", acg->name);
  cov_npu_pipeline *r = calloc(1, sizeof *r);
  if (!r) return cov_error(COV_OUT_OF_MEMORY, NULL, "the pipeline's report");
  snprintf(r->target, sizeof r->target, "%s", acg->name);
  r->cores = t.cores, r->stream = n_stream;
  cov_acg *one = NULL;
  npu_tape tape = {0};
  cov_status st = npu_acg_with_cores(acg, t.cores, 1, &one);
  if (!st) st = pipeline_steps(r, m, acg, one, io, &tape);
  npu_tape_clear(&tape);
  cov_acg_free(one);
  if (st) {
    for (size_t i = 0; r->rep && i < io->n_outputs; i++) cov_tensor_release(&io->outputs[i]);
    cov_npu_pipeline_free(r);
    return st;
  }
  *out = r;
  return NULL;
}

void cov_npu_pipeline_free(cov_npu_pipeline *r) {
  if (!r) return;
  cov_npu_report_free(r->rep);
  free(r);
}

const cov_npu_report *cov_npu_pipeline_report(const cov_npu_pipeline *r) { return r->rep; }
uint64_t cov_npu_pipeline_makespan(const cov_npu_pipeline *r) { return r->makespan; }
uint64_t cov_npu_pipeline_layer_by_layer(const cov_npu_pipeline *r) { return r->layer_by_layer; }
double cov_npu_pipeline_throughput(const cov_npu_pipeline *r) {
  return r->makespan ? 1e6 * r->stream / (double)r->makespan : 0;
}
double cov_npu_pipeline_layer_by_layer_throughput(const cov_npu_pipeline *r) {
  return r->layer_by_layer ? 1e6 / (double)r->layer_by_layer : 0;
}

void cov_npu_pipeline_print(const cov_npu_pipeline *r, FILE *out) {
  fprintf(out, "pipelined on %s: %u stages of one core each, a stream of %u inputs, one DRAM interface\n",
          r->target, r->stages, r->stream);
  fprintf(out, "  %5s %9s %20s\n", "stage", "programs", "cycles (one input)");
  for (uint32_t s = 0; s < r->stages; s++)
    fprintf(out, "  %5u %4zu..%-3zu %20llu\n", s, r->first[s], r->first[s + 1] - 1,
            (unsigned long long)r->stage_cycles[s]);
  fprintf(out,
          "  (consecutive programs of the model on one core, cut so that the largest stage is least; %llu cycles "
          "in all)\n",
          (unsigned long long)r->one_core);
  fprintf(out, "pipelined: %u inputs in %llu cycles, %.3f inferences per Mcycle; the first input's latency %llu\n",
          r->stream, (unsigned long long)r->makespan, cov_npu_pipeline_throughput(r),
          (unsigned long long)r->first_latency);
  if (r->stream > 1)
    fprintf(out, "  steady state: an output every %.0f cycles (after the first)\n",
            (double)(r->makespan - r->first_latency) / (r->stream - 1));
  fprintf(out, "layer by layer, every layer on all %u cores: %llu cycles per input, %.3f inferences per Mcycle\n",
          r->cores, (unsigned long long)r->layer_by_layer, cov_npu_pipeline_layer_by_layer_throughput(r));
  double a = cov_npu_pipeline_layer_by_layer_throughput(r);
  fprintf(out, "throughput ratio (pipelined / layer by layer): %.3fx\n",
          a > 0 ? cov_npu_pipeline_throughput(r) / a : 0);
}
