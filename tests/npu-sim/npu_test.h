/* tests/npu-sim/npu_test.h: what the NPU simulator's C tests share: the
 * source tree, a target's ACG, f16-exact random numbers, hand-built
 * programs (instructions, DRAM tensors, 2-D DMAs) and one simulator run.
 * Included once per test program (static definitions). */
#ifndef NPU_TEST_H
#define NPU_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/npu.h"
#include "tests/check.h"

#ifndef NPU_TEST_SEED
#define NPU_TEST_SEED 0x9e3779b97f4a7c15ull
#endif

static const char *g_src; /* the source tree (argv[1]) */

/* An ACG file the test needs; a test cannot go on without it. */
static cov_acg *load_acg_file(const char *path) {
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_file(path, &g);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    exit(1);
  }
  return g;
}

static cov_acg *load_target(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/targets/%s.json", g_src, name);
  return load_acg_file(path);
}

/* Deterministic pseudo-random numbers (xorshift), exactly representable in f16. */
static uint64_t g_rng = NPU_TEST_SEED;
static float rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return cov_f16_to_f32(cov_f32_to_f16((float)((int)(g_rng % 2001) - 1000) / 500.0f));
}

/* An empty program for target t (inline: not every test builds one). */
static inline npu_prog *new_prog(const npu_target *t) {
  npu_prog *p = NULL;
  CHECK(!npu_prog_create(&p));
  npu_prog_set_target(p, t);
  return p;
}

static void add(npu_prog *p, npu_insn in) {
  cov_status st = npu_prog_add(p, &in);
  CHECK(!st);
  cov_status_free(st);
}

static uint64_t add_tensor(npu_prog *p, const char *name, cov_dtype dt, uint8_t role, int rank,
                           const uint32_t *dims) {
  npu_tensor t = {0};
  snprintf(t.name, sizeof t.name, "%s", name);
  t.dtype = dt;
  t.role = role;
  t.rank = (uint8_t)rank;
  t.bytes = cov_dtype_size(dt);
  for (int d = 0; d < rank; d++) {
    t.dims[d] = dims[d];
    t.bytes *= dims[d];
  }
  t.addr = (p->dram_bytes + 63) / 64 * 64;
  p->dram_bytes = t.addr + t.bytes;
  cov_status st = npu_prog_add_tensor(p, &t);
  CHECK(!st);
  cov_status_free(st);
  return t.addr;
}

/* A 2-D DMA: rows x cols tile at (r0, c0) of a R x C row-major tensor. */
static npu_insn dma2(int e, bool store, cov_dtype dt, uint64_t tensor, uint32_t R, uint32_t C,
                     int32_t r0, int32_t c0, uint32_t rows, uint32_t cols, uint32_t local,
                     uint32_t lrow, uint32_t lcol) {
  npu_insn in = {.op = NPU_OP_DMA, .unit = (uint8_t)e, .flags = store ? NPU_DMA_STORE : 0};
  in.u.dma.dtype = dt;
  in.u.dma.rank = 2;
  in.u.dma.dram_off = tensor;
  in.u.dma.local_off = local;
  in.u.dma.dim[0] = (npu_dma_dim){rows, 1, r0, R, C, lrow};
  in.u.dma.dim[1] = (npu_dma_dim){cols, 1, c0, C, 1, lcol};
  return in;
}

static cov_npu_stats *run(const cov_acg *g, npu_prog *p, cov_npu_sim **out_sim,
                          const char **names, cov_tensor *ins, int n_in) {
  cov_npu_sim *sim = NULL;
  cov_status st = cov_npu_sim_create(g, &sim);
  if (!st) st = cov_npu_sim_load(sim, p);
  for (int i = 0; i < n_in && !st; i++) st = cov_npu_sim_write(sim, names[i], &ins[i]);
  cov_npu_stats *stats = NULL;
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
  }
  CHECK(stats != NULL);
  *out_sim = sim;
  return stats;
}

#endif
