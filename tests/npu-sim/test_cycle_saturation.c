/* tests/npu-sim/test_cycle_saturation.c: cycle arithmetic under an absurd ACG.
 *
 *   test_cycle_saturation SOURCE_DIR
 *
 * A gemm layer mapped, compiled and simulated on npu-16x16, then again after
 * its DRAM -> buffer edges are slowed to 1e-16 bytes/cycle. The loader now
 * refuses such a file (tests/acg/invalid/bandwidth_tiny.json), so the edge is
 * changed in memory, as a derived or hand-built ACG could. The slow run must
 * report that its cycle count is out of range (at 1e-16 bytes/cycle the
 * layer's bytes need more than 2^64 cycles, so no count is right): before
 * an earlier simulator converted 4e301 cycles to
 * uint64_t (undefined behaviour; UBSan: float-cast-overflow in npu_exec.c),
 * and gcc's build reported fewer cycles than the fast ACG. */
#include <stdio.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "tests/check.h"

/* map + compile + simulate; returns the status, *cycles on success */
static cov_status cycles_on(const cov_layer *layer, const cov_acg *acg, uint64_t *cycles) {
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = cov_map(layer, acg, NULL, &s);
  if (!st) st = cov_npu_compile(s, &p);
  if (!st) st = cov_npu_sim_create(acg, &sim);
  if (!st) st = cov_npu_sim_load(sim, p);
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  if (!st) *cycles = cov_npu_stats_cycles(stats);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  return st;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  char suite[2048];
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", argv[1]);
  cov_acg *acg = NULL;
  cov_layer *layer = NULL;
  cov_status st = cov_acg_load_target("npu-16x16", &acg);
  if (!st) st = cov_layer_from_suite(suite, "dlrm_mlp_top", 8, &layer);
  if (st) {
    cov_status_print(stderr, st, 1);
    return 1;
  }
  uint64_t fast = 0, slow = 0;
  st = cycles_on(layer, acg, &fast);
  CHECK(st == NULL && fast > 0);
  cov_status_free(st);

  int slowed = 0;
  for (int e = 0; e < acg->n_edges; e++)
    if (acg->edges[e].from < acg->n_storage && acg->storage[acg->edges[e].from].kind == ACG_DRAM) {
      acg->edges[e].bandwidth_bytes_per_cycle = 1e-16;
      slowed++;
    }
  CHECK(slowed > 0);
  st = cycles_on(layer, acg, &slow);
  char msg[512] = "ok";
  if (st) cov_status_format(st, msg, sizeof msg);
  printf("fast ACG: %llu cycles; DRAM edges at 1e-16 bytes/cycle: %s (%llu cycles)\n",
         (unsigned long long)fast, msg, (unsigned long long)slow);
  /* Moving even one byte takes 1e16 cycles, the layer's kilobytes more
   * than 2^64: no count is right, only the error is. */
  CHECK(st != NULL && cov_status_code(st) == COV_OUT_OF_RANGE);
  CHECK(strstr(msg, "2^62 cycles") != NULL);
  cov_status_free(st);
  cov_layer_free(layer);
  cov_acg_free(acg);
  return check_summary();
}
