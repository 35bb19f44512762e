/* backends/npu-sim/npu_hoist.c: DRAM loads issued ahead of the work before
 * them, run on every program npu_codegen emits (after npu_chain_gemms).
 *
 * The code generator emits a tile's loads where the schedule places them:
 * just before the tile's compute, after the previous tile's epilogue and
 * store. Units run in program order, so the next tile's input waited on
 * its engine (and, when the DRAM interface served transfers in issue order,
 * for the previous tile's store, which waited for its epilogue, which waited
 * for its gemms): double buffering (two tiles at different addresses) bought
 * nothing. Here every
 * load moves up past each earlier instruction that neither reads nor writes
 * the bytes it writes (nor, for a store, the DRAM bytes it reads), so it
 * issues as soon as the half of its double buffer is free: the overlap the
 * mapper's cost model charges double-buffered transfers for. Results are
 * those of program order (only independent instructions are reordered); the
 * verifier's dry run and the simulator's scoreboard check the program as
 * emitted. Straight-line programs over r0 only (what npu_codegen emits). */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"

/* How far back (instructions) a load looks for where to issue: its double
 * buffer's other half is reused within a tile or two, far below this. */
#define HOIST_WINDOW 4096

/* The on-chip bytes a DMA touches, and the DRAM bytes (buf = dram). */
static void dma_ranges(const npu_insn *in, const npu_target *t, npu_brange *local, npu_brange *dram) {
  const acg_edge *e = &t->acg->edges[in->unit];
  uint64_t es = cov_dtype_size(in->u.dma.dtype);
  *local = (npu_brange){e->from == t->dram ? e->to : e->from, in->u.dma.local_off,
                        (int64_t)in->u.dma.local_off + (int64_t)es};
  *dram = (npu_brange){t->dram, (int64_t)in->u.dma.dram_off, (int64_t)in->u.dma.dram_off + (int64_t)es};
  for (int d = 0; d < in->u.dma.rank; d++) {
    const npu_dma_dim *dd = &in->u.dma.dim[d];
    local->hi += (int64_t)(dd->count - 1) * dd->local_stride * (int64_t)es;
    /* coordinates visited, clipped to the tensor (padding reads nothing) */
    int64_t c0 = dd->start, c1 = dd->start + (int64_t)(dd->count - 1) * dd->step;
    if (c0 > c1) {
      int64_t x = c0;
      c0 = c1;
      c1 = x;
    }
    if (c0 < 0) c0 = 0;
    if (c1 > (int64_t)dd->extent - 1) c1 = (int64_t)dd->extent - 1;
    if (c1 < c0) c1 = c0;
    dram->lo += c0 * dd->dram_stride * (int64_t)es;
    dram->hi += c1 * dd->dram_stride * (int64_t)es;
  }
}

/* Up to 5 ranges an instruction touches (reads and writes alike). */
int npu_insn_ranges(const npu_insn *in, const npu_target *t, npu_brange *r) {
  const cov_acg *g = t->acg;
  if (in->op == NPU_OP_DMA) {
    dma_ranges(in, t, &r[0], &r[1]);
    return 2;
  }
  if (in->op == NPU_OP_GEMM) {
    const acg_capability *cap = &g->compute[in->unit].caps[in->u.gemm.cap];
    uint64_t ea = cov_dtype_size(cap->in[0]), eb = cov_dtype_size(cap->in[1]);
    uint64_t eo = cov_dtype_size(cap->out);
    r[0] = npu_gemm_bytes(in, 0, ea);
    r[1] = npu_gemm_bytes(in, 1, eb);
    r[2] = npu_gemm_bytes(in, 2, eo);
    r[3] = (in->flags & NPU_GEMM_BIAS) ? npu_mem_bytes(&in->u.gemm.bias, 1, in->u.gemm.n, eo)
                                       : (npu_brange){-1, 0, 0};
    return 4;
  }
  if (in->op == NPU_OP_VOP) {
    bool red = in->flags & NPU_VOP_REDUCE;
    uint64_t ei = cov_dtype_size(in->u.vop.dtype_in), eo = cov_dtype_size(in->u.vop.dtype_out);
    r[0] = npu_mem_bytes(&in->u.vop.dst, in->u.vop.rows, red ? 1 : in->u.vop.cols, eo);
    r[1] = npu_mem_bytes(&in->u.vop.src1, in->u.vop.rows, in->u.vop.cols, ei);
    r[2] = !npu_vop_reads_src2(in)
               ? (npu_brange){-1, 0, 0} /* not read */
               : npu_mem_bytes(&in->u.vop.src2, in->u.vop.rows, in->u.vop.cols, ei);
    r[3] = (in->flags & NPU_VOP_ROWRED) ? npu_mem_bytes(&in->u.vop.sum, in->u.vop.rows, 1, eo)
                                      : (npu_brange){-1, 0, 0};
    return 4;
  }
  return 0;
}

bool npu_straight_line(const npu_prog *p) {
  if (npu_prog_cores(p) > 1) return false; /* the passes reorder one stream */
  for (uint32_t i = 0; i < p->n_insns; i++) {
    const npu_insn *in = &p->insns[i];
    if (in->op == NPU_OP_LOOP || in->op == NPU_OP_SETR || in->op == NPU_OP_ADDR ||
        in->op == NPU_OP_BARRIER || in->op == NPU_OP_SYNC)
      return false;
    if (in->op == NPU_OP_DMA && in->u.dma.local_reg != 0) return false;
    if (in->op == NPU_OP_DMA && in->u.dma.dram_reg != 0) return false;
    if (in->op == NPU_OP_GEMM && (in->u.gemm.a.reg || in->u.gemm.b.reg || in->u.gemm.c.reg ||
                                  in->u.gemm.bias.reg))
      return false;
    if (in->op == NPU_OP_VOP && (in->u.vop.dst.reg || in->u.vop.src1.reg || in->u.vop.src2.reg ||
                                 ((in->flags & NPU_VOP_ROWRED) && in->u.vop.sum.reg)))
      return false;
  }
  return true;
}

/* Whether the load (its on-chip range ld, its DRAM range dr) may issue
 * before instruction q: q neither touches ld nor writes dr. */
static bool independent(const npu_insn *q, const npu_target *t, const npu_brange *ld, const npu_brange *dr) {
  npu_brange r[5];
  int n = npu_insn_ranges(q, t, r);
  for (int k = 0; k < n; k++) {
    if (q->op == NPU_OP_DMA && k == 1) { /* q's DRAM side: only its writes matter */
      if ((q->flags & NPU_DMA_STORE) && npu_brange_overlap(&r[1], dr)) return false;
      continue;
    }
    if (npu_brange_overlap(&r[k], ld)) return false;
  }
  return true;
}

static bool is_load(const npu_insn *in) {
  return in->op == NPU_OP_DMA && !(in->flags & NPU_DMA_STORE);
}

/* The loads the program starts with (every DMA before its first compute
 * instruction), in the order the first gemm needs them, where they write
 * disjoint bytes (no order among them to keep). On a weight-stationary
 * array the gemm loads its weights (b) before it streams a: with b's
 * transfer first the load overlaps a's transfer, where b behind a started
 * the load only when both had arrived (convnet_layer1 on npu-16x16: its
 * input window is b, 1,536 bytes, behind the 540 bytes of filters it
 * streams, whose 30 strided runs take 30 cycles of DRAM: 17 cycles before
 * the first gemm). Then a, c and the bias, then the rest (the epilogue's
 * operands, the second tile's). DRAM serves transfers ready at once in issue order,
 * so issue order is this order. Stable within each class. */
static void order_first_loads(npu_prog *p, const npu_target *t) {
  if (t->output_stationary) return;
  uint32_t n = 0, g = 0;
  while (n < p->n_insns && p->insns[n].op == NPU_OP_DMA) n++;
  for (g = n; g < p->n_insns && p->insns[g].op != NPU_OP_GEMM; g++)
    ;
  if (n < 2 || n > 64 || g >= p->n_insns) return;
  npu_brange loc[64], dr, gr[4];
  for (uint32_t i = 0; i < n; i++) {
    if (!is_load(&p->insns[i])) return;
    dma_ranges(&p->insns[i], t, &loc[i], &dr);
    for (uint32_t j = 0; j < i; j++)
      if (npu_brange_overlap(&loc[i], &loc[j])) return;
  }
  const npu_insn *gm = &p->insns[g];
  const acg_capability *cap = &t->acg->compute[gm->unit].caps[gm->u.gemm.cap];
  gr[0] = npu_gemm_bytes(gm, 1, cov_dtype_size(cap->in[1]));
  gr[1] = npu_gemm_bytes(gm, 0, cov_dtype_size(cap->in[0]));
  gr[2] = npu_gemm_bytes(gm, 2, cov_dtype_size(cap->out));
  gr[3] = (gm->flags & NPU_GEMM_BIAS) ? npu_mem_bytes(&gm->u.gemm.bias, 1, gm->u.gemm.n, cov_dtype_size(cap->out))
                                      : (npu_brange){-1, 0, 0};
  npu_insn sorted[64];
  uint32_t k = 0;
  for (int cls = 0; cls < 3; cls++) /* b; a, c, bias; the rest */
    for (uint32_t i = 0; i < n; i++) {
      int c = 2;
      for (int r = 3; r >= 0; r--)
        if (npu_brange_overlap(&loc[i], &gr[r])) c = r == 0 ? 0 : 1;
      if (c == cls) sorted[k++] = p->insns[i];
    }
  memcpy(p->insns, sorted, sizeof sorted[0] * n);
}

cov_status npu_hoist_loads(npu_prog *p, const npu_target *t) {
  if (p->n_insns < 2 || !npu_straight_line(p)) return NULL;
  uint32_t n = p->n_insns;
  uint32_t *order = malloc(sizeof *order * n);
  npu_insn *out = malloc(sizeof *out * n);
  if (!order || !out) {
    free(order);
    free(out);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  uint32_t len = 0;
  for (uint32_t i = 0; i < n; i++) {
    const npu_insn *in = &p->insns[i];
    uint32_t at = len;
    if (is_load(in)) {
      npu_brange ld, dr;
      dma_ranges(in, t, &ld, &dr);
      uint32_t stop = len > HOIST_WINDOW ? len - HOIST_WINDOW : 0;
      while (at > stop && independent(&p->insns[order[at - 1]], t, &ld, &dr)) {
        /* Loads keep their order, as an engine runs its transfers in
         * issue order and DRAM serves, of transfers ready at once, the
         * earlier issued first (the next tile's load went ahead of this
         * tile's: shufflenet's
         * stem pool and convnet_layer1 started their first compute one
         * tile's load late), unless the earlier load waits where this one
         * need not: on a non-load instruction just above it. */
        if (is_load(&p->insns[order[at - 1]]) &&
            (at - 1 == stop || is_load(&p->insns[order[at - 2]]) ||
             !independent(&p->insns[order[at - 2]], t, &ld, &dr)))
          break;
        at--;
      }
    }
    memmove(order + at + 1, order + at, sizeof *order * (len - at));
    order[at] = i;
    len++;
  }
  for (uint32_t i = 0; i < n; i++) out[i] = p->insns[order[i]];
  memcpy(p->insns, out, sizeof *out * n);
  free(order);
  free(out);
  order_first_loads(p, t);
  return NULL;
}
