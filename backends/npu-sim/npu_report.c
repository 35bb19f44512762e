/* backends/npu-sim/npu_report.c: the per-layer table of a whole-model run
 * on the NPU (`covenant run MODEL --target npu-*`): rows in execution order,
 * totals, and counts of fused groups and CPU calls. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_report.h"

struct cov_npu_report {
  npu_row *rows;
  int n, cap;
  double clock_mhz;
};

cov_status npu_report_create(double clock_mhz, cov_npu_report **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return cov_error(COV_OUT_OF_MEMORY, NULL, "report");
  (*out)->clock_mhz = clock_mhz;
  return NULL;
}

cov_status npu_report_add(cov_npu_report *r, const npu_row *row) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    npu_row *p = realloc(r->rows, (size_t)cap * sizeof *p);
    if (!p) return cov_error(COV_OUT_OF_MEMORY, NULL, "report");
    r->rows = p;
    r->cap = cap;
  }
  r->rows[r->n++] = *row;
  return NULL;
}

const npu_row *npu_report_rows(const cov_npu_report *r, int *n) {
  *n = r->n;
  return r->rows;
}

void cov_npu_report_free(cov_npu_report *r) {
  if (!r) return;
  free(r->rows);
  free(r);
}

uint64_t cov_npu_report_cycles(const cov_npu_report *r) {
  uint64_t c = 0;
  for (int i = 0; i < r->n; i++) c += r->rows[i].cycles;
  return c;
}

static int count(const cov_npu_report *r, npu_row_kind k) {
  int n = 0;
  for (int i = 0; i < r->n; i++) n += r->rows[i].kind == k;
  return n;
}

int cov_npu_report_cpu_calls(const cov_npu_report *r) { return count(r, NPU_ROW_CPU); }
int cov_npu_report_fused_groups(const cov_npu_report *r) { return count(r, NPU_ROW_GROUP); }

void cov_npu_report_print(const cov_npu_report *r, FILE *out) {
  fprintf(out, "%-5s %-20s %-30s %10s %10s %7s %7s %10s %10s  %s\n", "group", "node", "codelets",
          "cycles", "predicted", "array", "simd", "DRAM B", "on-chip B", "where");
  uint64_t tc = 0, tm = 0, td = 0, to = 0;
  for (int i = 0; i < r->n; i++) {
    const npu_row *w = &r->rows[i];
    if (w->kind != NPU_ROW_CPU)
      fprintf(out, "%-5d %-20s %-30s %10llu %10.0f %6.1f%% %6.1f%% %10llu %10llu  %s\n", w->group,
              w->node, w->codelet, (unsigned long long)w->cycles, w->predicted,
              100 * w->util_array, 100 * w->util_simd, (unsigned long long)w->dram_bytes,
              (unsigned long long)w->onchip_bytes, w->where);
    else
      fprintf(out, "%-5d %-20s %-30s %10s %10s %7s %7s %10s %10s  %s\n", w->group, w->node,
              w->codelet, "-", "-", "-", "-", "-", "-", w->where);
    tc += w->cycles;
    tm += w->macs;
    td += w->dram_bytes;
    to += w->onchip_bytes;
  }
  fprintf(out,
          "total: %llu cycles (%.3f us at %.0f MHz), %llu MACs on the array, %llu B DRAM, "
          "%llu B on-chip; %d rows: %d groups fused, %d calls one by one on the NPU, %d calls on "
          "the CPU\n",
          (unsigned long long)tc, (double)tc / r->clock_mhz, r->clock_mhz, (unsigned long long)tm,
          (unsigned long long)td, (unsigned long long)to, r->n, count(r, NPU_ROW_GROUP),
          count(r, NPU_ROW_CALL), count(r, NPU_ROW_CPU));
}
