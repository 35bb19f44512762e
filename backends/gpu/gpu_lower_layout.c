/* backends/gpu/gpu_lower_layout.c: layout-transform kernels. */
#include "backends/gpu/gpu_ir.h"

/* The channels-last input transform NCHW -> NHWC (16-bit elements, moved
 * as i16): a GPU_NHWC_TC x GPU_NHWC_TP (channels x pixels) tile per
 * workgroup through shared memory, read along pixels and written along
 * channels so both sides coalesce; rows padded by 2 elements against bank
 * conflicts. Arguments (src NCHW, unused, dst NHWC, unused). */
void gpu_lower_nhwc(gpu_gen *g, const gpu_plan *p) {
  const gpu_problem *q = &p->prob;
  long long hw = q->ch * q->cw, TC = GPU_NHWC_TC, TP = GPU_NHWC_TP, T = GPU_NHWC_THREADS, ld = TP + 2;
  LLVMValueRef src = LLVMGetParam(g->fn, 0), dst = LLVMGetParam(g->fn, 2);
  LLVMValueRef sm = g->target->shared_array(g, gpu_nhwc_shared_bytes());
  LLVMValueRef tid = g->target->thread_id(g);
  LLVMValueRef p0 = mul(g, g->target->block_id(g, 0), C(TP)), c0 = mul(g, g->target->block_id(g, 1), C(TC));
  LLVMValueRef n = g->target->block_id(g, 2);
  for (int i = 0; i < TC * TP / T; i++) {
    LLVMValueRef c = add(g, udiv(g, tid, TP), C(i * (T / TP))), px = urem(g, tid, TP);
    LLVMValueRef gc = add(g, c0, c), gp = add(g, p0, px);
    LLVMValueRef ok = and1(g, ult(g, gc, q->cc), ult(g, gp, hw));
    LLVMValueRef at = LLVMBuildSelect(g->b, ok, add(g, mul(g, add(g, mul(g, n, C(q->cc)), gc), C(hw)), gp), C(0), "");
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->i16, gept(g, g->i16, src, at), "");
    LLVMBuildStore(g->b, v, gept(g, g->i16, sm, add(g, mul(g, c, C(ld)), px)));
  }
  g->target->barrier(g);
  for (int i = 0; i < TC * TP / T; i++) {
    LLVMValueRef c = urem(g, tid, TC), px = add(g, udiv(g, tid, TC), C(i * (T / TC)));
    LLVMValueRef gc = add(g, c0, c), gp = add(g, p0, px);
    LLVMBasicBlockRef join;
    begin_if(g, and1(g, ult(g, gc, q->cc), ult(g, gp, hw)), &join);
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->i16, gept(g, g->i16, sm, add(g, mul(g, c, C(ld)), px)), "");
    LLVMBuildStore(g->b, v, gept(g, g->i16, dst, add(g, mul(g, add(g, mul(g, n, C(hw)), gp), C(q->cc)), gc)));
    end_if(g, join);
  }
}

