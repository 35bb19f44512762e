/* backends/gpu/gpu_lower_pool.c: the standalone pooling kernel and the
 * pooling kernels of compiled models (gpu_pool.h). */
#include <math.h>

#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_pool.h"

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


/* ---- the pooling kernels of compiled models (gpu_pool.h) --------------- */

enum { GPOOL_UNROLL = 4 }; /* pixels a lane loads before it adds them: loads in flight */

static int64_t pow2_at_least(int64_t v, int64_t cap) {
  int64_t p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
}

gpu_gpool_map gpu_gpool_map_of(const gpu_ew *e) {
  gpu_gpool_map m = {0};
  if (e->N < 1 || e->C < 1 || e->H < 1 || e->W < 1) return m;
  m.vec = e->in_dtype == COV_F16 && e->C % 8 == 0 ? 8 : 1;
  int64_t vecs = e->C / m.vec, lanes = pow2_at_least(e->H * e->W, GPU_EW_THREADS);
  int64_t need = GPU_EW_THREADS / pow2_at_least(vecs, GPU_EW_THREADS); /* lanes that leave no slot idle */
  m.lanes = (int)(lanes > need ? lanes : need);
  m.slots = GPU_EW_THREADS / m.lanes;
  m.blocks = (vecs + m.slots - 1) / m.slots;
  return m;
}

int gpu_maxpool_vec8(const gpu_ew *e) { return e->in_dtype == COV_F16 && e->out_dtype == COV_F16 && e->C % 8 == 0; }

int64_t gpu_pool_items(const gpu_ew *e) {
  if (e->kind == GPU_EW_GAVGPOOL) return e->N * gpu_gpool_map_of(e).blocks * GPU_EW_THREADS;
  return e->N * e->C * e->P * e->Q / (gpu_maxpool_vec8(e) ? 8 : 1);
}

unsigned gpu_pool_shared_bytes(const gpu_ew *e) {
  return e->kind == GPU_EW_GAVGPOOL ? (unsigned)(GPU_EW_THREADS * gpu_gpool_map_of(e).vec * 4) : 0;
}

/* The vec channels of x at element `at` as f32 (NHWC f16: one 16-byte
 * load of 8), each 0 where ok is false. */
static void load_f32(gpu_gen *g, int f16, int vec, LLVMValueRef x, LLVMValueRef at, LLVMValueRef ok, LLVMValueRef fill,
                     LLVMValueRef *v) {
  if (ok) at = LLVMBuildSelect(g->b, ok, at, C(0), "");
  LLVMTypeRef et = f16 ? g->f16 : g->f32;
  if (vec == 1) {
    v[0] = LLVMBuildLoad2(g->b, et, gept(g, et, x, at), "");
  } else {
    LLVMValueRef l = LLVMBuildLoad2(g->b, LLVMVectorType(et, (unsigned)vec), gept(g, et, x, at), "");
    LLVMSetAlignment(l, 16);
    for (int k = 0; k < vec; k++) v[k] = LLVMBuildExtractElement(g->b, l, C(k), "");
  }
  for (int k = 0; k < vec; k++) {
    if (f16) v[k] = LLVMBuildFPExt(g->b, v[k], g->f32, "");
    if (ok) v[k] = LLVMBuildSelect(g->b, ok, v[k], fill, "");
  }
}

/* Each lane's sums over its pixels (lane, lane + lanes, ...), GPOOL_UNROLL
 * pixels an iteration, added in pixel order. base: the element of pixel 0
 * of the thread's first channel; px: elements between pixels. */
static void lane_sums(gpu_gen *g, const gpu_ew *e, const gpu_gpool_map *m, LLVMValueRef x, LLVMValueRef base,
                      int64_t px, LLVMValueRef lane, LLVMValueRef *acc) {
  int64_t hw = e->H * e->W;
  LLVMValueRef zero = LLVMConstReal(g->f32, 0.0), phi[8], next[8], start[8];
  gpu_loop l;
  LLVMValueRef p0 = loop_open(g, &l, lane, hw, (long long)m->lanes * GPOOL_UNROLL);
  for (int k = 0; k < m->vec; k++) {
    start[k] = zero;
    phi[k] = LLVMBuildPhi(g->b, g->f32, "");
    LLVMAddIncoming(phi[k], &zero, &l.pre, 1);
    next[k] = phi[k];
  }
  LLVMValueRef v[GPOOL_UNROLL][8];
  for (int u = 0; u < GPOOL_UNROLL; u++) { /* the loads first, then the adds in order */
    LLVMValueRef p = add(g, p0, C((long long)u * m->lanes));
    LLVMValueRef ok = u ? LLVMBuildICmp(g->b, LLVMIntULT, p, C(hw), "") : NULL;
    load_f32(g, e->in_dtype == COV_F16, m->vec, x, add(g, base, mul(g, p, C(px))), ok, zero, v[u]);
  }
  for (int u = 0; u < GPOOL_UNROLL; u++)
    for (int k = 0; k < m->vec; k++) next[k] = LLVMBuildFAdd(g->b, next[k], v[u][k], "");
  loop_close(g, &l, m->vec, phi, next, start, acc);
}

static void lower_gavg(gpu_gen *g, const gpu_ew *e, LLVMValueRef x, LLVMValueRef y) {
  gpu_gpool_map m = gpu_gpool_map_of(e);
  int nhwc = e->in_dtype == COV_F16;
  int64_t hw = e->H * e->W, row = (int64_t)m.slots * m.vec;
  LLVMValueRef t = g->target->thread_id(g), blk = g->target->block_id(g, 0);
  LLVMValueRef slot = nhwc ? urem(g, t, m.slots) : udiv(g, t, m.lanes);
  LLVMValueRef lane = nhwc ? udiv(g, t, m.slots) : urem(g, t, m.lanes);
  LLVMValueRef n = udiv(g, blk, m.blocks), c0 = mul(g, add(g, mul(g, urem(g, blk, m.blocks), C(m.slots)), slot), C(m.vec));
  LLVMValueRef live = ult(g, c0, e->C), cs = LLVMBuildSelect(g->b, live, c0, C(0), ""); /* idle slots read channel 0 */
  LLVMValueRef base = nhwc ? add(g, mul(g, n, C(hw * e->C)), cs) : mul(g, add(g, mul(g, n, C(e->C)), cs), C(hw));
  LLVMValueRef acc[8];
  lane_sums(g, e, &m, x, base, nhwc ? e->C : 1, lane, acc);
  LLVMValueRef smem = g->target->shared_array(g, gpu_pool_shared_bytes(e));
  LLVMValueRef at = add(g, mul(g, lane, C(row)), mul(g, slot, C(m.vec)));
  for (int k = 0; k < m.vec; k++) LLVMBuildStore(g->b, acc[k], gept(g, g->f32, smem, add(g, at, C(k))));
  g->target->barrier(g);
  for (int half = m.lanes / 2; half >= 1; half /= 2) {
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, lane, half), &join);
    for (int k = 0; k < m.vec; k++) {
      LLVMValueRef d = gept(g, g->f32, smem, add(g, at, C(k)));
      LLVMValueRef o = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, smem, add(g, at, C(half * row + k))), "");
      LLVMBuildStore(g->b, LLVMBuildFAdd(g->b, LLVMBuildLoad2(g->b, g->f32, d, ""), o, ""), d);
    }
    end_if(g, join);
    g->target->barrier(g);
  }
  LLVMBasicBlockRef done;
  begin_if(g, and1(g, live, LLVMBuildICmp(g->b, LLVMIntEQ, lane, C(0), "")), &done);
  LLVMValueRef fhw = LLVMConstReal(g->f32, (double)hw), out = add(g, mul(g, n, C(e->C)), c0);
  for (int k = 0; k < m.vec; k++) {
    LLVMValueRef s = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, smem, add(g, at, C(k))), "");
    LLVMValueRef v = LLVMBuildFDiv(g->b, s, fhw, ""), at_y = add(g, out, C(k));
    if (e->out_dtype == COV_F16) LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, v, g->f16, ""), gept(g, g->f16, y, at_y));
    else LLVMBuildStore(g->b, v, gept(g, g->f32, y, at_y));
  }
  end_if(g, done);
}

/* MAXPOOL's thread i: its output element and the window's max. Threads
 * run in NHWC order (8 channels a thread with vec8) where both sides are
 * NHWC, else in NCHW order, so neighbouring threads read neighbouring
 * columns of an NCHW input (an NHWC f16 store then scatters 2-byte
 * writes, which L2 merges; strided f32 reads would cost a sector each). */
static void lower_max(gpu_gen *g, const gpu_ew *e, LLVMValueRef x, LLVMValueRef y) {
  int v8 = gpu_maxpool_vec8(e), vec = v8 ? 8 : 1, in_cl = e->in_dtype == COV_F16, out_cl = e->out_dtype == COV_F16;
  LLVMValueRef i = gpu_grid_index(g, GPU_EW_THREADS);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, i, gpu_pool_items(e)), &join);
  LLVMValueRef n, c, p, q, t;
  if (in_cl && out_cl) {
    int64_t cv = e->C / vec;
    c = mul(g, urem(g, i, cv), C(vec)), t = udiv(g, i, cv);
    q = urem(g, t, e->Q), t = udiv(g, t, e->Q), p = urem(g, t, e->P), n = udiv(g, t, e->P);
  } else {
    q = urem(g, i, e->Q), t = udiv(g, i, e->Q), p = urem(g, t, e->P), t = udiv(g, t, e->P);
    c = urem(g, t, e->C), n = udiv(g, t, e->C);
  }
  LLVMValueRef ih0 = LLVMBuildSub(g->b, mul(g, p, C(e->sh)), C(e->pt), "");
  LLVMValueRef iw0 = LLVMBuildSub(g->b, mul(g, q, C(e->sw)), C(e->pl), "");
  LLVMValueRef ninf = LLVMConstReal(g->f32, -INFINITY), mx[8], v[8];
  for (int k = 0; k < vec; k++) mx[k] = ninf;
  for (int r = 0; r < e->R; r++)
    for (int s = 0; s < e->S; s++) {
      LLVMValueRef ih = add(g, ih0, C(r)), iw = add(g, iw0, C(s));
      LLVMValueRef ok = and1(g, ult(g, ih, e->H), ult(g, iw, e->W)), at;
      if (in_cl) at = add(g, mul(g, add(g, mul(g, add(g, mul(g, n, C(e->H)), ih), C(e->W)), iw), C(e->C)), c);
      else at = add(g, mul(g, add(g, mul(g, add(g, mul(g, n, C(e->C)), c), C(e->H)), ih), C(e->W)), iw);
      load_f32(g, in_cl, vec, x, at, ok, ninf, v);
      for (int k = 0; k < vec; k++) mx[k] = fmax_sel(g, v[k], mx[k]);
    }
  LLVMValueRef o = out_cl ? add(g, mul(g, add(g, mul(g, add(g, mul(g, n, C(e->P)), p), C(e->Q)), q), C(e->C)), c) : i;
  if (!out_cl) {
    LLVMBuildStore(g->b, mx[0], gept(g, g->f32, y, o));
  } else if (!v8) {
    LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, mx[0], g->f16, ""), gept(g, g->f16, y, o));
  } else {
    LLVMTypeRef vt = LLVMVectorType(g->f16, 8);
    LLVMValueRef out = LLVMGetUndef(vt);
    for (int k = 0; k < 8; k++) out = LLVMBuildInsertElement(g->b, out, LLVMBuildFPTrunc(g->b, mx[k], g->f16, ""), C(k), "");
    LLVMSetAlignment(LLVMBuildStore(g->b, out, gept(g, g->f16, y, o)), 16);
  }
  end_if(g, join);
}

cov_status gpu_lower_pool_ew(gpu_gen *g, const gpu_ew *e, const char *name, LLVMValueRef x, LLVMValueRef y) {
  int gavg = e->kind == GPU_EW_GAVGPOOL;
  int64_t in = e->N * e->C * e->H * e->W, out = gavg ? e->N * e->C : e->N * e->C * e->P * e->Q;
  int ok = e->N >= 1 && e->C >= 1 && e->H >= 1 && e->W >= 1 && in <= INT32_MAX && out <= INT32_MAX;
  if (!gavg) ok = ok && e->P >= 1 && e->Q >= 1 && e->R >= 1 && e->S >= 1 && e->R * e->S <= 256 && e->sh >= 1 && e->sw >= 1;
  if (!ok)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: a pool of %lldx%lldx%lldx%lld (32-bit indices, windows up to 256 taps)",
                     (long long)e->N, (long long)e->C, (long long)e->H, (long long)e->W);
  if (gavg) lower_gavg(g, e, x, y);
  else lower_max(g, e, x, y);
  return NULL;
}

int gpu_se_ok(const gpu_ew *e) {
  return e->N >= 1 && e->C >= 1 && e->K >= 1 && e->C <= GPU_SE_MAX_C && e->K <= GPU_SE_MAX_K && e->N * e->C <= INT32_MAX;
}

unsigned gpu_se_shared_bytes(const gpu_ew *e) { return (unsigned)((e->C + e->K) * 4); }
