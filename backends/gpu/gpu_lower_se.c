/* backends/gpu/gpu_lower_se.c: the squeeze-excite head (GPU_EW_SEHEAD,
 * gpu_pool.h): fc1, its activation, fc2 and its activation of one image's
 * pooled channels in one workgroup. The pooled row is staged in shared
 * memory as f32; a warp per fc1 output (lanes over the channels, a
 * butterfly of lane exchanges), the hidden row in shared memory; a thread
 * per fc2 output (the hidden row in order). */
#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_pool.h"

enum { SE_WARPS = GPU_EW_THREADS / GPU_SE_LANES };

static LLVMValueRef exchange(gpu_gen *g, LLVMValueRef v, int mask) {
  if (!g->target->lane_xor) return g->target->shfl_xor(g, v, mask);
  LLVMValueRef i = LLVMBuildBitCast(g->b, v, g->i32, "");
  return LLVMBuildBitCast(g->b, g->target->lane_xor(g, i, mask), g->f32, "");
}

static LLVMValueRef ld_f16(gpu_gen *g, LLVMValueRef base, LLVMValueRef at) {
  return LLVMBuildFPExt(g->b, LLVMBuildLoad2(g->b, g->f16, gept(g, g->f16, base, at), ""), g->f32, "");
}

static LLVMValueRef act(gpu_gen *g, gpu_ew_fn fn, float p0, float p1, LLVMValueRef v) {
  if (fn == GPU_FN_SIGMOID) { /* 1 / (1 + 2^(-x log2 e)) */
    LLVMValueRef t = g->target->exp2(g, LLVMBuildFMul(g->b, v, LLVMConstReal(g->f32, -1.4426950408889634), ""));
    return LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 1.0), LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0), t, ""), "");
  }
  gpu_epilogue ep = {.act = gpu_fn_act(fn), .clip_lo = p0, .clip_hi = p1};
  return gpu_activation(g, &ep, v);
}

/* A loop with one f32 accumulator from 0: returns the accumulator's phi
 * and leaves the builder in the body; se_sum_close ends it with the next
 * value and gives the final one. */
typedef struct se_sum {
  gpu_loop l;
  LLVMValueRef phi;
} se_sum;
static LLVMValueRef se_sum_open(gpu_gen *g, se_sum *s, LLVMValueRef start, long long end, long long step) {
  loop_open(g, &s->l, start, end, step);
  LLVMValueRef zero = LLVMConstReal(g->f32, 0.0);
  s->phi = LLVMBuildPhi(g->b, g->f32, "");
  LLVMAddIncoming(s->phi, &zero, &s->l.pre, 1);
  return s->phi;
}
static LLVMValueRef se_sum_close(gpu_gen *g, se_sum *s, LLVMValueRef next) {
  LLVMValueRef zero = LLVMConstReal(g->f32, 0.0), out;
  loop_close(g, &s->l, 1, &s->phi, &next, &zero, &out);
  return out;
}

/* fc1: warp w takes hidden outputs w, w + SE_WARPS, ...; lane l the
 * channels l, l + GPU_SE_LANES, ... of each, summed by a butterfly. Every
 * warp runs the same rounds (one past K computes row 0 and stores
 * nothing), so all lanes of the workgroup meet at each exchange. */
static void fc1(gpu_gen *g, const gpu_ew *e, LLVMValueRef *arg, LLVMValueRef sx, LLVMValueRef sh, LLVMValueRef t) {
  LLVMValueRef warp = udiv(g, t, GPU_SE_LANES), lane = urem(g, t, GPU_SE_LANES);
  gpu_loop rows;
  LLVMValueRef round = loop_open(g, &rows, C(0), (e->K + SE_WARPS - 1) / SE_WARPS, 1);
  LLVMValueRef r = add(g, warp, mul(g, round, C(SE_WARPS))), live = ult(g, r, e->K);
  r = LLVMBuildSelect(g->b, live, r, C(0), "");
  se_sum s;
  LLVMValueRef acc = se_sum_open(g, &s, lane, e->C, GPU_SE_LANES), c = s.l.i;
  LLVMValueRef w = ld_f16(g, arg[1], e->R ? add(g, mul(g, c, C(e->K)), r) : add(g, mul(g, r, C(e->C)), c));
  LLVMValueRef x = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, sx, c), "");
  acc = se_sum_close(g, &s, LLVMBuildFAdd(g->b, acc, LLVMBuildFMul(g->b, x, w, ""), ""));
  for (int m = GPU_SE_LANES / 2; m >= 1; m /= 2) acc = LLVMBuildFAdd(g->b, acc, exchange(g, acc, m), "");
  LLVMBasicBlockRef join;
  begin_if(g, and1(g, live, LLVMBuildICmp(g->b, LLVMIntEQ, lane, C(0), "")), &join);
  LLVMValueRef v = LLVMBuildFAdd(g->b, acc, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, arg[3], r), ""), "");
  LLVMBuildStore(g->b, act(g, e->post, e->post0, e->post1, v), gept(g, g->f32, sh, r));
  end_if(g, join);
  loop_close(g, &rows, 0, NULL, NULL, NULL, NULL);
}

/* fc2: thread t takes channels t, t + GPU_EW_THREADS, ..., the hidden row
 * in order. */
static void fc2(gpu_gen *g, const gpu_ew *e, LLVMValueRef *arg, LLVMValueRef sh, LLVMValueRef t, LLVMValueRef n) {
  gpu_loop chans;
  LLVMValueRef c = loop_open(g, &chans, t, e->C, GPU_EW_THREADS);
  se_sum s;
  LLVMValueRef acc = se_sum_open(g, &s, C(0), e->K, 1), r = s.l.i;
  LLVMValueRef w = ld_f16(g, arg[4], e->S ? add(g, mul(g, r, C(e->C)), c) : add(g, mul(g, c, C(e->K)), r));
  LLVMValueRef h = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, sh, r), "");
  acc = se_sum_close(g, &s, LLVMBuildFAdd(g->b, acc, LLVMBuildFMul(g->b, h, w, ""), ""));
  LLVMValueRef v = LLVMBuildFAdd(g->b, acc, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, arg[5], c), ""), "");
  v = act(g, e->mul_fn, e->mul0, e->mul1, v);
  LLVMBuildStore(g->b, v, gept(g, g->f32, arg[2], add(g, mul(g, n, C(e->C)), c)));
  loop_close(g, &chans, 0, NULL, NULL, NULL, NULL);
}

cov_status gpu_lower_se(const gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name) {
  gpu_gen gg = {0}, *g = &gg;
  gpu_plan plan = {0};
  plan.prob.in_dtype = COV_F32;
  plan.threads = GPU_EW_THREADS;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, &plan, target, mod));
  if (!gpu_se_ok(e))
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: a squeeze-excite head of %lld x %lld channels, "
                     "%lld hidden", (long long)e->N, (long long)e->C, (long long)e->K);
  if (!target->lane_xor && !target->shfl_xor)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: a squeeze-excite head needs lane exchanges");
  gpu_add_kernel_n(g, name, GPU_SE_ARGS);
  LLVMValueRef arg[GPU_SE_ARGS];
  for (int a = 0; a < GPU_SE_ARGS; a++) arg[a] = LLVMGetParam(g->fn, (unsigned)a);
  LLVMValueRef t = g->target->thread_id(g), n = g->target->block_id(g, 0);
  LLVMValueRef sx = g->target->shared_array(g, gpu_se_shared_bytes(e));
  LLVMValueRef sh = gept(g, g->f32, sx, C(e->C));
  gpu_loop ld;
  LLVMValueRef c = loop_open(g, &ld, t, e->C, GPU_EW_THREADS);
  LLVMBuildStore(g->b, ld_f16(g, arg[0], add(g, mul(g, n, C(e->C)), c)), gept(g, g->f32, sx, c));
  loop_close(g, &ld, 0, NULL, NULL, NULL, NULL);
  g->target->barrier(g);
  fc1(g, e, arg, sx, sh, t);
  g->target->barrier(g);
  fc2(g, e, arg, sh, t, n);
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  return NULL;
}
