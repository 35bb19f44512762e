/* backends/npu-sim/npu_head.c: the loads the first gemm waits for, split
 * into pieces so that it starts on the first piece, and issued in the
 * order the gemms read them (run on every program npu_codegen emits, after
 * npu_hoist_loads).
 *
 * Nothing runs on the array until the first gemm's operands are on chip,
 * and the simulator's scoreboard (ISA.md "Timing") makes a reader wait for
 * every 64-byte block of its operand's span: a gemm that reads one part
 * of a tile still waits for a DMA that writes the whole tile. Where the
 * first gemm reads only the first part of a load (an output-stationary
 * chain folded at whole groups of channels, map_gemm.c os_k_digits: its
 * first gemm reads one group of the input tile, and of the weight tile,
 * which map_gemm.c lays out channel-major for it), the load is issued as
 * pieces along its outermost dimension on chip (the largest local stride:
 * a channel-major weight tile's DMA lists its filters first, in the
 * tensor's order, its channels second), in order, each on blocks of its
 * own. The head's loads are then issued in the order the program first
 * reads them, stable: w[:, 0], x[0], w[:, 1], x[1], ..., then what the
 * epilogue and the next tile read. One engine serves them in issue order,
 * so the first gemm waits for the first piece of each operand and the
 * latency, the later gemms of the chain for theirs, which arrive while it
 * runs (convnet_layer2 on npu-16x16-os: first gemm at cycle 361 with the
 * whole tiles, 289 with the input in 10 pieces, 218 with the weights in 10
 * too, 10 + 8 cycles of bursts per channel against 25-cycle gemms).
 *
 * Only dimensions that are not part of a DRAM run are split (rank >= 2,
 * not the innermost), so the pieces cost the DRAM interface what the whole
 * load did; at most NPU_HEAD_PIECES pieces. Results are those of the
 * program before: the same bytes, written before any instruction that
 * reads them, by one engine in issue order (the head's loads write
 * disjoint bytes, or are left in their order). The mapper's cost model
 * charges the same head (map_cost.c: the first piece of each operand's
 * load, map_gemm_first_share, in sum, and the latency; a chain faster than
 * its pieces waits for the last): convnet_layer2's first fill 218
 * predicted, 218 simulated. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"

#define NPU_HEAD_PIECES 16

static bool is_load(const npu_insn *in) {
  return in->op == NPU_OP_DMA && !(in->flags & NPU_DMA_STORE);
}

/* The dimension a load is split along: its outermost on chip (the largest
 * local stride), not the innermost (a DRAM run), or -1. The tile's layout
 * decides which one that is: a channel-major weight tile
 * (map_gemm_tile_strides) lists its filters' dimension first in the DMA,
 * in the tensor's order, but lays its channels outermost. */
static int split_dim(const npu_insn *in) {
  int best = -1;
  for (int d = 0; d + 1 < in->u.dma.rank; d++)
    if (in->u.dma.dim[d].count > 1 &&
        (best < 0 || in->u.dma.dim[d].local_stride > in->u.dma.dim[best].local_stride))
      best = d;
  if (best < 0) return -1;
  for (int d = 0; d < in->u.dma.rank; d++) /* the others inside one step of it */
    if (d != best && in->u.dma.dim[d].count > 1 &&
        (uint64_t)in->u.dma.dim[d].local_stride * in->u.dma.dim[d].count > in->u.dma.dim[best].local_stride)
      return -1;
  return best;
}

/* Pieces load `in` is issued as, given the first gemm's operand ranges
 * (1: unsplit); *dim: the dimension split. */
static uint32_t pieces(const npu_insn *in, const npu_target *t, const npu_brange *ga, const npu_brange *gb,
                       int *dim) {
  if (!is_load(in) || in->u.dma.rank < 2) return 1;
  int sd = split_dim(in);
  if (sd < 0) return 1;
  npu_brange r[5];
  npu_insn_ranges(in, t, r);
  const npu_brange *ld = &r[0];
  /* the part of the load the first gemm reads: only a part of its span */
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int k = 0; k < 2; k++) {
    const npu_brange *g = k ? gb : ga;
    if (!npu_brange_overlap(g, ld)) continue;
    if (g->lo < lo) lo = g->lo;
    if (g->hi > hi) hi = g->hi;
  }
  if (lo == INT64_MAX || (lo <= ld->lo && hi >= ld->hi)) return 1;
  /* pieces on 64-byte blocks of their own (the scoreboard's unit) */
  uint64_t es = cov_dtype_size(in->u.dma.dtype);
  uint64_t step = (uint64_t)in->u.dma.dim[sd].local_stride * es;
  if (in->u.dma.local_off % 64 || step % 64) return 1;
  uint32_t n = in->u.dma.dim[sd].count;
  *dim = sd;
  return n < NPU_HEAD_PIECES ? n : NPU_HEAD_PIECES;
}

/* The head's loads (instructions [0, n), all loads writing disjoint bytes,
 * as npu_hoist leaves a program's start) in the order the program first
 * reads them, stable: the first gemm's pieces of each operand, then the
 * second gemm's, and so on, then what the epilogue and the second tile
 * read. One engine serves them in issue order, so without this the first
 * gemm waited behind every piece of the operand issued first
 * (convnet_layer2 on npu-16x16-os, weights channel-major: 10 pieces of
 * weights, 100 cycles of DRAM, before the first piece of the input). */
static cov_status order_head(npu_prog *p, const npu_target *t, uint32_t n) {
  if (n < 2 || n > 256) return NULL;
  npu_brange loc[256], r[5];
  uint32_t first[256];
  for (uint32_t i = 0; i < n; i++) {
    if (!is_load(&p->insns[i])) return NULL;
    npu_insn_ranges(&p->insns[i], t, r);
    loc[i] = r[0];
    for (uint32_t j = 0; j < i; j++)
      if (npu_brange_overlap(&loc[i], &loc[j])) return NULL;
    first[i] = UINT32_MAX;
  }
  for (uint32_t q = n; q < p->n_insns; q++) {
    const npu_insn *in = &p->insns[q];
    if (is_load(in)) continue;
    int nr = npu_insn_ranges(in, t, r);
    if (in->op == NPU_OP_DMA) nr = 1; /* a store reads its on-chip side */
    for (uint32_t i = 0; i < n; i++)
      for (int k = 0; k < nr && first[i] == UINT32_MAX; k++)
        if (npu_brange_overlap(&r[k], &loc[i])) first[i] = q;
  }
  npu_insn *tmp = malloc(sizeof *tmp * n);
  if (!tmp) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  uint32_t k = 0;
  bool used[256] = {false};
  while (k < n) { /* stable selection by first reader */
    uint32_t b = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++)
      if (!used[i] && (b == UINT32_MAX || first[i] < first[b])) b = i;
    used[b] = true;
    tmp[k++] = p->insns[b];
  }
  memcpy(p->insns, tmp, sizeof *tmp * n);
  free(tmp);
  return NULL;
}

cov_status npu_split_head(npu_prog *p, const npu_target *t) {
  if (!npu_straight_line(p)) return NULL;
  uint32_t g0 = 0;
  while (g0 < p->n_insns && p->insns[g0].op != NPU_OP_GEMM) g0++;
  if (g0 == p->n_insns) return NULL;
  npu_brange gr[5];
  npu_insn_ranges(&p->insns[g0], t, gr);
  uint32_t extra = 0;
  int sd = -1;
  for (uint32_t i = 0; i < g0; i++) extra += pieces(&p->insns[i], t, &gr[0], &gr[1], &sd) - 1;
  if (!extra) return NULL;
  uint32_t n = p->n_insns;
  npu_insn *old = malloc(sizeof *old * n);
  if (!old) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  memcpy(old, p->insns, sizeof *old * n);
  p->n_insns = 0;
  cov_status st = NULL;
  for (uint32_t i = 0; i < n && !st; i++) {
    uint32_t np = i < g0 ? pieces(&old[i], t, &gr[0], &gr[1], &sd) : 1;
    if (np == 1) {
      st = npu_prog_add(p, &old[i]);
      continue;
    }
    const npu_dma_dim *d = &old[i].u.dma.dim[sd];
    uint32_t per = (d->count + np - 1) / np;
    uint64_t es = cov_dtype_size(old[i].u.dma.dtype);
    for (uint32_t j = 0; j < d->count && !st; j += per) {
      npu_insn piece = old[i];
      piece.u.dma.dim[sd].count = d->count - j < per ? d->count - j : per;
      piece.u.dma.dim[sd].start = d->start + (int32_t)j * d->step;
      piece.u.dma.local_off += (uint32_t)((uint64_t)j * d->local_stride * es);
      st = npu_prog_add(p, &piece);
    }
  }
  free(old);
  if (!st) st = order_head(p, t, g0 + extra);
  return st;
}
