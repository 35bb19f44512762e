/* fuzz/npu_fuzz.c: libFuzzer target for the NPU program decoder and verifier
 * (static checks and the dry run), on both shipped NPU targets; programs that
 * pass are run in the simulator. Seeds: tests/npu-sim/programs. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backends/npu-sim/npu_internal.h"
#include "covenant/npu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cov_acg *g_acg[2];

static cov_acg *target(int i) {
  static const char *names[2] = {"npu-16x16", "npu-32x32-os"};
  if (!g_acg[i]) {
    cov_status st = cov_acg_load_target(names[i], &g_acg[i]);
    if (st) {
      cov_status_print(stderr, st, 1);
      cov_status_free(st);
    }
  }
  return g_acg[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npu_prog *p = NULL;
  cov_status st = npu_decode(data, size, "fuzz", &p);
  if (st) {
    cov_status_free(st);
    return 0;
  }
  /* Keep runs short: small DRAM images and few dynamic instructions. */
  for (int i = 0; i < 2 && p->dram_bytes <= (1u << 24); i++) {
    cov_acg *g = target(i);
    if (!g) continue;
    cov_npu_sim *sim = NULL;
    if ((st = cov_npu_sim_create(g, &sim))) break;
    /* Make the program claim this ACG so the deeper checks are reached. */
    npu_prog_set_target(p, &sim->tgt);
    st = npu_verify_static(p, &sim->tgt, "fuzz");
    npu_exec_opts dry = {.dry = true, .max_dyn = 2000};
    sim->dram_bytes = p->dram_bytes;
    if (!st) st = npu_exec(sim, p, &dry, NULL);
    sim->dram_bytes = 0;
    if (!st) st = cov_npu_sim_load(sim, p);
    cov_npu_stats *stats = NULL;
    if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
    cov_npu_stats_free(stats);
    cov_status_free(st);
    st = NULL;
    cov_npu_sim_free(sim);
  }
  cov_status_free(st);
  npu_prog_free(p);
  return 0;
}
