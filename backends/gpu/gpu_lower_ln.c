/* backends/gpu/gpu_lower_ln.c: the layer normalisation kernel
 * (GPU_EW_LNORM) and its thread split (gpu_lnorm.h). Every lane keeps its
 * channels in registers: x is read once, the statistics take two passes
 * over the registers, and the result is stored in x's layout or
 * channels-last ([N][W][C], `also`), f32 or f16. */
#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_lnorm.h"

static int pow2(int64_t v) { return v >= 1 && (v & (v - 1)) == 0; }

gpu_ln_map gpu_ln_map_of(const gpu_ew *e) {
  gpu_ln_map m = {0};
  if (!pow2(e->D) || e->D > GPU_EW_THREADS || e->C < 1) return m;
  int64_t steps = (e->C + e->D - 1) / e->D;
  if (steps > GPU_LN_MAX_STEPS) return m;
  m.lanes = (int)e->D, m.per_wg = GPU_EW_THREADS / m.lanes, m.steps = (int)steps, m.pixel_major = e->W > 1;
  if (m.pixel_major) m.warp_lanes = m.per_wg < 32 ? 32 / m.per_wg : 1;
  else m.warp_lanes = m.lanes < 32 ? m.lanes : 32;
  m.groups = m.lanes / m.warp_lanes;
  return m;
}

int gpu_ln_lanes(int64_t c, int64_t w) {
  int l = 1;
  while (l < GPU_EW_THREADS && (int64_t)l * 8 < c) l *= 2;
  if (w == 1 && l < 32) l = 32;
  return (c + l - 1) / l > GPU_LN_MAX_STEPS ? 0 : l;
}

int64_t gpu_ln_items(const gpu_ew *e) {
  gpu_ln_map m = gpu_ln_map_of(e);
  if (!m.lanes) return 0;
  return (e->N * e->W + m.per_wg - 1) / m.per_wg * GPU_EW_THREADS;
}

/* two sums (the mean's, the deviation's), each groups x per_wg f32 */
unsigned gpu_ln_shared_bytes(const gpu_ew *e) {
  gpu_ln_map m = gpu_ln_map_of(e);
  return m.groups > 1 ? (unsigned)(2 * m.groups * m.per_wg * 4) : 0;
}

/* The kernel's state: the split, this thread's pair slot and lane, the
 * shared sums. */
typedef struct ln_kern {
  gpu_ln_map m;
  LLVMValueRef slot, lane, smem;
} ln_kern;

/* v of the lane `mask` lanes away in the pair (thread id xor the mask
 * scaled to the thread layout). */
static LLVMValueRef exchange(gpu_gen *g, const ln_kern *k, LLVMValueRef v, int mask) {
  int tm = k->m.pixel_major ? mask * k->m.per_wg : mask;
  if (!g->target->lane_xor) return g->target->shfl_xor(g, v, tm);
  LLVMValueRef i = LLVMBuildBitCast(g->b, v, g->i32, "");
  return LLVMBuildBitCast(g->b, g->target->lane_xor(g, i, tm), g->f32, "");
}

/* The sum over the pair's lanes of v: the butterfly within a warp (every
 * lane of it gets the same sum, as a + b == b + a), then the warps' sums
 * from shared memory (array `which`) added in warp order. */
static LLVMValueRef lane_sum(gpu_gen *g, const ln_kern *k, LLVMValueRef v, int which) {
  const gpu_ln_map *m = &k->m;
  for (int mask = m->warp_lanes / 2; mask >= 1; mask /= 2) v = LLVMBuildFAdd(g->b, v, exchange(g, k, v, mask), "");
  if (m->groups == 1) return v;
  LLVMValueRef at = add(g, mul(g, udiv(g, k->lane, m->warp_lanes), C(m->per_wg)), k->slot);
  at = add(g, at, C(which * m->groups * m->per_wg));
  LLVMBasicBlockRef join;
  begin_if(g, LLVMBuildICmp(g->b, LLVMIntEQ, urem(g, k->lane, m->warp_lanes), C(0), ""), &join);
  LLVMBuildStore(g->b, v, gept(g, g->f32, k->smem, at));
  end_if(g, join);
  g->target->barrier(g);
  LLVMValueRef s = NULL;
  for (int w = 0; w < m->groups; w++) {
    LLVMValueRef i = add(g, C((which * m->groups + w) * m->per_wg), k->slot);
    LLVMValueRef t = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->smem, i), "");
    s = s ? LLVMBuildFAdd(g->b, s, t, "") : t;
  }
  return s;
}

static LLVMValueRef fsel(gpu_gen *g, LLVMValueRef ok, LLVMValueRef v) {
  return ok ? LLVMBuildSelect(g->b, ok, v, LLVMConstReal(g->f32, 0.0), "") : v;
}

cov_status gpu_lower_lnorm(gpu_gen *g, const gpu_ew *e, const char *name, LLVMValueRef x, LLVMValueRef w,
                           LLVMValueRef y, LLVMValueRef bias, LLVMValueRef y16) {
  ln_kern k = {.m = gpu_ln_map_of(e)};
  const gpu_ln_map *m = &k.m;
  if (!m->lanes || e->N * e->C * e->W > INT32_MAX)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: LayerNorm of %lld x %lld channels at %lld lanes",
                     (long long)(e->N * e->W), (long long)e->C, (long long)e->D);
  if (m->warp_lanes > 1 && !g->target->lane_xor && !g->target->shfl_xor)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: LayerNorm lanes need the target's lane exchange");
  LLVMValueRef t = g->target->thread_id(g);
  k.slot = m->pixel_major ? urem(g, t, m->per_wg) : udiv(g, t, m->lanes);
  k.lane = m->pixel_major ? udiv(g, t, m->per_wg) : urem(g, t, m->lanes);
  if (m->groups > 1) k.smem = g->target->shared_array(g, gpu_ln_shared_bytes(e));
  LLVMValueRef pair = add(g, mul(g, g->target->block_id(g, 0), C(m->per_wg)), k.slot);
  LLVMValueRef live = ult(g, pair, e->N * e->W);
  pair = LLVMBuildSelect(g->b, live, pair, C(0), ""); /* idle pairs read pair 0 and store nothing */
  LLVMValueRef o = udiv(g, pair, e->W), p = urem(g, pair, e->W), base = add(g, mul(g, o, C(e->C * e->W)), p);
  LLVMValueRef v[GPU_LN_MAX_STEPS], ok[GPU_LN_MAX_STEPS], ch[GPU_LN_MAX_STEPS];
  LLVMValueRef sum = LLVMConstReal(g->f32, 0.0);
  for (int s = 0; s < m->steps; s++) {
    ch[s] = add(g, k.lane, C((long long)s * m->lanes));
    ok[s] = (long long)(s + 1) * m->lanes > e->C ? ult(g, ch[s], e->C) : NULL; /* only the last step runs past C */
    LLVMValueRef c = ok[s] ? LLVMBuildSelect(g->b, ok[s], ch[s], C(0), "") : ch[s];
    v[s] = fsel(g, ok[s], LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, x, add(g, base, mul(g, c, C(e->W)))), ""));
    sum = LLVMBuildFAdd(g->b, sum, v[s], "");
  }
  LLVMValueRef fc = LLVMConstReal(g->f32, (double)e->C);
  LLVMValueRef mean = LLVMBuildFDiv(g->b, lane_sum(g, &k, sum, 0), fc, "");
  LLVMValueRef dev = LLVMConstReal(g->f32, 0.0);
  for (int s = 0; s < m->steps; s++) {
    LLVMValueRef d = fsel(g, ok[s], LLVMBuildFSub(g->b, v[s], mean, ""));
    dev = LLVMBuildFAdd(g->b, dev, LLVMBuildFMul(g->b, d, d, ""), "");
  }
  LLVMValueRef var = LLVMBuildFDiv(g->b, lane_sum(g, &k, dev, 1), fc, "");
  LLVMValueRef sq = LLVMBuildFAdd(g->b, var, LLVMConstReal(g->f32, e->post0), "");
  LLVMValueRef rstd = LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 1.0), gpu_call_intrinsic(g, "llvm.sqrt", &g->f32, 1, &sq, 1), "");
  LLVMBasicBlockRef in_pair;
  begin_if(g, live, &in_pair);
  for (int s = 0; s < m->steps; s++) {
    LLVMBasicBlockRef in_c = NULL;
    if (ok[s]) begin_if(g, ok[s], &in_c);
    LLVMValueRef r = LLVMBuildFMul(g->b, LLVMBuildFSub(g->b, v[s], mean, ""), rstd, "");
    r = LLVMBuildFMul(g->b, r, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, w, ch[s]), ""), "");
    r = LLVMBuildFAdd(g->b, r, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, bias, ch[s]), ""), "");
    LLVMValueRef d = e->also ? add(g, mul(g, pair, C(e->C)), ch[s]) : add(g, base, mul(g, ch[s], C(e->W)));
    if (e->rq) /* rows (W == 1) permuted */
      d = add(g, mul(g, add(g, mul(g, udiv(g, pair, e->rq), C(e->r1)), mul(g, urem(g, pair, e->rq), C(e->r0))), C(e->C)),
              ch[s]);
    if (e->out_dtype == COV_F16) LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, r, g->f16, ""), gept(g, g->f16, y, d));
    else LLVMBuildStore(g->b, r, gept(g, g->f32, y, d));
    if (y16) LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, r, g->f16, ""), gept(g, g->f16, y16, d));
    if (in_c) end_if(g, in_c);
  }
  end_if(g, in_pair);
  return NULL;
}
