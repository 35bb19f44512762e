/* backends/npu-sim/npu_head.c: the loads the first gemm waits for, split
 * into pieces so that it starts on the first piece (run on every program
 * npu_codegen emits, after npu_hoist_loads).
 *
 * Nothing runs on the array until the first gemm's operands are on chip,
 * and the simulator's scoreboard (ISA.md "Timing") makes a reader wait for
 * every 64-byte block of its operand's span: a gemm that reads one part
 * of a tile still waits for a DMA that writes the whole tile. Where the
 * first gemm reads only the first part of a load (an output-stationary
 * chain folded at whole groups of channels, map_gemm.c os_k_digits: its
 * first gemm reads one group of the input tile), the load is issued as
 * pieces along its outermost dimension, in order, each on blocks of its
 * own: the first gemm waits for the first piece's bursts and latency, the
 * later gemms of the chain for theirs, which arrive while it runs
 * (convnet_layer2 on npu-16x16-os: the input tile's 10 channels, 8 bursts
 * each, first gemm at cycle 289 instead of 361).
 *
 * Only dimensions that are not part of a DRAM run are split (rank >= 2,
 * the outermost), so the pieces cost the DRAM interface what the whole
 * load did; at most NPU_HEAD_PIECES pieces. Results are those of the
 * program before: the same bytes, written before any instruction that
 * reads them, by one engine in issue order. The mapper's cost model
 * charges the head as one load's occupancy and latency, the longest
 * (map_cost.c first_fill), not the sum of the loads before the first
 * gemm: convnet_layer2's 280 predicted against 361 simulated before the
 * pieces, 289 after. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"

#define NPU_HEAD_PIECES 16

static bool is_load(const npu_insn *in) {
  return in->op == NPU_OP_DMA && !(in->flags & NPU_DMA_STORE);
}

/* Pieces load `in` is issued as, given the first gemm's operand ranges
 * (1: unsplit). */
static uint32_t pieces(const npu_insn *in, const npu_target *t, const npu_brange *ga, const npu_brange *gb) {
  if (!is_load(in) || in->u.dma.rank < 2 || in->u.dma.dim[0].count < 2) return 1;
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
  uint64_t step = (uint64_t)in->u.dma.dim[0].local_stride * es;
  if (in->u.dma.local_off % 64 || step % 64) return 1;
  uint32_t n = in->u.dma.dim[0].count;
  return n < NPU_HEAD_PIECES ? n : NPU_HEAD_PIECES;
}

cov_status npu_split_head(npu_prog *p, const npu_target *t) {
  if (!npu_straight_line(p)) return NULL;
  uint32_t g0 = 0;
  while (g0 < p->n_insns && p->insns[g0].op != NPU_OP_GEMM) g0++;
  if (g0 == p->n_insns) return NULL;
  npu_brange gr[5];
  npu_insn_ranges(&p->insns[g0], t, gr);
  uint32_t extra = 0;
  for (uint32_t i = 0; i < g0; i++) extra += pieces(&p->insns[i], t, &gr[0], &gr[1]) - 1;
  if (!extra) return NULL;
  uint32_t n = p->n_insns;
  npu_insn *old = malloc(sizeof *old * n);
  if (!old) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  memcpy(old, p->insns, sizeof *old * n);
  p->n_insns = 0;
  cov_status st = NULL;
  for (uint32_t i = 0; i < n && !st; i++) {
    uint32_t np = i < g0 ? pieces(&old[i], t, &gr[0], &gr[1]) : 1;
    if (np == 1) {
      st = npu_prog_add(p, &old[i]);
      continue;
    }
    const npu_dma_dim *d = &old[i].u.dma.dim[0];
    uint32_t per = (d->count + np - 1) / np;
    uint64_t es = cov_dtype_size(old[i].u.dma.dtype);
    for (uint32_t j = 0; j < d->count && !st; j += per) {
      npu_insn piece = old[i];
      piece.u.dma.dim[0].count = d->count - j < per ? d->count - j : per;
      piece.u.dma.dim[0].start = d->start + (int32_t)j * d->step;
      piece.u.dma.local_off += (uint32_t)((uint64_t)j * d->local_stride * es);
      st = npu_prog_add(p, &piece);
    }
  }
  free(old);
  return st;
}
