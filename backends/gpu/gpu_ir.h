/* backends/gpu/gpu_ir.h: IR-building helpers shared by the kernel lowerings
 * (gpu_lower.c: GEMM / implicit-GEMM conv; gpu_lower_pool.c: pooling;
 * gpu_lower_layout.c: layout transforms): 32-bit index arithmetic, typed addresses, if / counted
 * loops, and kernel creation. Internal to backends/gpu. All index arithmetic
 * is 32-bit: plan checks bound every tensor below 2^31 elements. */
#ifndef COV_GPU_IR_H
#define COV_GPU_IR_H

#include <string.h>

#include "backends/gpu/gpu_target.h"

#define C(v) gpu_i32(g, (v))
static inline LLVMValueRef add(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildAdd(g->b, x, y, ""); }
static inline LLVMValueRef mul(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildMul(g->b, x, y, ""); }
/* The thread's index in a 1-D grid of `threads`-thread workgroups, block
 * id x threads + thread id, built in that order: as two arguments of one
 * call the two would be emitted in the order the C compiler evaluates
 * arguments, which C leaves unspecified (gcc and clang builds would write
 * different code). */
static inline LLVMValueRef gpu_grid_index(gpu_gen *g, long long threads) {
  LLVMValueRef blk = mul(g, g->target->block_id(g, 0), C(threads));
  return add(g, blk, g->target->thread_id(g));
}
static inline LLVMValueRef udiv(gpu_gen *g, LLVMValueRef x, long long d) { return LLVMBuildUDiv(g->b, x, C(d), ""); }
static inline LLVMValueRef urem(gpu_gen *g, LLVMValueRef x, long long d) { return LLVMBuildURem(g->b, x, C(d), ""); }
static inline LLVMValueRef ult(gpu_gen *g, LLVMValueRef x, long long bound) {
  return LLVMBuildICmp(g->b, LLVMIntULT, x, C(bound), "");
}
static inline LLVMValueRef and1(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildAnd(g->b, x, y, ""); }

static inline LLVMValueRef gep8(gpu_gen *g, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(g->b, g->i8, base, &off, 1, "");
}
static inline LLVMValueRef gept(gpu_gen *g, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(g->b, t, base, &idx, 1, "");
}

/* if (cond) { body } via a callback-free pair of helpers */
static inline LLVMBasicBlockRef begin_if(gpu_gen *g, LLVMValueRef cond, LLVMBasicBlockRef *join) {
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "then");
  *join = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "join");
  LLVMBuildCondBr(g->b, cond, then, *join);
  LLVMPositionBuilderAtEnd(g->b, then);
  return then;
}
static inline void end_if(gpu_gen *g, LLVMBasicBlockRef join) {
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, join);
}

/* A counted IR loop `for (i = start; i < end; i += step)`: loop_open
 * returns i and leaves the builder in the body; loop_close ends it. Used
 * where unrolling would bloat the kernel (softmax rows). */
typedef struct gpu_loop {
  LLVMBasicBlockRef pre, body, after;
  LLVMValueRef i;
  long long end, step;
} gpu_loop;
static inline LLVMValueRef loop_open(gpu_gen *g, gpu_loop *l, LLVMValueRef start, long long end, long long step) {
  l->pre = LLVMGetInsertBlock(g->b);
  l->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "loop");
  l->after = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "loop_done");
  l->end = end, l->step = step;
  LLVMBuildCondBr(g->b, ult(g, start, end), l->body, l->after);
  LLVMPositionBuilderAtEnd(g->b, l->body);
  l->i = LLVMBuildPhi(g->b, g->i32, "i");
  LLVMAddIncoming(l->i, &start, &l->pre, 1);
  return l->i;
}
/* acc: phis of loop-carried values (created by the caller in the body
 * block with their start values from l->pre), their next values in nexts;
 * returns nothing: after the call the phis' final values are read through
 * the exit block's own phis that loop_close builds into out. */
static inline void loop_close(gpu_gen *g, gpu_loop *l, int n, LLVMValueRef *phis, LLVMValueRef *nexts,
                       LLVMValueRef *starts, LLVMValueRef *out) {
  LLVMValueRef i1 = add(g, l->i, C(l->step));
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildCondBr(g->b, ult(g, i1, l->end), l->body, l->after);
  LLVMAddIncoming(l->i, &i1, &latch, 1);
  for (int j = 0; j < n; j++) LLVMAddIncoming(phis[j], &nexts[j], &latch, 1);
  LLVMPositionBuilderAtEnd(g->b, l->after);
  for (int j = 0; j < n; j++) {
    out[j] = LLVMBuildPhi(g->b, LLVMTypeOf(starts[j]), "");
    LLVMValueRef v[2] = {starts[j], nexts[j]};
    LLVMBasicBlockRef bb[2] = {l->pre, latch};
    LLVMAddIncoming(out[j], v, bb, 2);
  }
}

static inline LLVMValueRef fmax_sel(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, x, y, ""), x, y, "");
}


/* Sets the context, module and types of `g` for `target` and the plan's
 * input dtype; an error for a dtype the lowering has no type for. */
cov_status gpu_gen_init(gpu_gen *g, const gpu_plan *plan, const gpu_target_ops *target, LLVMModuleRef mod);

/* Adds kernel `name` (4 noalias pointer arguments) and a builder at its
 * entry. */
void gpu_add_kernel(gpu_gen *g, const char *name);
/* The same with n pointer arguments (at most GPU_KERNEL_MAX_PARAMS). */
enum { GPU_KERNEL_MAX_PARAMS = 64 };
void gpu_add_kernel_n(gpu_gen *g, const char *name, int n);

/* The epilogue's activation of one f32 value (gpu_lower.c). */
LLVMValueRef gpu_activation(gpu_gen *g, const gpu_epilogue *e, LLVMValueRef v);

/* The depthwise kernel of a plan.dw conv (gpu_lower_dw.c), into g->fn. */
void gpu_lower_dw(gpu_gen *g, const gpu_plan *p);

/* The standalone max pool kernel (GPU_OP_MAXPOOL), into g->fn. */
void gpu_lower_maxpool(gpu_gen *g, const gpu_plan *p);
/* The channels-last input transform NCHW -> NHWC of a conv plan, into g->fn. */
void gpu_lower_nhwc(gpu_gen *g, const gpu_plan *p);

#endif
