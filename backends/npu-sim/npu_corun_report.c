/* backends/npu-sim/npu_corun_report.c: what a co-scheduled run reports
 * (cov_npu_corun_print, cov_npu_corun_json): per model its cores, the
 * mapper's estimates that divided them, its cycles alone on its cores,
 * concurrently with the others and alone on all cores; the makespan and
 * the throughput against running the models one after the other. Numbers
 * only, no wall times, so the text is deterministic. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "covenant/npu.h"

void cov_npu_corun_print(const cov_npu_corun *r, FILE *out) {
  size_t n = cov_npu_corun_num_models(r);
  uint32_t C = 0;
  int w = 5;
  for (size_t i = 0; i < n; i++) {
    C += cov_npu_corun_cores(r, i);
    int k = (int)strlen(cov_npu_corun_name(r, i));
    w = k > w ? k : w;
  }
  uint32_t kmax = C - (uint32_t)n + 1;
  double est_co = 0, est_seq = 0;
  for (size_t i = 0; i < n; i++) {
    double e = cov_npu_corun_estimate(r, i, cov_npu_corun_cores(r, i));
    est_co = e > est_co ? e : est_co;
    est_seq += cov_npu_corun_estimate(r, i, C);
  }
  fprintf(out, "co-scheduled on %s: %zu models on %u cores, each on cores of its own, one DRAM interface\n",
          cov_npu_corun_target(r), n, C);
  fprintf(out, "  %-*s %5s", w, "model", "cores");
  for (uint32_t k = 1; k <= kmax; k++) fprintf(out, " %10s%-2u", "est. on ", k);
  fprintf(out, " %10s%-2u", "est. on ", C);
  fprintf(out, " %12s %12s %12s %12s\n", "alone", "concurrent", "slowdown", "on all cores");
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "  %-*s %5u", w, cov_npu_corun_name(r, i), cov_npu_corun_cores(r, i));
    for (uint32_t k = 1; k <= kmax; k++) fprintf(out, " %12.0f", cov_npu_corun_estimate(r, i, k));
    fprintf(out, " %12.0f", cov_npu_corun_estimate(r, i, C));
    uint64_t a = cov_npu_corun_alone_cycles(r, i), l = cov_npu_corun_latency(r, i);
    fprintf(out, " %12llu %12llu %11.3fx %12llu\n", (unsigned long long)a, (unsigned long long)l,
            a ? (double)l / (double)a : 0.0, (unsigned long long)cov_npu_corun_all_cores_cycles(r, i));
  }
  uint64_t mk = cov_npu_corun_makespan(r), sq = cov_npu_corun_sequential_cycles(r);
  fprintf(out,
          "  (cycles; 'est. on k': the mapper's estimate on k cores, which divided them: the least largest "
          "estimate; 'alone': on its cores with the others idle; 'concurrent': its latency beside the others)\n");
  fprintf(out,
          "the mapper's estimates: concurrent %.0f cycles (the largest on its cores), one after the other %.0f "
          "(%.3fx)\n",
          est_co, est_seq, est_co > 0 ? est_seq / est_co : 0.0);
  fprintf(out, "concurrent: %llu cycles, %.3f inferences per Mcycle\n", (unsigned long long)mk,
          cov_npu_corun_throughput(r));
  fprintf(out, "one after the other, each on all %u cores: %llu cycles, %.3f inferences per Mcycle\n", C,
          (unsigned long long)sq, cov_npu_corun_sequential_throughput(r));
  fprintf(out, "throughput ratio (concurrent / one after the other): %.3fx\n",
          mk ? (double)sq / (double)mk : 0.0);
  fprintf(out,
          "weighted speed-up (sum over models of cycles on all cores / latency; each model a stream of its own "
          "inputs): %.3f\n",
          cov_npu_corun_weighted_speedup(r));
}

static json_t *model_json(const cov_npu_corun *r, size_t i, const char *name, uint32_t kmax) {
  json_t *m = json_object(), *est = json_object();
  json_object_set_new(m, "name", json_string(name));
  json_object_set_new(m, "cores", json_integer(cov_npu_corun_cores(r, i)));
  for (uint32_t k = 1; k <= kmax; k++) {
    char key[16];
    snprintf(key, sizeof key, "%u", k);
    double e = cov_npu_corun_estimate(r, i, k);
    json_object_set_new(est, key, e >= 0 ? json_real(e) : json_null());
  }
  json_object_set_new(m, "estimates", est);
  json_object_set_new(m, "alone_cycles", json_integer((json_int_t)cov_npu_corun_alone_cycles(r, i)));
  json_object_set_new(m, "latency_cycles", json_integer((json_int_t)cov_npu_corun_latency(r, i)));
  json_object_set_new(m, "all_cores_cycles", json_integer((json_int_t)cov_npu_corun_all_cores_cycles(r, i)));
  return m;
}

cov_status cov_npu_corun_json(const cov_npu_corun *r, char **out, size_t *size) {
  *out = NULL;
  size_t n = cov_npu_corun_num_models(r);
  uint32_t C = 0;
  for (size_t i = 0; i < n; i++) C += cov_npu_corun_cores(r, i);
  json_t *doc = json_object(), *models = json_array();
  json_object_set_new(doc, "cores", json_integer(C));
  json_object_set_new(doc, "target", json_string(cov_npu_corun_target(r)));
  for (size_t i = 0; i < n; i++)
    json_array_append_new(models, model_json(r, i, cov_npu_corun_name(r, i), C));
  json_object_set_new(doc, "models", models);
  uint64_t mk = cov_npu_corun_makespan(r), sq = cov_npu_corun_sequential_cycles(r);
  json_object_set_new(doc, "makespan_cycles", json_integer((json_int_t)mk));
  json_object_set_new(doc, "throughput_per_mcycle", json_real(cov_npu_corun_throughput(r)));
  json_object_set_new(doc, "sequential_cycles", json_integer((json_int_t)sq));
  json_object_set_new(doc, "sequential_throughput_per_mcycle", json_real(cov_npu_corun_sequential_throughput(r)));
  json_object_set_new(doc, "speedup", json_real(mk ? (double)sq / (double)mk : 0.0));
  json_object_set_new(doc, "weighted_speedup", json_real(cov_npu_corun_weighted_speedup(r)));
  char *text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(doc);
  if (!text) return cov_error(COV_OUT_OF_MEMORY, NULL, "the co-scheduling report's JSON");
  *out = text;
  if (size) *size = strlen(text);
  return NULL;
}
