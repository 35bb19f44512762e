/* backends/gpu/gpu_lower_epi.c: the epilogue of a contraction kernel:
 * the activation, bias, a residual addend and stores of the
 * accumulators straight from the
 * registers (gpu_k_epilogue, f16 outputs in quads), or through shared
 * memory (gpu_k_stage_out) into NCHW or NHWC convolution outputs, and the
 * row softmax; shared by the tiled kernel (gpu_lower.c), the FMA fragment,
 * the depthwise kernel and the warp-specialised kernel. */
#include <math.h>

#include "backends/gpu/gpu_lower.h"

LLVMValueRef gpu_activation(gpu_gen *g, const gpu_epilogue *e, LLVMValueRef v) {
  LLVMValueRef zero = LLVMConstReal(g->f32, 0.0);
  switch (e->act) {
  case GPU_ACT_NONE: return v;
  case GPU_ACT_RELU: /* select, not maxnum: -0.0 must become +0.0 for the pooled atomic max */
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, v, zero, ""), v, zero, "");
  case GPU_ACT_CLIP: {
    LLVMValueRef lo = LLVMConstReal(g->f32, e->clip_lo), hi = LLVMConstReal(g->f32, e->clip_hi);
    v = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, v, lo, ""), v, lo, "");
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, v, hi, ""), v, hi, "");
  }
  case GPU_ACT_GELU: {
    /* 0.5 x (1 + erf(x / sqrt 2)); erf by Abramowitz & Stegun 7.1.26
     * (absolute error below 1.5e-7), exp through the target's exp2
     * instruction; the polynomial's products and sums may fuse (fma:
     * NVPTX otherwise keeps every mul.rn and add.rn apart), far inside
     * the formula's own error. */
    LLVMValueRef z = LLVMBuildFMul(g->b, v, LLVMConstReal(g->f32, 0.7071067811865476), "");
    LLVMValueRef az = gpu_call_intrinsic(g, "llvm.fabs", &g->f32, 1, &z, 1);
    LLVMValueRef den = LLVMBuildFMul(g->b, az, LLVMConstReal(g->f32, 0.3275911), "");
    LLVMSetFastMathFlags(den, LLVMFastMathAllowContract);
    den = LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0), den, "");
    LLVMSetFastMathFlags(den, LLVMFastMathAllowContract);
    LLVMValueRef t = LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 1.0), den, "");
    static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
    LLVMValueRef poly = LLVMConstReal(g->f32, a[4]);
    for (int i = 3; i >= 0; i--) {
      LLVMValueRef pm = LLVMBuildFMul(g->b, poly, t, "");
      LLVMSetFastMathFlags(pm, LLVMFastMathAllowContract);
      poly = LLVMBuildFAdd(g->b, pm, LLVMConstReal(g->f32, a[i]), "");
      LLVMSetFastMathFlags(poly, LLVMFastMathAllowContract);
    }
    poly = LLVMBuildFMul(g->b, poly, t, "");
    LLVMValueRef e2 = LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, az, az, ""), LLVMConstReal(g->f32, -1.4426950408889634), "");
    LLVMValueRef ex = g->target->exp2(g, e2);
    LLVMValueRef erf_abs = LLVMBuildFSub(g->b, LLVMConstReal(g->f32, 1.0), LLVMBuildFMul(g->b, poly, ex, ""), "");
    LLVMValueRef erf = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, z, zero, ""),
                                       LLVMBuildFNeg(g->b, erf_abs, ""), erf_abs, "");
    LLVMValueRef one_p = LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0), erf, "");
    return LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, v, one_p, ""), LLVMConstReal(g->f32, 0.5), "");
  }
  case GPU_ACT_GELU_TANH: {
    /* 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3); tanh |u| = 1 -
     * 2 / (e^(2|u|) + 1) through the target's exp2 (1 once it overflows),
     * its sign restored */
    LLVMValueRef x3 = LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, v, v, ""), v, "");
    LLVMValueRef u = LLVMBuildFMul(g->b, LLVMConstReal(g->f32, 0.7978845608028654),
                                   LLVMBuildFAdd(g->b, v, LLVMBuildFMul(g->b, x3, LLVMConstReal(g->f32, 0.044715), ""), ""),
                                   "");
    LLVMValueRef au = gpu_call_intrinsic(g, "llvm.fabs", &g->f32, 1, &u, 1);
    LLVMValueRef ex = g->target->exp2(g, LLVMBuildFMul(g->b, au, LLVMConstReal(g->f32, 2.8853900817779268), ""));
    LLVMValueRef th = LLVMBuildFSub(g->b, LLVMConstReal(g->f32, 1.0),
                                    LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 2.0),
                                                  LLVMBuildFAdd(g->b, ex, LLVMConstReal(g->f32, 1.0), ""), ""),
                                    "");
    th = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, u, zero, ""), LLVMBuildFNeg(g->b, th, ""), th, "");
    LLVMValueRef one_p = LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0), th, "");
    return LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, v, one_p, ""), LLVMConstReal(g->f32, 0.5), "");
  }
  case GPU_ACT_SILU: { /* x / (1 + 2^(-x log2 e)) */
    LLVMValueRef t = g->target->exp2(g, LLVMBuildFMul(g->b, v, LLVMConstReal(g->f32, -1.4426950408889634), ""));
    return LLVMBuildFDiv(g->b, v, LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0), t, ""), "");
  }
  case GPU_ACT_HSWISH: case GPU_ACT_HSIGMOID: { /* clip(a x + b, 0, 1), times x for hard_swish */
    int sw = e->act == GPU_ACT_HSWISH;
    LLVMValueRef t = LLVMBuildFAdd(g->b, LLVMBuildFMul(g->b, v, LLVMConstReal(g->f32, sw ? 1.0 / 6.0 : e->clip_lo), ""),
                                   LLVMConstReal(g->f32, sw ? 0.5 : e->clip_hi), "");
    LLVMValueRef one = LLVMConstReal(g->f32, 1.0);
    t = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, t, zero, ""), zero, t, "");
    t = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, t, one, ""), one, t, "");
    return sw ? LLVMBuildFMul(g->b, t, v, "") : t;
  }
  }
  return v;
}

/* The matmul output element (row, col) of batch k->gidx: its index (the
 * row permuted where plan.out_rq says); a conv's with prob.nhwc_out
 * (one group: row = pixel, col = channel, NHWC). */
static LLVMValueRef out_index(kernel *k, LLVMValueRef row, LLVMValueRef col) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  if (p->out_rq)
    row = add(g, mul(g, udiv(g, row, p->out_rq), C(p->out_r1)), mul(g, urem(g, row, p->out_rq), C(p->out_r0)));
  return add(g, mul(g, add(g, mul(g, k->gidx, C(p->M)), row), C(p->N)), col);
}

/* A matmul's residual addend (epi.residual) added to v, the output element
 * at index idx after bias and activation. */
static LLVMValueRef add_residual(kernel *k, LLVMValueRef v, LLVMValueRef idx) {
  gpu_gen *g = k->g;
  if (!k->p->prob.epi.residual) return v;
  return LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->resid, idx), ""), "");
}

/* Bias, activation and residual addend of the pair of accumulators i,
 * i + 1 of fragment (mf, nf) at output row `row`, column col (f32 x 2). */
static LLVMValueRef epi_pair(kernel *k, int mf, int nf, int i, LLVMValueRef row, LLVMValueRef col) {
  gpu_gen *g = k->g;
  const gpu_problem *q = &k->p->prob;
  LLVMValueRef pair = LLVMGetUndef(LLVMVectorType(g->f32, 2));
  for (int j = 0; j < 2; j++) {
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[(mf * k->nnf + nf) * k->fr->n_acc + i + j], "");
    if (q->epi.bias)
      v = LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->bias, add(g, col, C(j))), ""), "");
    v = gpu_activation(g, &q->epi, v);
    if (q->epi.residual) v = add_residual(k, v, out_index(k, row, add(g, col, C(j))));
    pair = LLVMBuildInsertElement(g->b, pair, v, C(j), "");
  }
  return pair;
}

/* f16 outputs of m16n8 accumulator fragments as 16-byte stores: the four
 * lanes of a quad hold a row's column pairs 2t, 2t + 1 (t = lane % 4) of
 * four consecutive 8-column fragments; a 4 x 4 transpose inside the quad
 * (two exchanges of 4-byte values by xor shuffles) gives lane t all eight
 * columns of fragment t, stored as one 16-byte vector, so a warp's store
 * fills 64 contiguous bytes of each of 8 rows: whole 32-byte sectors
 * (2-byte pairs stored directly fill half of each, and the memory system
 * then merges partial sectors). */
static void store_f16_quads(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_frag_ops *fr = k->fr;
  LLVMValueRef t = urem(g, g->lane, 4);
  LLVMValueRef hi[3] = {NULL, LLVMBuildICmp(g->b, LLVMIntNE, LLVMBuildAnd(g->b, t, C(1), ""), C(0), ""),
                        LLVMBuildICmp(g->b, LLVMIntNE, LLVMBuildAnd(g->b, t, C(2), ""), C(0), "")};
  LLVMTypeRef v2h = LLVMVectorType(g->f16, 2), v4 = LLVMVectorType(g->i32, 4);
  for (int mf = 0; mf < k->nmf; mf++)
    for (int nf0 = 0; nf0 < k->nnf; nf0 += 4)
      for (int i = 0; i < fr->n_acc; i += 2) {
        LLVMValueRef r, c, x[4];
        fr->acc_coord(g, i, &r, &c);
        LLVMValueRef row = add(g, add(g, k->m0, k->wrow), add(g, r, C(mf * fr->fm)));
        LLVMValueRef col0 = add(g, add(g, k->n0, k->wcol), C(nf0 * fr->fn));
        for (int j = 0; j < 4; j++) {
          LLVMValueRef pair = epi_pair(k, mf, nf0 + j, i, row, add(g, col0, add(g, c, C(j * fr->fn))));
          x[j] = LLVMBuildBitCast(g->b, LLVMBuildFPTrunc(g->b, pair, v2h, ""), g->f32, "");
        }
        /* exchange m: element (lane t, slot j) with bit m of t != bit m of
         * j moves to (t ^ m, j ^ m); after m = 1 and m = 2, slot j of lane
         * t holds lane j's slot t */
        for (int m = 1; m <= 2; m++)
          for (int j = 0; j < 4; j++) {
            if (j & m) continue;
            LLVMValueRef send = LLVMBuildSelect(g->b, hi[m], x[j], x[j | m], "");
            LLVMValueRef got = g->target->shfl_xor(g, send, m);
            x[j] = LLVMBuildSelect(g->b, hi[m], got, x[j], "");
            x[j | m] = LLVMBuildSelect(g->b, hi[m], x[j | m], got, "");
          }
        LLVMValueRef vec = LLVMGetUndef(v4);
        for (int j = 0; j < 4; j++)
          vec = LLVMBuildInsertElement(g->b, vec, LLVMBuildBitCast(g->b, x[j], g->i32, ""), C(j), "");
        LLVMValueRef col = add(g, col0, mul(g, t, C(fr->fn)));
        LLVMValueRef idx = out_index(k, row, col);
        LLVMSetAlignment(LLVMBuildStore(g->b, vec, gept(g, g->f16, k->Cout, idx)), 16);
      }
}

void gpu_k_epilogue(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  const gpu_frag_ops *fr = k->fr;
  int guard = p->M % p->bm || p->N % p->bn;
  if (p->out_f16 && !guard && fr->acc_pairs && fr->n_acc % 2 == 0 && fr->fn == 8 && k->nnf % 4 == 0 &&
      p->N % 8 == 0 && g->target->shfl_xor) {
    store_f16_quads(k);
    return;
  }
  /* tma plans divide M and N, warpgroup accumulators come in pairs,
   * wgmma tiles make N even: their f16 outputs take this path or the one
   * above; the tiled kernel's f16 outputs at ragged edges the last one */
  int rows = q->kind == GPU_OP_MATMUL || q->nhwc_out;
  if (rows && (!guard || q->nhwc_out) && fr->acc_pairs && fr->n_acc % 2 == 0 && p->N % 2 == 0) {
    /* column pairs as one 8-byte store (N even: the pair is aligned, and
     * at a ragged edge wholly inside or outside) */
    for (int mf = 0; mf < k->nmf; mf++)
      for (int nf = 0; nf < k->nnf; nf++)
        for (int i = 0; i < fr->n_acc; i += 2) {
          LLVMValueRef r, c;
          fr->acc_coord(g, i, &r, &c);
          LLVMValueRef row = add(g, add(g, k->m0, k->wrow), add(g, r, C(mf * fr->fm)));
          LLVMValueRef col = add(g, add(g, k->n0, k->wcol), add(g, c, C(nf * fr->fn)));
          LLVMBasicBlockRef join = NULL;
          if (guard) begin_if(g, and1(g, ult(g, row, p->M), ult(g, col, p->N)), &join);
          LLVMValueRef pair = epi_pair(k, mf, nf, i, row, col);
          LLVMValueRef idx = out_index(k, row, col);
          if (p->out_f16) { /* rounded once, stored as 4 bytes */
            LLVMValueRef h = LLVMBuildFPTrunc(g->b, pair, LLVMVectorType(g->f16, 2), "");
            LLVMSetAlignment(LLVMBuildStore(g->b, h, gept(g, g->f16, k->Cout, idx)), 4);
          } else {
            LLVMSetAlignment(LLVMBuildStore(g->b, pair, gept(g, g->f32, k->Cout, idx)), 8);
          }
          if (guard) end_if(g, join);
        }
    return;
  }
  for (int mf = 0; mf < k->nmf; mf++)
    for (int nf = 0; nf < k->nnf; nf++)
      for (int i = 0; i < fr->n_acc; i++) {
        LLVMValueRef r, c;
        fr->acc_coord(g, i, &r, &c);
        LLVMValueRef row = add(g, add(g, k->m0, k->wrow), add(g, r, C(mf * fr->fm)));
        LLVMValueRef col = add(g, add(g, k->n0, k->wcol), add(g, c, C(nf * fr->fn)));
        LLVMBasicBlockRef join = NULL;
        if (guard) begin_if(g, and1(g, ult(g, row, p->M), ult(g, col, p->N)), &join);
        LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[(mf * k->nnf + nf) * fr->n_acc + i], "");
        LLVMValueRef ch = q->kind == GPU_OP_CONV2D ? add(g, mul(g, k->gidx, C(p->N)), col) : col;
        if (q->epi.bias)
          v = LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->bias, ch), ""), "");
        v = gpu_activation(g, &q->epi, v);
        if (rows) {
          LLVMValueRef idx = out_index(k, row, col);
          v = add_residual(k, v, idx);
          if (p->out_f16) /* rounded once */
            LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, v, g->f16, ""), gept(g, g->f16, k->Cout, idx));
          else
            LLVMBuildStore(g->b, v, gept(g, g->f32, k->Cout, idx));
        } else if (!q->epi.maxpool2x2) {
          LLVMValueRef n = udiv(g, row, p->oh * p->ow), pix = urem(g, row, p->oh * p->ow);
          LLVMValueRef idx = add(g, mul(g, add(g, mul(g, n, C(q->ck)), ch), C(p->oh * p->ow)), pix);
          LLVMBuildStore(g->b, v, gept(g, g->f32, k->Cout, idx));
        } else {
          long long ph = p->oh / 2, pw = p->ow / 2;
          LLVMValueRef n = udiv(g, row, p->oh * p->ow), pix = urem(g, row, p->oh * p->ow);
          LLVMValueRef py = udiv(g, udiv(g, pix, p->ow), 2), px = udiv(g, urem(g, pix, p->ow), 2);
          LLVMBasicBlockRef join2;
          begin_if(g, and1(g, ult(g, py, ph), ult(g, px, pw)), &join2);
          LLVMValueRef idx = add(g, mul(g, add(g, mul(g, add(g, mul(g, n, C(q->ck)), ch), C(ph)), py), C(pw)), px);
          /* values are >= +0.0 here, so their bit patterns order like the
           * floats and an unsigned max reduces them exactly */
          LLVMValueRef bits = LLVMBuildBitCast(g->b, v, g->i32, "");
          LLVMBuildAtomicRMW(g->b, LLVMAtomicRMWBinOpUMax, gept(g, g->i32, k->Cout, idx), bits,
                             LLVMAtomicOrderingMonotonic, 0);
          end_if(g, join2);
        }
        if (guard) end_if(g, join);
      }
}

/* The staged epilogue: every accumulator, biased and activated, to the
 * column-major shared tile Cs[col * cstride + row] (local coordinates);
 * then the stores read it back. */
void gpu_k_stage_out(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  const gpu_frag_ops *fr = k->fr;
  /* every warp has finished with the last stage before it is overwritten
   * (no copies are pending: the last tile's group was awaited) */
  g->target->barrier(g);
  for (int mf = 0; mf < k->nmf; mf++)
    for (int nf = 0; nf < k->nnf; nf++)
      for (int i = 0; i < fr->n_acc; i++) {
        LLVMValueRef r, c;
        fr->acc_coord(g, i, &r, &c);
        LLVMValueRef row = add(g, k->wrow, add(g, r, C(mf * fr->fm)));
        LLVMValueRef col = add(g, k->wcol, add(g, c, C(nf * fr->fn)));
        LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[(mf * k->nnf + nf) * fr->n_acc + i], "");
        if (q->epi.bias) {
          LLVMValueRef gcol = add(g, k->n0, col);
          LLVMValueRef ch = q->kind == GPU_OP_CONV2D ? add(g, mul(g, k->gidx, C(p->N)), gcol) : gcol;
          /* columns past N (a softmax tile wider than the row) read bias 0's slot */
          ch = LLVMBuildSelect(g->b, ult(g, gcol, p->N), ch, C(0), "");
          v = LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->bias, ch), ""), "");
        }
        v = gpu_activation(g, &q->epi, v);
        LLVMValueRef off = add(g, mul(g, col, C(p->cstride)), row);
        LLVMBuildStore(g->b, v, gept(g, g->f32, k->smem, off));
      }
  g->target->barrier(g);
}

/* conv: 4 consecutive rows of one column per thread and step, neighbouring
 * threads on neighbouring row groups: NCHW stores of 16 bytes (the 4
 * pixels are contiguous: oh*ow % 4 == 0), the residual addend's 4 pixels
 * added first (epi.residual, read as 16 bytes too), or with the pooled
 * row order one 2x2 window's max, stored as one pooled pixel. */
void gpu_k_conv_staged_store(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  int T = p->threads, groups = p->bm / 4, units = groups * p->bn;
  LLVMTypeRef v4f = LLVMVectorType(g->f32, 4);
  for (int i = 0; i < (units + T - 1) / T; i++) {
    LLVMValueRef col, r4;
    gpu_k_split(k, i, groups, &col, &r4);
    LLVMValueRef m = add(g, k->m0, mul(g, r4, C(4))), gcol = add(g, k->n0, col);
    LLVMValueRef ok = and1(g, ult(g, m, p->M), ult(g, gcol, p->N));
    if (units % T) ok = and1(g, ok, ult(g, col, p->bn));
    LLVMBasicBlockRef join;
    begin_if(g, ok, &join);
    LLVMValueRef x = LLVMBuildLoad2(g->b, v4f, gept(g, g->f32, k->smem, add(g, mul(g, col, C(p->cstride)), mul(g, r4, C(4)))), "");
    LLVMSetAlignment(x, 16);
    LLVMValueRef ch = add(g, mul(g, k->gidx, C(p->N)), gcol);
    if (!p->pool_order) {
      long long hw = p->oh * p->ow;
      LLVMValueRef idx = add(g, mul(g, add(g, mul(g, udiv(g, m, hw), C(q->ck)), ch), C(hw)), urem(g, m, hw));
      if (q->epi.residual) { /* the addend's 4 pixels, laid out as the output */
        LLVMValueRef r = LLVMBuildLoad2(g->b, v4f, gept(g, g->f32, k->resid, idx), "");
        LLVMSetAlignment(r, 16);
        x = LLVMBuildFAdd(g->b, x, r, "");
      }
      LLVMSetAlignment(LLVMBuildStore(g->b, x, gept(g, g->f32, k->Cout, idx)), 16);
    } else {
      long long pp = (p->oh / 2) * (p->ow / 2);
      LLVMValueRef e[4];
      for (int j = 0; j < 4; j++) e[j] = LLVMBuildExtractElement(g->b, x, C(j), "");
      LLVMValueRef mx = fmax_sel(g, fmax_sel(g, e[0], e[1]), fmax_sel(g, e[2], e[3]));
      LLVMValueRef win = udiv(g, m, 4);
      LLVMValueRef idx = add(g, mul(g, add(g, mul(g, udiv(g, win, pp), C(q->ck)), ch), C(pp)), urem(g, win, pp));
      LLVMBuildStore(g->b, mx, gept(g, g->f32, k->Cout, idx));
    }
    end_if(g, join);
  }
}

/* conv with channels-last f16 outputs (prob.nhwc_io): 8 channels of one
 * pixel per thread and step, rounded once and stored as 16 bytes of NHWC
 * (N = K channels, so row m's channels are contiguous). Neighbouring
 * threads take neighbouring rows: a warp's reads of the column-major tile
 * are 32 consecutive floats per channel, free of bank conflicts. */
void gpu_k_conv_staged_store_nhwc(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  int T = p->threads, groups = p->bn / 8, units = groups * p->bm;
  LLVMTypeRef v8f = LLVMVectorType(g->f32, 8);
  for (int i = 0; i < (units + T - 1) / T; i++) {
    LLVMValueRef cg, row;
    gpu_k_split(k, i, p->bm, &cg, &row);
    LLVMValueRef m = add(g, k->m0, row), c0 = mul(g, cg, C(8));
    LLVMValueRef ok = ult(g, m, p->M);
    if (units % T) ok = and1(g, ok, ult(g, cg, groups));
    if (p->N % p->bn) ok = and1(g, ok, ult(g, add(g, k->n0, c0), p->N)); /* N a multiple of 8 */
    LLVMBasicBlockRef join;
    begin_if(g, ok, &join);
    LLVMValueRef x = LLVMGetUndef(v8f);
    for (int j = 0; j < 8; j++) {
      LLVMValueRef off = add(g, mul(g, add(g, c0, C(j)), C(p->cstride)), row);
      x = LLVMBuildInsertElement(g->b, x, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->smem, off), ""), C(j), "");
    }
    LLVMValueRef h = LLVMBuildFPTrunc(g->b, x, LLVMVectorType(g->f16, 8), "");
    LLVMValueRef idx = add(g, mul(g, m, C(p->prob.ck)), add(g, mul(g, k->gidx, C(p->N)), add(g, k->n0, c0)));
    LLVMSetAlignment(LLVMBuildStore(g->b, h, gept(g, g->f16, k->Cout, idx)), 16);
    end_if(g, join);
  }
}

/* matmul + softmax over whole rows (grid[0] == 1, so n0 == 0): a thread per
 * row finds its max and 1/sum of exp (IR loops over the N columns), then
 * all threads write exp(v - max) / sum with neighbouring threads on
 * neighbouring columns. */
void gpu_k_softmax_rows(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  int T = p->threads;
  LLVMValueRef stats = gept(g, g->f32, k->smem, C((long long)p->bn * p->cstride));
  LLVMValueRef log2e = LLVMConstReal(g->f32, 1.4426950408889634);
  for (int i = 0; i * T < p->bm; i++) {
    LLVMValueRef row = add(g, k->tid, C((long long)i * T));
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, row, p->bm), &join);
    /* pass 1: max */
    gpu_loop l;
    LLVMValueRef ninf = LLVMConstReal(g->f32, -INFINITY), zero = LLVMConstReal(g->f32, 0.0), mx, sum;
    LLVMValueRef c = loop_open(g, &l, C(0), p->N, 1);
    LLVMValueRef acc = LLVMBuildPhi(g->b, g->f32, "mx");
    LLVMAddIncoming(acc, &ninf, &l.pre, 1);
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->smem, add(g, mul(g, c, C(p->cstride)), row)), "");
    LLVMValueRef nx = fmax_sel(g, v, acc);
    loop_close(g, &l, 1, &acc, &nx, &ninf, &mx);
    /* pass 2: sum of exp2((v - max) log2 e) */
    c = loop_open(g, &l, C(0), p->N, 1);
    acc = LLVMBuildPhi(g->b, g->f32, "sum");
    LLVMAddIncoming(acc, &zero, &l.pre, 1);
    v = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->smem, add(g, mul(g, c, C(p->cstride)), row)), "");
    LLVMValueRef ex = g->target->exp2(g, LLVMBuildFMul(g->b, LLVMBuildFSub(g->b, v, mx, ""), log2e, ""));
    nx = LLVMBuildFAdd(g->b, acc, ex, "");
    loop_close(g, &l, 1, &acc, &nx, &zero, &sum);
    LLVMBuildStore(g->b, mx, gept(g, g->f32, stats, row));
    LLVMBuildStore(g->b, LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 1.0), sum, ""),
                   gept(g, g->f32, stats, add(g, row, C(p->bm))));
    end_if(g, join);
  }
  g->target->barrier(g);
  gpu_loop l;
  LLVMValueRef e = loop_open(g, &l, k->tid, (long long)p->bm * p->N, T);
  LLVMValueRef row = udiv(g, e, p->N), col = urem(g, e, p->N), m = add(g, k->m0, row);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, m, p->M), &join);
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->smem, add(g, mul(g, col, C(p->cstride)), row)), "");
  LLVMValueRef mx = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, stats, row), "");
  LLVMValueRef inv = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, stats, add(g, row, C(p->bm))), "");
  LLVMValueRef ex = g->target->exp2(g, LLVMBuildFMul(g->b, LLVMBuildFSub(g->b, v, mx, ""), log2e, ""));
  LLVMValueRef idx = add(g, mul(g, add(g, mul(g, k->gidx, C(p->M)), m), C(p->N)), col);
  LLVMBuildStore(g->b, LLVMBuildFMul(g->b, ex, inv, ""), gept(g, g->f32, k->Cout, idx));
  end_if(g, join);
  loop_close(g, &l, 0, NULL, NULL, NULL, NULL);
}
