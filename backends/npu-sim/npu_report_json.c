/* backends/npu-sim/npu_report_json.c: the whole-model run's report as data
 * (cov_npu_report_json): the rows of cov_npu_report_print and their totals
 * as one JSON document, for programs that read it (the Python package).
 * Jansson writes numbers locale-independently; members are in a fixed
 * order and wall times are left out, so the text is deterministic. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_report.h"
#include "common/loc.h"

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static const char *kind_name(npu_row_kind k) {
  return k == NPU_ROW_GROUP ? "group" : k == NPU_ROW_CALL ? "call" : "cpu";
}

/* A row run on the CPU has no cycles, estimate or bytes: nulls. */
static json_t *row_json(const npu_row *w) {
  bool sim = w->kind != NPU_ROW_CPU;
  double err = sim && w->cycles ? 100.0 * (w->predicted - (double)w->cycles) / (double)w->cycles : NAN;
  return json_pack("{s:s, s:i, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "kind",
                   kind_name(w->kind), "group", w->group, "node", w->node, "codelets", w->codelet, "cycles",
                   sim ? json_integer((json_int_t)w->cycles) : json_null(), "mapper_estimate",
                   sim ? num(w->predicted) : json_null(), "estimate_error_pct", num(err), "array_utilization",
                   sim ? num(w->util_array) : json_null(), "simd_utilization", sim ? num(w->util_simd) : json_null(),
                   "macs", json_integer((json_int_t)w->macs), "dram_bytes",
                   sim ? json_integer((json_int_t)w->dram_bytes) : json_null(), "onchip_bytes",
                   sim ? json_integer((json_int_t)w->onchip_bytes) : json_null(), "narrowed_error",
                   w->narrow_checked ? num(w->narrow_err) : json_null(), "where", w->where);
}

cov_status cov_npu_report_json(const cov_npu_report *r, char **out, size_t *size) {
  if (out) *out = NULL;
  if (size) *size = 0;
  if (!r || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_report_json"), "NULL report or out");
  int n = 0;
  const npu_row *rows = npu_report_rows(r, &n);
  json_t *a = json_array();
  for (int i = 0; a && i < n; i++) json_array_append_new(a, row_json(&rows[i]));
  json_t *doc = json_pack("{s:I, s:i, s:i, s:i, s:o}", "cycles", (json_int_t)cov_npu_report_cycles(r),
                          "fused_groups", cov_npu_report_fused_groups(r), "calls", cov_npu_report_calls(r),
                          "cpu_calls", cov_npu_report_cpu_calls(r), "rows", a ? a : json_null());
  char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) : NULL;
  json_decref(doc);
  if (!text) return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_npu_report_json"), "out of memory");
  *out = text;
  if (size) *size = strlen(text);
  return NULL;
}
