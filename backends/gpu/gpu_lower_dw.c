/* backends/gpu/gpu_lower_dw.c: the depthwise convolution kernel on
 * channels-last tensors (plan.dw).
 *
 * A depthwise conv has R x S multiply-adds per output and nothing to
 * reuse across channels, so it is bound by moving the tensors, not by a
 * matrix unit: the kernel aims at reading the input and writing the output
 * once from DRAM. Thread u (neighbouring threads on neighbouring 8-channel
 * groups, then on neighbouring runs of dw_pw output pixels along a row)
 * computes dw_pw pixels x 8 channels: every access is a 16-byte vector of
 * NHWC, so a warp's loads and stores are contiguous runs; the input
 * columns of its window are loaded once per filter row and shared by the
 * run's pixels (R x ((pw - 1) * stride + S) loads for pw pixels instead of
 * R x S x pw), the re-reads by neighbouring runs and rows hit L1. The taps'
 * weights ([R][S][C]) are loaded once per thread; accumulation is f32 in
 * the tap order of the reference (r, then s); bias and activation are
 * fused and the result is rounded once to f16 (the plan's out_f16).
 * Padding reads as zero: out-of-range taps load a valid address and the
 * value is replaced by zero. */
#include "backends/gpu/gpu_ir.h"

/* <8 x f32> of the 8 channels at element index idx (16-byte aligned), zero
 * where !ok. */
static LLVMValueRef load8(gpu_gen *g, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef ok) {
  LLVMTypeRef v8h = LLVMVectorType(g->in_t, 8), v8f = LLVMVectorType(g->f32, 8);
  if (ok) idx = LLVMBuildSelect(g->b, ok, idx, C(0), "");
  LLVMValueRef v = LLVMBuildLoad2(g->b, v8h, gept(g, g->in_t, base, idx), "");
  LLVMSetAlignment(v, 16);
  v = LLVMBuildFPExt(g->b, v, v8f, "");
  return ok ? LLVMBuildSelect(g->b, ok, v, LLVMConstNull(v8f), "") : v;
}

void gpu_lower_dw(gpu_gen *g, const gpu_plan *p) {
  const gpu_problem *q = &p->prob;
  int pw = p->dw_pw, R = (int)q->cr, S = (int)q->cs, st = (int)q->stride, cols = (pw - 1) * st + S;
  long long cg = q->cc / 8, runs = (p->ow + pw - 1) / pw;
  LLVMTypeRef v8f = LLVMVectorType(g->f32, 8);
  LLVMValueRef in = LLVMGetParam(g->fn, 0), w = LLVMGetParam(g->fn, 1), out = LLVMGetParam(g->fn, 2);
  LLVMValueRef bias = LLVMGetParam(g->fn, 3);
  LLVMValueRef u = gpu_grid_index(g, p->threads);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, u, gpu_dw_units(p)), &join);
  LLVMValueRef c0 = mul(g, urem(g, u, cg), C(8)), run = udiv(g, u, cg);
  LLVMValueRef ox0 = mul(g, urem(g, run, runs), C(pw)), row = udiv(g, run, runs); /* row = n * OH + oy */
  LLVMValueRef oy = urem(g, row, p->oh), n = udiv(g, row, p->oh);
  LLVMValueRef iy0 = LLVMBuildSub(g->b, mul(g, oy, C(st)), C(q->pad), "");
  LLVMValueRef ix0 = LLVMBuildSub(g->b, mul(g, ox0, C(st)), C(q->pad), "");
  LLVMValueRef wv[64];
  for (int t = 0; t < R * S; t++) wv[t] = load8(g, w, add(g, mul(g, C(t), C(q->cc)), c0), NULL);
  LLVMValueRef acc[8];
  for (int j = 0; j < pw; j++) acc[j] = LLVMConstNull(v8f);
  for (int r = 0; r < R; r++) {
    LLVMValueRef iy = add(g, iy0, C(r)), rok = ult(g, iy, q->ch);
    LLVMValueRef rbase = mul(g, add(g, mul(g, n, C(q->ch)), iy), C(q->cw));
    for (int col = 0; col < cols; col++) {
      LLVMValueRef ix = add(g, ix0, C(col));
      LLVMValueRef x = load8(g, in, add(g, mul(g, add(g, rbase, ix), C(q->cc)), c0), and1(g, rok, ult(g, ix, q->cw)));
      for (int j = 0; j < pw; j++) {
        int s = col - j * st;
        if (s < 0 || s >= S) continue;
        acc[j] = LLVMBuildFAdd(g->b, acc[j], LLVMBuildFMul(g->b, x, wv[r * S + s], ""), "");
      }
    }
  }
  LLVMValueRef bv = q->epi.bias ? LLVMBuildLoad2(g->b, v8f, gept(g, g->f32, bias, c0), "") : NULL;
  if (bv) LLVMSetAlignment(bv, 16);
  for (int j = 0; j < pw; j++) {
    LLVMValueRef ox = add(g, ox0, C(j)), v = acc[j];
    LLVMBasicBlockRef join2 = NULL;
    if (p->ow % pw) begin_if(g, ult(g, ox, p->ow), &join2);
    if (bv) v = LLVMBuildFAdd(g->b, v, bv, "");
    for (int e = 0; e < 8; e++)
      v = LLVMBuildInsertElement(g->b, v, gpu_activation(g, &q->epi, LLVMBuildExtractElement(g->b, v, C(e), "")), C(e),
                                 "");
    LLVMValueRef h = LLVMBuildFPTrunc(g->b, v, LLVMVectorType(g->f16, 8), "");
    LLVMValueRef idx = add(g, mul(g, add(g, mul(g, row, C(p->ow)), ox), C(q->ck)), c0);
    LLVMSetAlignment(LLVMBuildStore(g->b, h, gept(g, g->f16, out, idx)), 16);
    if (join2) end_if(g, join2);
  }
  end_if(g, join);
}
