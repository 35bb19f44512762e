/* tests/npu-sim/npu_test.h: what the NPU simulator's C tests share: the
 * source tree, a target's ACG and its nodes, edges and capabilities by
 * name, f16-exact random numbers, hand-built programs (instructions, DRAM
 * tensors, vector ops, 2-D DMAs) and one simulator run.
 * Included once per test program (static definitions). */
#ifndef NPU_TEST_H
#define NPU_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "common/op_table.h"
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

/* The ACG's node `name` (storage or compute), its edge from a to b and a
 * compute unit's index among the compute nodes; a test cannot go on
 * without them (inline, as what follows: not every test uses each). */
static inline int node(const cov_acg *g, const char *name) {
  int n = acg_find_node(g, name);
  if (n < 0) {
    fprintf(stderr, "no node %s\n", name);
    exit(1);
  }
  return n;
}
static inline int edge(const cov_acg *g, const char *a, const char *b) {
  return npu_find_edge(g, node(g, a), node(g, b));
}
static inline int compute(const cov_acg *g, const char *name) { return node(g, name) - g->n_storage; }

/* The capability of compute unit `unit` for op on `in` operands. */
static inline int cap_of(const cov_acg *g, const char *unit, cov_op op, cov_dtype in) {
  const acg_compute *c = &g->compute[compute(g, unit)];
  for (int k = 0; k < c->n_caps; k++)
    if (c->caps[k].op == op && c->caps[k].in[0] == in) return k;
  fprintf(stderr, "no capability of %s for %s on %s\n", unit, common_op_name(op), cov_dtype_name(in));
  exit(1);
}

/* A vector op of compute unit `unit` (capability `cap`): dst = op(src1)
 * over rows x cols elements of dtype dt, read and written; a second
 * operand, flags and the like are the caller's to add. */
static inline npu_insn vop(int unit, int cap, cov_op op, cov_dtype dt, uint32_t rows, uint32_t cols, npu_mem dst,
                           npu_mem src1) {
  npu_insn v = {.op = NPU_OP_VOP, .unit = (uint8_t)unit};
  v.u.vop.vop = (uint8_t)op;
  v.u.vop.cap = (uint8_t)cap;
  v.u.vop.dtype_in = v.u.vop.dtype_out = (uint8_t)dt;
  v.u.vop.rows = rows;
  v.u.vop.cols = cols;
  v.u.vop.dst = dst;
  v.u.vop.src1 = src1;
  return v;
}

/* The same on the compute unit named `unit`, with its capability for op on dt. */
static inline npu_insn unit_vop(const cov_acg *g, const char *unit, cov_op op, cov_dtype dt, uint32_t rows,
                                uint32_t cols, npu_mem dst, npu_mem src1) {
  return vop(compute(g, unit), cap_of(g, unit, op, dt), op, dt, rows, cols, dst, src1);
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
