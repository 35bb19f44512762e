/* backends/gpu/gpu_lower_pool.c: the standalone pooling kernel. */
#include <math.h>

#include "backends/gpu/gpu_ir.h"

/* The standalone max pool: thread per NCHW output element, the window's
 * taps unrolled; padding reads as -inf (torch's max_pool2d). */
void gpu_lower_maxpool(gpu_gen *g, const gpu_plan *p) {
  const gpu_problem *q = &p->prob;
  LLVMValueRef in = LLVMGetParam(g->fn, 0), out = LLVMGetParam(g->fn, 2);
  LLVMValueRef tid = g->target->thread_id(g);
  LLVMValueRef idx = add(g, mul(g, g->target->block_id(g, 0), C(p->threads)), tid);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, idx, p->M), &join);
  LLVMValueRef ow = urem(g, idx, p->ow), t = udiv(g, idx, p->ow), oh = urem(g, t, p->oh), nc = udiv(g, t, p->oh);
  LLVMValueRef base = mul(g, nc, C(q->ch * q->cw));
  LLVMValueRef ih0 = LLVMBuildSub(g->b, mul(g, oh, C(q->stride)), C(q->pad), "");
  LLVMValueRef iw0 = LLVMBuildSub(g->b, mul(g, ow, C(q->stride)), C(q->pad), "");
  LLVMValueRef ninf = LLVMConstReal(g->f32, -INFINITY), mx = ninf;
  for (int r = 0; r < q->cr; r++)
    for (int s = 0; s < q->cs; s++) {
      LLVMValueRef ih = add(g, ih0, C(r)), iw = add(g, iw0, C(s));
      LLVMValueRef ok = and1(g, ult(g, ih, q->ch), ult(g, iw, q->cw));
      LLVMValueRef at = LLVMBuildSelect(g->b, ok, add(g, base, add(g, mul(g, ih, C(q->cw)), iw)), C(0), "");
      LLVMValueRef v = LLVMBuildLoad2(g->b, g->in_t, gept(g, g->in_t, in, at), "");
      if (g->in_t != g->f32) v = LLVMBuildFPExt(g->b, v, g->f32, "");
      mx = fmax_sel(g, LLVMBuildSelect(g->b, ok, v, ninf, ""), mx);
    }
  LLVMBuildStore(g->b, mx, gept(g, g->f32, out, idx));
  end_if(g, join);
}

