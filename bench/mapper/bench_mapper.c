/* bench/mapper: the mapper's default (pruned) search against the exhaustive
 * search under the same cost model, for every suite layer on every NPU
 * target: percent of optimum (exhaustive cycles / chosen cycles) and the
 * mapping time per layer (best of 3 runs, wall clock, this machine); per
 * target, the geomean percent and the slowest layer.
 *
 * usage: bench_mapper [--suite FILE] [--scale N] [--time-only] [TARGET...]
 * (--time-only: mapping times without the exhaustive reference)
 * (default targets: npu-16x16 npu-32x32-os) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "covenant/mapper.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *suite = cov_suite_default_path();
  int scale = 1, time_only = 0;
  const char *targets[16];
  int n_targets = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--suite") && i + 1 < argc) suite = argv[++i];
    else if (!strcmp(argv[i], "--scale") && i + 1 < argc) scale = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--time-only")) time_only = 1;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: bench_mapper [--suite FILE] [--scale N] [--time-only] [TARGET...]\n");
      return 2;
    } else if (n_targets < 16) targets[n_targets++] = argv[i];
  }
  if (!n_targets) targets[n_targets++] = "npu-16x16", targets[n_targets++] = "npu-32x32-os";
  if (scale < 1) scale = 1;
  char **names;
  int n_names;
  cov_status st = cov_suite_layer_names(suite, &names, &n_names);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  double log_sum = 0, slowest = 0, exh_time = 0;
  int n = 0, failures = 0;
  const char *slowest_name = "";
  static char slow_buf[256];
  /* per target: geomean percent, slowest layer, exhaustive time */
  double t_log[16] = {0}, t_slow[16] = {0}, t_exh[16] = {0};
  int t_n[16] = {0};
  static char t_slow_name[16][128];
  printf("%-22s %-14s %14s %14s %9s %10s %10s %9s\n", "layer", "target", "chosen", "optimum",
         "%optimum", "map ms", "evals", "exh. s");
  for (int t = 0; t < n_targets; t++) {
    cov_acg *acg;
    st = cov_acg_load_target(targets[t], &acg);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      return 1;
    }
    for (int i = 0; i < n_names; i++) {
      cov_layer *layer;
      st = cov_layer_from_suite(suite, names[i], scale, &layer);
      cov_schedule *s = NULL, *x = NULL;
      double best_t = 1e30;
      for (int rep = 0; rep < 3 && !st; rep++) {
        cov_schedule_free(s);
        s = NULL;
        double t0 = now();
        st = cov_map(layer, acg, &(cov_map_options){0}, &s);
        double dt = now() - t0;
        if (dt < best_t) best_t = dt;
      }
      double t1 = now();
      if (!st && !time_only) st = cov_map(layer, acg, &(cov_map_options){.exhaustive = 1}, &x);
      double et = now() - t1;
      exh_time += et;
      t_exh[t] += et;
      if (st) {
        printf("%-22s %-14s FAILED: ", names[i], targets[t]);
        cov_status_print(stdout, st, 0);
        cov_status_free(st);
        failures++;
      } else {
        double pct = x ? 100.0 * cov_schedule_cycles(x) / cov_schedule_cycles(s) : 100.0;
        printf("%-22s %-14s %14.0f %14.0f %8.2f%% %10.2f %10lld %9.2f\n", names[i], targets[t],
               cov_schedule_cycles(s), x ? cov_schedule_cycles(x) : NAN, pct, 1e3 * best_t,
               (long long)cov_schedule_evaluations(s), et);
        log_sum += log(pct / 100.0);
        n++;
        t_log[t] += log(pct / 100.0);
        t_n[t]++;
        if (best_t > t_slow[t]) {
          t_slow[t] = best_t;
          snprintf(t_slow_name[t], sizeof t_slow_name[t], "%s", names[i]);
        }
        if (best_t > slowest) {
          slowest = best_t;
          snprintf(slow_buf, sizeof slow_buf, "%s on %s", names[i], targets[t]);
          slowest_name = slow_buf;
        }
      }
      cov_schedule_free(s);
      cov_schedule_free(x);
      cov_layer_free(layer);
    }
    cov_acg_free(acg);
  }
  printf("\n%-14s %7s %9s %12s  %-22s %8s\n", "target", "layers", "%optimum", "slowest ms",
         "slowest layer", "exh. s");
  for (int t = 0; t < n_targets; t++) {
    char pct[32] = "-";
    if (!time_only && t_n[t]) snprintf(pct, sizeof pct, "%.2f%%", 100.0 * exp(t_log[t] / t_n[t]));
    printf("%-14s %7d %9s %12.2f  %-22s %8.2f\n", targets[t], t_n[t], pct, 1e3 * t_slow[t],
           t_slow_name[t], t_exh[t]);
  }
  if (!time_only)
    printf("\ngeomean: %.2f%% of the exhaustive optimum over %d layer/target pairs (%d failed)\n",
         n ? 100.0 * exp(log_sum / n) : 0.0, n, failures);
  printf("slowest mapping: %.2f ms (%s); exhaustive searches took %.2f s in all\n", 1e3 * slowest,
         slowest_name, exh_time);
  for (int i = 0; i < n_names; i++) free(names[i]);
  free(names);
  return failures ? 1 : 0;
}
