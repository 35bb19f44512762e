/* backends/npu-sim/npu_report.c: the per-layer table of a whole-model run
 * on the NPU (`covenant run MODEL --target npu-*`): rows in execution order,
 * totals, and counts of fused groups and CPU calls. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_report.h"

struct cov_npu_report {
  npu_row *rows;
  int n, cap;
  double clock_mhz;
  double compile_s, sim_s; /* wall time, not printed by the table (not deterministic) */
  int64_t model_macs;      /* -1: unknown */
};

void npu_report_set_model_macs(cov_npu_report *r, int64_t macs) { r->model_macs = macs; }

/* The share of the model's MACs the NPU ran and, where the CPU ran some,
 * why: the first CPU row with MACs gives the reason, with how many other
 * reasons the table lists. */
static void print_mac_share(const cov_npu_report *r, FILE *out) {
  int64_t on = 0, all = 0;
  double frac = cov_npu_report_npu_mac_fraction(r, &on, &all);
  if (frac < 0) return;
  fprintf(out, "MACs on the NPU: %lld of the model's %lld (%.1f%%), %lld on the CPU", (long long)on, (long long)all,
          100 * frac, (long long)(all - on));
  const char *first = NULL;
  int others = 0, calls = 0;
  for (int i = 0; i < r->n; i++) {
    const npu_row *w = &r->rows[i];
    if (w->kind != NPU_ROW_CPU || w->cpu_macs <= 0) continue;
    calls++;
    bool seen = first && strcmp(first, w->where) == 0;
    for (int j = 0; j < i && !seen && first; j++)
      seen = r->rows[j].kind == NPU_ROW_CPU && r->rows[j].cpu_macs > 0 && strcmp(r->rows[j].where, w->where) == 0;
    if (!first) first = w->where;
    else if (!seen) others++;
  }
  if (first) {
    fprintf(out, " in %d call%s, %s", calls, calls == 1 ? "" : "s", first);
    if (others) fprintf(out, " (and %d other reason%s, in the table)", others, others == 1 ? "" : "s");
  }
  fprintf(out, "\n");
}

double cov_npu_report_npu_mac_fraction(const cov_npu_report *r, int64_t *npu_macs, int64_t *model_macs) {
  int64_t cpu = 0;
  for (int i = 0; i < r->n; i++) cpu += r->rows[i].kind == NPU_ROW_CPU ? r->rows[i].cpu_macs : 0;
  if (npu_macs) *npu_macs = r->model_macs > cpu ? r->model_macs - cpu : 0;
  if (model_macs) *model_macs = r->model_macs;
  if (r->model_macs <= 0) return -1;
  return cpu >= r->model_macs ? 0 : 1 - (double)cpu / (double)r->model_macs;
}

cov_status npu_report_create(double clock_mhz, cov_npu_report **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return cov_error(COV_OUT_OF_MEMORY, NULL, "report");
  (*out)->clock_mhz = clock_mhz;
  (*out)->model_macs = -1;
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

void npu_report_add_time(cov_npu_report *r, double compile_s, double sim_s) {
  r->compile_s += compile_s;
  r->sim_s += sim_s;
}

void cov_npu_report_times(const cov_npu_report *r, double *compile_s, double *sim_s) {
  *compile_s = r->compile_s;
  *sim_s = r->sim_s;
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

double cov_npu_report_narrowed_error(const cov_npu_report *r) {
  double e = -1;
  for (int i = 0; i < r->n; i++)
    if (r->rows[i].narrow_checked && !(r->rows[i].narrow_err <= e)) e = r->rows[i].narrow_err;
  return e;
}

void cov_npu_report_narrowed_dtypes(const cov_npu_report *r, char *buf, size_t n) {
  unsigned set = 0;
  for (int i = 0; i < r->n; i++) set |= r->rows[i].narrow_dtypes;
  if (!n) return;
  buf[0] = 0;
  size_t at = 0;
  for (int d = 1; d < COV_DTYPE_COUNT && d < 32; d++)
    if (set & (1u << d)) {
      int k = snprintf(buf + at, n - at, "%s%s", at ? ", " : "", cov_dtype_name((cov_dtype)d));
      if (k < 0 || (size_t)k >= n - at) return;
      at += (size_t)k;
    }
  if (!at) snprintf(buf, n, "none");
}

int cov_npu_report_narrowed_bits(const cov_npu_report *r) {
  unsigned set = 0;
  for (int i = 0; i < r->n; i++) set |= r->rows[i].narrow_dtypes;
  int bits = 0;
  for (int d = 1; d < COV_DTYPE_COUNT && d < 32; d++)
    if ((set & (1u << d)) && (!bits || cov_dtype_precision_bits((cov_dtype)d) < bits))
      bits = cov_dtype_precision_bits((cov_dtype)d);
  return bits;
}

int cov_npu_report_cpu_calls(const cov_npu_report *r) { return count(r, NPU_ROW_CPU); }
int cov_npu_report_fused_groups(const cov_npu_report *r) { return count(r, NPU_ROW_GROUP); }
int cov_npu_report_calls(const cov_npu_report *r) { return count(r, NPU_ROW_CALL); }

/* The mapper's estimate against the simulation, as a signed percentage:
 * negative when the cost model expects fewer cycles than the simulator
 * counts. */
static double est_error(const npu_row *w) {
  return w->cycles ? 100.0 * (w->predicted - (double)w->cycles) / (double)w->cycles : 0;
}

void cov_npu_report_print(const cov_npu_report *r, FILE *out) {
  /* Columns as wide as their longest entry, so that long node names (e.g.
   * torchvision's "/features/features.12/conv/conv.1/conv.1.0/Conv") keep
   * the table aligned. */
  int wn = 4, wc = 8;
  for (int i = 0; i < r->n; i++) {
    int a = (int)strlen(r->rows[i].node), b = (int)strlen(r->rows[i].codelet);
    if (a > wn) wn = a;
    if (b > wc) wc = b;
  }
  fprintf(out, "%-5s %-*s %-*s %10s %10s %6s %6s %6s %10s %10s %10s  %s\n", "group", wn, "node", wc,
          "codelets", "cycles", "mapper est", "err", "array", "simd", "DRAM B", "on-chip B", "energy nJ",
          "where");
  uint64_t tc = 0, tm = 0, td = 0, to = 0;
  double tp = 0, abs_err = 0, te = 0, tee = 0;
  int n_sim = 0, n_en = 0;
  for (int i = 0; i < r->n; i++) {
    const npu_row *w = &r->rows[i];
    if (w->kind != NPU_ROW_CPU) {
      char en[32] = "-";
      if (w->energy_pj >= 0) snprintf(en, sizeof en, "%.1f", w->energy_pj * 1e-3);
      fprintf(out, "%-5d %-*s %-*s %10llu %10.0f %+5.0f%% %5.1f%% %5.1f%% %10llu %10llu %10s  %s\n",
              w->group, wn, w->node, wc, w->codelet, (unsigned long long)w->cycles, w->predicted,
              est_error(w), 100 * w->util_array, 100 * w->util_simd,
              (unsigned long long)w->dram_bytes, (unsigned long long)w->onchip_bytes, en, w->where);
      if (w->energy_pj >= 0) te += w->energy_pj, n_en++;
      if (w->energy_pj >= 0 && w->energy_est_pj >= 0) tee += w->energy_est_pj;
      tp += w->predicted;
      abs_err += fabs(est_error(w));
      n_sim++;
    } else {
      fprintf(out, "%-5d %-*s %-*s %10s %10s %6s %6s %6s %10s %10s %10s  %s\n", w->group, wn, w->node,
              wc, w->codelet, "-", "-", "-", "-", "-", "-", "-", "-", w->where);
    }
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
  print_mac_share(r, out);
  if (n_sim)
    fprintf(out,
            "mapper est: the mapper's cost model's prediction before simulation (covenant map); "
            "err = (est - cycles) / cycles: %+.0f%% in all, mean |err| %.0f%% per row\n",
            tc ? 100.0 * (tp - (double)tc) / (double)tc : 0.0, abs_err / n_sim);
  if (n_en)
    fprintf(out,
            "energy: %.3f uJ simulated on the NPU rows (%.2f pJ/MAC; backends/npu-sim/README.md "
            "\"Energy\"), the mapper's estimate %.3f uJ (%+.0f%%)\n",
            te * 1e-6, tm ? te / (double)tm : 0.0, tee * 1e-6, te > 0 ? 100.0 * (tee - te) / te : 0.0);
}
