/* acg/acg_mac.c: how a compute unit runs a contraction (a `mac` codelet
 * statement) as matrix instructions, read from the ACG alone.
 *
 * This is the contract between the mapper's binding and the NPU code
 * generator: the mapper binds a mac only to a unit whose capability has a
 * form here, and the code generator and simulator run every such form, so
 * the mapper never picks a binding the backend cannot lower. The timing of
 * the tile form is here too, as acg_bank_degree is: the simulator charges
 * it and the mapper's cost model predicts with it.
 *
 * Forms:
 * - ARRAY: a systolic array (weight- or output-stationary, its own timing
 *   in the simulator); rows x columns from the capability's tile, else the
 *   node's dims.
 * - TILES: a matrix unit (kind `matrix`: an M x N x K tile per issue, from
 *   the capability's tile [M, N, K]), a SIMD unit (vector MACs: one
 *   multiplicand broadcast, the other a vector of `lanes` columns: the tile
 *   [1, lanes, 1]) or a scalar unit ([1, 1, 1]). One instruction covers
 *   m x k x n in whole issues (k at most ACG_MAC_SPAN rounded up to whole
 *   issues, n one issue's width); its accumulators stay in the unit over
 *   its k. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "acg/acg_ir.h"

/* The most k one TILES instruction covers: 64 rounded up to whole issues;
 * n: one issue's width (the mapper's spatial extents for the unit). */
#define ACG_MAC_SPAN 64

static bool float_multiplicand(cov_dtype t) {
  return t == COV_F16 || t == COV_BF16 || t == COV_F32 || t == COV_E4M3 || t == COV_E5M2;
}

static bool dtypes_run(const acg_capability *c) {
  cov_dtype a = c->in[0], b = c->n_in > 1 ? c->in[1] : c->in[0], o = c->out;
  bool fl = float_multiplicand(a) && float_multiplicand(b) && o == COV_F32;
  return fl || (a == COV_I8 && b == COV_I8 && o == COV_I32);
}

static uint32_t span(uint32_t t) {
  if (t == 0) t = 1;
  return (ACG_MAC_SPAN + t - 1) / t * t;
}

bool acg_mac_form_of(const cov_acg *g, int unit, int cap, acg_mac_form *f, char *why, size_t nwhy) {
  memset(f, 0, sizeof *f);
  if (why && nwhy) why[0] = 0;
  if (unit < 0 || unit >= g->n_compute || cap < 0 || cap >= g->compute[unit].n_caps) {
    if (why) snprintf(why, nwhy, "no such unit or capability");
    return false;
  }
  const acg_compute *cn = &g->compute[unit];
  const acg_capability *c = &cn->caps[cap];
  if (c->op != COV_OP_MAC) {
    if (why) snprintf(why, nwhy, "'%s' capability %d is not a mac", cn->name, cap);
    return false;
  }
  if (!dtypes_run(c)) {
    if (why)
      snprintf(why, nwhy, "mac(%s,%s->%s) on '%s' is not one the instruction set multiplies "
               "(f16, bf16, e4m3, e5m2 or f32 into f32; i8 into i32)", cov_dtype_name(c->in[0]),
               cov_dtype_name(c->n_in > 1 ? c->in[1] : c->in[0]), cov_dtype_name(c->out), cn->name);
    return false;
  }
  switch (cn->kind) {
  case ACG_SYSTOLIC:
    f->kind = ACG_MAC_ARRAY;
    f->rows = c->tile_rank > 0 ? c->tile[0] : cn->dims[0];
    f->cols = c->tile_rank > 1 ? c->tile[1] : cn->dims[1];
    f->tm = 1;
    f->tk = f->rows;
    f->tn = f->cols;
    return f->rows > 0 && f->cols > 0;
  case ACG_MATRIX:
    if (c->tile_rank != 3) {
      if (why)
        snprintf(why, nwhy, "the mac of matrix unit '%s' needs a tile [M, N, K] (one issue's "
                 "shape), it gives %d extent%s", cn->name, c->tile_rank, c->tile_rank == 1 ? "" : "s");
      return false;
    }
    f->tm = c->tile[0];
    f->tn = c->tile[1];
    f->tk = c->tile[2];
    break;
  case ACG_SIMD: /* vector MACs: a tile [M, N, K] where given (a dot-product
                   * form), else [1, lanes] (the capability's tile defaults
                   * to the lanes) */
    f->tm = c->tile_rank == 3 ? c->tile[0] : 1;
    f->tn = c->tile_rank == 3 ? c->tile[1] : c->tile_rank >= 1 ? c->tile[0] : cn->dims[0];
    f->tk = c->tile_rank == 3 ? c->tile[2] : 1;
    if (f->tn == 0) f->tn = 1;
    break;
  default: /* scalar */
    f->tm = f->tn = f->tk = 1;
    break;
  }
  f->kind = ACG_MAC_TILES;
  f->rows = span(f->tk);
  f->cols = f->tn;
  return true;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : a; }

uint64_t acg_mac_tile_issues(const acg_mac_form *f, uint64_t m, uint64_t k, uint64_t n) {
  return ceil_div(m, f->tm) * ceil_div(k, f->tk) * ceil_div(n, f->tn);
}

/* The edge between nodes a and b (either direction where bidirectional),
 * -1 when there is none. */
static int edge_of(const cov_acg *g, int a, int b) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if ((ed->from == a && ed->to == b) || (ed->bidirectional && ed->from == b && ed->to == a)) return e;
  }
  return -1;
}

uint64_t acg_mac_tile_cycles(const cov_acg *g, int unit, int cap, const acg_mac_form *f,
                             const acg_mac_operands *o) {
  const acg_capability *c = &g->compute[unit].caps[cap];
  int un = g->n_storage + unit;
  double thr = c->throughput > 0 ? c->throughput : 1;
  uint64_t issues = acg_mac_tile_issues(f, o->m, o->k, o->n);
  double vol = (double)f->tm * f->tn * f->tk;
  double occ = ceil((double)issues * vol / thr);
  if (occ < 1) occ = 1;
  /* operand bytes (in doubles: m x k x n may pass 2^64 bytes in a hostile
   * program): A once per column issue, B once per row issue, C read when
   * accumulating and written once; per edge, summed where operands share
   * one, each edge at its bandwidth */
  int edge[4] = {edge_of(g, o->buf[0], un), edge_of(g, o->buf[1], un), o->c_in ? edge_of(g, o->buf[3], un) : -1,
                 edge_of(g, un, o->buf[2])};
  double m = (double)o->m, k = (double)o->k, n = (double)o->n;
  double bytes[4] = {m * k * (double)o->es[0] * (double)ceil_div(o->n, f->tn),
                     k * n * (double)o->es[1] * (double)ceil_div(o->m, f->tm),
                     o->c_in ? m * n * (double)o->es[2] : 0, m * n * (double)o->es[2]};
  for (int i = 0; i < 4; i++) {
    if (edge[i] < 0 || bytes[i] <= 0) continue;
    double sum = 0;
    bool first = true;
    for (int j = 0; j < 4; j++) {
      if (edge[j] != edge[i]) continue;
      if (j < i) first = false;
      sum += bytes[j];
    }
    double bw = g->edges[edge[i]].bandwidth_bytes_per_cycle;
    double feed = first && bw > 0 ? ceil(sum / bw) : 0;
    if (feed > occ) occ = feed;
  }
  /* at most 2^62 cycles (the simulator's cycle counts saturate there) */
  return occ < 4.6e18 ? (uint64_t)occ : (uint64_t)1 << 62;
}
