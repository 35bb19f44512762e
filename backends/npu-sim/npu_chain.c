/* backends/npu-sim/npu_chain.c: gemm chaining (ISA.md "Chained gemms"), run
 * on every program npu_codegen emits. */
#include "backends/npu-sim/npu_internal.h"

/* Marks consecutive gemms that continue each other: on an
 * output-stationary array a gemm accumulating into the same c tile (same
 * address, strides, m, n, capability) as the previous gemm, with no other
 * instruction touching that tile in between, keeps the partial sums in the
 * PEs (previous: hold, this: chain): no drain and preload between them. On
 * a weight-stationary array a gemm whose b block is the previous gemm's (same
 * address, strides, k, n, capability), with those bytes not written in
 * between, keeps the loaded weights (wkeep). Straight-line programs over r0
 * only (what npu_codegen emits); anything else is left unchained. The
 * simulator's dry run re-checks every chain. */
cov_status npu_chain_gemms(npu_prog *p, const npu_target *t) {
  for (uint32_t i = 0; i < p->n_insns; i++) {
    const npu_insn *in = &p->insns[i];
    if (in->op == NPU_OP_LOOP || in->op == NPU_OP_SETR || in->op == NPU_OP_ADDR) return NULL;
    if (in->op == NPU_OP_DMA && in->u.dma.local_reg != 0) return NULL;
    if (in->op == NPU_OP_GEMM && (in->u.gemm.a.reg || in->u.gemm.b.reg || in->u.gemm.c.reg ||
                                  in->u.gemm.bias.reg))
      return NULL;
    if (in->op == NPU_OP_VOP && (in->u.vop.dst.reg || in->u.vop.src1.reg || in->u.vop.src2.reg ||
                                 ((in->flags & NPU_VOP_ROWRED) && in->u.vop.sum.reg)))
      return NULL;
  }
  const cov_acg *g = t->acg;
  int64_t prev = -1;
  npu_brange pc = {-1, 0, 0}, pb = {-1, 0, 0};
  bool c_touched = false, b_written = false;
  for (uint32_t i = 0; i < p->n_insns; i++) {
    npu_insn *in = &p->insns[i];
    if (in->op == NPU_OP_DMA) {
      const acg_edge *e = &g->edges[in->unit];
      int local = e->from == t->dram ? e->to : e->from;
      uint64_t es = cov_dtype_size(in->u.dma.dtype);
      npu_brange r = {local, in->u.dma.local_off, (int64_t)in->u.dma.local_off + (int64_t)es};
      for (int d = 0; d < in->u.dma.rank; d++)
        r.hi += (int64_t)(in->u.dma.dim[d].count - 1) * in->u.dma.dim[d].local_stride * (int64_t)es;
      if (npu_brange_overlap(&r, &pc)) c_touched = true;
      if (!(in->flags & NPU_DMA_STORE) && npu_brange_overlap(&r, &pb)) b_written = true;
    } else if (in->op == NPU_OP_VOP) {
      bool red = in->flags & NPU_VOP_REDUCE;
      uint64_t ei = cov_dtype_size(in->u.vop.dtype_in), eo = cov_dtype_size(in->u.vop.dtype_out);
      npu_brange d = npu_mem_bytes(&in->u.vop.dst, in->u.vop.rows, red ? 1 : in->u.vop.cols, eo);
      npu_brange s1 = npu_mem_bytes(&in->u.vop.src1, in->u.vop.rows, in->u.vop.cols, ei);
      npu_brange s2 = in->u.vop.src2.buf == NPU_IMM_BUF
                      ? (npu_brange){-1, 0, 0}
                      : npu_mem_bytes(&in->u.vop.src2, in->u.vop.rows, in->u.vop.cols, ei);
      npu_brange sm = (in->flags & NPU_VOP_ROWRED)
                      ? npu_mem_bytes(&in->u.vop.sum, in->u.vop.rows, 1, eo)
                      : (npu_brange){-1, 0, 0};
      if (npu_brange_overlap(&d, &pc) || npu_brange_overlap(&s1, &pc) || npu_brange_overlap(&s2, &pc) ||
          npu_brange_overlap(&sm, &pc))
        c_touched = true;
      if (npu_brange_overlap(&d, &pb) || npu_brange_overlap(&sm, &pb)) b_written = true;
    } else if (in->op == NPU_OP_GEMM) {
      const acg_capability *cap = &g->compute[in->unit].caps[in->u.gemm.cap];
      uint64_t ea = cov_dtype_size(cap->in[0]), eb = cov_dtype_size(cap->n_in > 1 ? cap->in[1] : cap->in[0]);
      uint64_t eo = cov_dtype_size(cap->out);
      npu_brange ra = npu_gemm_bytes(in, 0, ea);
      npu_brange rb = npu_gemm_bytes(in, 1, eb);
      npu_brange rc = npu_gemm_bytes(in, 2, eo);
      if (prev >= 0) {
        npu_insn *q = &p->insns[prev];
        /* chaining is a systolic array's (a tile unit's accumulators live
         * in its own registers for one instruction only) */
        bool same_unit = q->unit == in->unit && q->u.gemm.cap == in->u.gemm.cap && in->unit == t->array;
        const npu_mem *c0 = &q->u.gemm.c, *c1 = &in->u.gemm.c;
        const npu_mem *b0 = &q->u.gemm.b, *b1 = &in->u.gemm.b;
        if (t->output_stationary && same_unit && !c_touched &&
            (in->flags & NPU_GEMM_ACC) && !(in->flags & NPU_GEMM_BIAS) && c0->buf == c1->buf &&
            c0->off == c1->off && c0->row_stride == c1->row_stride &&
            c0->col_stride == c1->col_stride && q->u.gemm.m == in->u.gemm.m &&
            q->u.gemm.n == in->u.gemm.n && npu_gemm_same_mdig(q, in) &&
            !npu_brange_overlap(&ra, &rc) && !npu_brange_overlap(&rb, &rc)) {
          q->flags |= NPU_GEMM_HOLD;
          in->flags |= NPU_GEMM_CHAIN;
        }
        if (!t->output_stationary && same_unit && !b_written && b0->buf == b1->buf &&
            b0->off == b1->off && b0->row_stride == b1->row_stride &&
            b0->col_stride == b1->col_stride && q->u.gemm.k == in->u.gemm.k &&
            q->u.gemm.n == in->u.gemm.n && npu_gemm_same_kdig(q, in))
          in->flags |= NPU_GEMM_WKEEP;
      }
      prev = i;
      pc = rc;
      pb = rb;
      c_touched = false;
      b_written = npu_brange_overlap(&rc, &rb);
    }
  }
  return NULL;
}
