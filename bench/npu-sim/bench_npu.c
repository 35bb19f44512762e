/* bench/npu-sim/bench_npu.c: the NPU simulator against its references, on
 * every layer of the suite and both shipped NPU targets, in one run:
 *
 *  1. cost model vs simulator: the mapper's predicted cycles against the
 *     simulated cycles of the generated program; Spearman rank correlation
 *     and mean absolute percent error, per target and overall;
 *  2. anchor: simulated cycles against SCALE-Sim's analytical runtime for the
 *     same dataflow and array size (README.md gives the formula), as a ratio;
 *  3. speed: simulated MACs per second of wall time, against a plain C
 *     f32 multiply-accumulate loop doing the same MACs in the same run.
 *
 * usage: bench_npu [--scale N] [--suite FILE] (default scale 1: full size) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/npu-sim/npu_internal.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "mapper/map_internal.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Ranks with ties averaged, then Pearson on the ranks. */
static void ranks(const double *x, int n, double *r) {
  for (int i = 0; i < n; i++) {
    int less = 0, eq = 0;
    for (int j = 0; j < n; j++) less += x[j] < x[i], eq += x[j] == x[i];
    r[i] = less + (eq + 1) / 2.0;
  }
}
static double spearman(const double *a, const double *b, int n) {
  double *ra = malloc(sizeof(double) * (size_t)n), *rb = malloc(sizeof(double) * (size_t)n);
  ranks(a, n, ra);
  ranks(b, n, rb);
  double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) ma += ra[i] / n, mb += rb[i] / n;
  for (int i = 0; i < n; i++) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  free(ra);
  free(rb);
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

/* SCALE-Sim's analytical runtime (Samajdar et al., ISPASS 2020): a layer as
 * a GEMM of Mg output pixels x Ng filters x Kg reduction; for array rows R,
 * columns C and dataflow WS: S_R = Kg, S_C = Ng, T = Mg; OS: S_R = Mg,
 * S_C = Ng, T = Kg; cycles = (2R + C + T - 2) * ceil(S_R/R) * ceil(S_C/C). */
static double scalesim(const map_schedule *s, bool os, double R, double C) {
  const map_problem *p = &s->prob;
  const map_operand *w = &p->operands[1];
  double Mg = 1, Ng = 1, Kg = 1;
  for (int l = 0; l < p->n_loops; l++) {
    bool wdep = false;
    for (int d = 0; d < w->rank; d++) wdep |= w->acc.coef[d][l] != 0;
    if (p->reduction[l]) Kg *= (double)p->extent[l];
    else if (wdep) Ng *= (double)p->extent[l];
    else Mg *= (double)p->extent[l];
  }
  double SR = os ? Mg : Kg, SC = Ng, T = os ? Kg : Mg;
  return (2 * R + C + T - 2) * ceil(SR / R) * ceil(SC / C);
}

int main(int argc, char **argv) {
  int scale = 1;
  const char *suite = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) scale = atoi(argv[++i]);
    else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) suite = argv[++i];
    else {
      fprintf(stderr, "usage: bench_npu [--scale N] [--suite FILE]\n");
      return 2;
    }
  }
  if (!suite) suite = cov_suite_default_path();
  char **names = NULL;
  int n_names = 0;
  cov_status st = cov_suite_layer_names(suite, &names, &n_names);
  if (st) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  const char *targets[2] = {"npu-16x16", "npu-32x32-os"};
  double pred[64], sim[64];
  int n = 0, per_t[2] = {0, 0};
  double macs_total = 0, wall_total = 0;
  printf("npu-sim bench, suite layers at scale 1/%d\n", scale);
  printf("%-22s %-13s %12s %12s %8s %12s %8s %10s\n", "layer", "target", "simulated", "predicted",
         "pred/sim", "scale-sim", "sim/ss", "MAC/s");
  for (int t = 0; t < 2; t++) {
    cov_acg *g = NULL;
    if ((st = cov_acg_load_target(targets[t], &g))) break;
    npu_target nt;
    npu_target_init(g, &nt);
    for (int i = 0; i < n_names && n < 64; i++) {
      cov_layer *layer = NULL;
      cov_schedule *sch = NULL;
      cov_npu_program *prog = NULL;
      cov_npu_sim *sm = NULL;
      cov_npu_stats *stats = NULL;
      double t0 = 0, t1 = 0;
      st = cov_layer_from_suite(suite, names[i], scale, &layer);
      if (!st) st = cov_map(layer, g, NULL, &sch);
      if (!st) st = cov_npu_compile(sch, &prog);
      if (!st) st = cov_npu_sim_create(g, &sm);
      if (!st) st = cov_npu_sim_load(sm, prog);
      if (!st) {
        t0 = now();
        st = cov_npu_sim_run(sm, NULL, &stats);
        t1 = now();
      }
      if (st) {
        fprintf(stderr, "%s on %s: ", names[i], targets[t]);
        cov_status_print(stderr, st, 0);
        cov_status_free(st);
        st = NULL;
      } else {
        double cyc = (double)cov_npu_stats_cycles(stats), pc = cov_schedule_cycles(sch);
        double macs = (double)cov_npu_stats_macs(stats);
        const map_schedule *ms = &sch->s;
        char ss[32] = "-", ratio[32] = "-";
        if (ms->prob.kind == MAP_MAIN_MAC) {
          const acg_capability *cap = &g->compute[ms->node - g->n_storage].caps[ms->cap];
          double v = scalesim(ms, nt.output_stationary, cap->tile[0], cap->tile[1]);
          snprintf(ss, sizeof ss, "%.0f", v);
          snprintf(ratio, sizeof ratio, "%.2f", cyc / v);
        }
        double rate = macs / (t1 - t0 > 1e-9 ? t1 - t0 : 1e-9);
        printf("%-22s %-13s %12.0f %12.0f %8.2f %12s %8s %10.2e\n", names[i], targets[t], cyc, pc,
               pc / cyc, ss, ratio, macs ? rate : 0.0);
        pred[n] = pc;
        sim[n] = cyc;
        n++;
        per_t[t]++;
        if (macs >= 1e8) {
          macs_total += macs;
          wall_total += t1 - t0;
        }
      }
      cov_npu_stats_free(stats);
      cov_npu_sim_free(sm);
      cov_npu_program_free(prog);
      cov_schedule_free(sch);
      cov_layer_free(layer);
    }
    cov_acg_free(g);
  }
  for (int i = 0; i < n_names; i++) free(names[i]);
  free(names);
  if (st) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  printf("\ncost model vs simulator (predicted vs simulated cycles):\n");
  int off = 0;
  for (int t = 0; t < 3; t++) {
    int k = t < 2 ? per_t[t] : n, o = t < 2 ? off : 0;
    double mape = 0;
    for (int i = o; i < o + k; i++) mape += fabs(pred[i] - sim[i]) / sim[i];
    printf("  %-13s layers %2d  Spearman %.3f  MAPE %.1f%%\n", t < 2 ? targets[t] : "both", k,
           spearman(pred + o, sim + o, k), k ? 100 * mape / k : 0);
    if (t < 2) off += per_t[t];
  }
  /* Reference for speed: a plain C multiply-accumulate loop over the same
   * number of MACs (16-wide rows, like one array row), timed here. */
  if (wall_total > 0) {
    int64_t reps = (int64_t)(macs_total / 256);
    float acc[16] = {0}, a[16], b[16];
    for (int i = 0; i < 16; i++) a[i] = 1e-7f * (float)i, b[i] = 1.0f - 1e-7f * (float)i;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++)
      for (int k = 0; k < 16; k++)
        for (int j = 0; j < 16; j++) acc[j] += a[k] * b[j];
    double t1 = now();
    float sink = 0;
    for (int j = 0; j < 16; j++) sink += acc[j];
    double cref = (double)reps * 256 / (t1 - t0);
    printf("\nspeed on layers of >= 1e8 MACs: %.2e simulated MACs/s (functional + timing); plain C "
           "MAC loop %.2e MACs/s; ratio %.2f (checksum %g)\n",
           macs_total / wall_total, cref, macs_total / wall_total / cref, (double)sink);
  }
  return 0;
}
