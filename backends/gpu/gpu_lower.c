/* backends/gpu/gpu_lower.c: one contraction kernel from a gpu_plan.
 *
 * The kernel is the classic tiled GEMM, written once for every GPU target:
 *   workgroup (bx, by, bz) owns C[bz][by*bm .. +bm][bx*bn .. +bn];
 *   a `stages`-deep ring of shared-memory tiles A[bm][bk], B[bk][bn] is
 *   filled ahead of use (asynchronously where the target can), one barrier
 *   per K step guards the ring;
 *   warp w owns a wm x wn sub-tile and accumulates it in registers with the
 *   target's matrix fragments (or the shared FMA fragment);
 *   the epilogue adds the bias, applies the activation and stores (conv:
 *   into NCHW, optionally max-pooled 2x2 through an atomic max).
 * All sizes are compile-time constants of the plan, so the K loop's trip
 * count, the copy loops and the fragment loops are unrolled or folded by
 * LLVM; only the K loop is an IR loop. Index arithmetic is 32-bit: the plan
 * check bounds every tensor below 2^31 elements.
 *
 * long: transfer emits one tile's global-to-shared copy in its three forms (whole vectors, guarded elements, asynchronous) over the same index math
 * long: gpu_lower emits the kernel in the order it runs (prologue, pipelined K loop, epilogue); its LLVM values are shared across the stages
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/gpu/gpu_lower.h"

LLVMValueRef gpu_tile_addr(gpu_gen *g, const gpu_tile *t, LLVMValueRef row, LLVMValueRef col) {
  int row_bytes = t->cols * t->esize, row_chunks = row_bytes / 16;
  LLVMValueRef slab_off = NULL;
  if (t->slab) { /* slab col / slab, then column col % slab of its [rows][slab] */
    row_bytes = t->slab * t->esize, row_chunks = row_bytes / 16;
    slab_off = mul(g, udiv(g, col, t->slab), C((long long)t->rows * row_bytes));
    col = urem(g, col, t->slab);
  }
  LLVMValueRef byte = mul(g, col, C(t->esize));
  LLVMValueRef chunk = LLVMBuildLShr(g->b, byte, C(4), "");
  LLVMValueRef within = LLVMBuildAnd(g->b, byte, C(15), "");
  LLVMValueRef key; /* mirrors gpu_swizzle_chunk */
  if (row_chunks >= 8)
    key = LLVMBuildAnd(g->b, row, C(7), "");
  else
    key = LLVMBuildAnd(g->b, udiv(g, row, 8 / row_chunks), C(row_chunks - 1), "");
  LLVMValueRef swz = LLVMBuildXor(g->b, chunk, key, "");
  LLVMValueRef off = add(g, add(g, mul(g, row, C(row_bytes)), LLVMBuildShl(g->b, swz, C(4), "")), within);
  if (slab_off) off = add(g, slab_off, off);
  return gep8(g, t->base, off);
}


gpu_tile gpu_k_tile_a(kernel *k, LLVMValueRef stage) {
  gpu_gen *g = k->g;
  gpu_tile t = {gep8(g, k->smem, mul(g, stage, C(k->stage_bytes))), k->p->bm, k->p->bk, k->esize, 0};
  return t;
}
gpu_tile gpu_k_tile_b(kernel *k, LLVMValueRef stage) {
  gpu_gen *g = k->g;
  LLVMValueRef off = add(g, mul(g, stage, C(k->stage_bytes)), C(k->a_bytes));
  /* warpgroup MMAs read B as 128-byte (64-column) slabs */
  gpu_tile t = {gep8(g, k->smem, off), k->p->bk, k->p->bn, k->esize, k->p->wgmma ? 128 / k->esize : 0};
  return t;
}

/* Guarded element read: base[idx] if ok, else 0. An out-of-range element
 * reads element 0 (always valid) and is replaced by zero: no branches. */
static LLVMValueRef fetch_elem(kernel *k, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef ok) {
  gpu_gen *g = k->g;
  LLVMValueRef safe = LLVMBuildSelect(g->b, ok, idx, C(0), "");
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->in_t, gept(g, g->in_t, base, safe), "");
  return LLVMBuildSelect(g->b, ok, v, LLVMConstNull(g->in_t), "");
}

/* Element/chunk e = tid + i*threads of a copy, split as (e / width,
 * e % width); written so that when `threads` is a multiple of `width` the
 * per-thread part is visibly loop-invariant (LLVM hoists it out of the K
 * loop: the conv gather's pixel decomposition then costs nothing per tile). */
static void split(kernel *k, int i, int width, LLVMValueRef *major, LLVMValueRef *minor) {
  gpu_gen *g = k->g;
  int T = k->p->threads;
  if (T % width == 0) {
    *minor = urem(g, k->tid, width);
    *major = add(g, udiv(g, k->tid, width), C((long long)i * (T / width)));
  } else {
    LLVMValueRef e = add(g, k->tid, C((long long)i * T));
    *major = udiv(g, e, width), *minor = urem(g, e, width);
  }
}

/* Copies of K tile `kt` into stage `stage`, in up to two phases so that
 * copies through registers overlap the matrix work: FETCH reads global
 * memory into vals[] (before the compute), STORE writes vals[] to shared
 * memory (after it); FETCH|STORE does both at once (asynchronous copies,
 * which the target performs without registers, and the prologue). `valid`
 * (i1) false turns every read into a harmless in-bounds one whose value is
 * never used. Index computations a phase does not need are dead code. */
enum { FETCH = 1, STORE = 2 };
enum { MAX_STAGED = 256 };

static int n_staged(const gpu_plan *p, int esize) {
  if (p->vector_copy || p->nhwc) return (p->bm * p->bk + p->bk * p->bn) * esize / 16 / p->threads;
  return (p->bm * p->bk + p->bk * p->bn) / p->threads;
}

/* Output pixel (n, oh, ow) of conv GEMM row m: (n, oh, ow) row-major, or
 * with the pooled row order (n, py, px, dy, dx), oh = 2 py + dy, ow =
 * 2 px + dx. */
static void conv_pixel(kernel *k, LLVMValueRef m, LLVMValueRef *n, LLVMValueRef *oh, LLVMValueRef *ow) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  if (!p->pool_order) {
    LLVMValueRef pix = urem(g, m, p->oh * p->ow);
    *n = udiv(g, m, p->oh * p->ow), *oh = udiv(g, pix, p->ow), *ow = urem(g, pix, p->ow);
    return;
  }
  long long ph = p->oh / 2, pw = p->ow / 2;
  LLVMValueRef win = udiv(g, m, 4), j = urem(g, m, 4), pp = urem(g, win, ph * pw);
  *n = udiv(g, win, ph * pw);
  *oh = add(g, mul(g, udiv(g, pp, pw), C(2)), udiv(g, j, 2));
  *ow = add(g, mul(g, urem(g, pp, pw), C(2)), urem(g, j, 2));
}

/* The channels-last A gather: row `row` of the tile, 16-byte chunk `c`:
 * the input pixel of output row m0 + row shifted by K tile k0's filter tap,
 * channels c0 + 8c .. (a K tile is one tap: bk divides C). *ok is false for
 * padding and rows past M; the index is then 0 (a valid address). */
static LLVMValueRef nhwc_index(kernel *k, LLVMValueRef k0, LLVMValueRef row, LLVMValueRef c, int per,
                               LLVMValueRef *ok) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  LLVMValueRef m = add(g, k->m0, row), n, oh, ow;
  conv_pixel(k, m, &n, &oh, &ow);
  LLVMValueRef ih0 = LLVMBuildSub(g->b, mul(g, oh, C(q->stride)), C(q->pad), "");
  LLVMValueRef iw0 = LLVMBuildSub(g->b, mul(g, ow, C(q->stride)), C(q->pad), "");
  LLVMValueRef rs = udiv(g, k0, q->cc), c0 = urem(g, k0, q->cc);
  LLVMValueRef ih = add(g, ih0, mul(g, udiv(g, rs, q->cs), C(q->dilation)));
  LLVMValueRef iw = add(g, iw0, mul(g, urem(g, rs, q->cs), C(q->dilation)));
  *ok = and1(g, ult(g, m, p->M), and1(g, ult(g, ih, q->ch), ult(g, iw, q->cw)));
  LLVMValueRef pix = add(g, mul(g, add(g, mul(g, n, C(q->ch)), ih), C(q->cw)), iw);
  LLVMValueRef idx = add(g, add(g, mul(g, pix, C(q->cc)), c0), mul(g, c, C(per)));
  return LLVMBuildSelect(g->b, *ok, idx, C(0), "");
}

static void transfer(kernel *k, LLVMValueRef kt, LLVMValueRef stage, LLVMValueRef valid, int phase,
                     LLVMValueRef *vals) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  gpu_tile ta = gpu_k_tile_a(k, stage), tb = gpu_k_tile_b(k, stage);
  LLVMValueRef k0 = mul(g, kt, C(p->bk));
  int v = 0;
  if (p->vector_copy || p->nhwc) {
    int per = 16 / k->esize;
    int async = g->target->async_copy16 != NULL;
    LLVMTypeRef v4 = LLVMVectorType(g->i32, 4);
    for (int t = 0; t < 2; t++) {
      int rows = t ? p->bk : p->bm, rc = (t ? p->bn : p->bk) / per, n = rows * rc / p->threads;
      for (int i = 0; i < n; i++, v++) {
        LLVMValueRef row, c;
        split(k, i, rc, &row, &c);
        LLVMValueRef col = mul(g, c, C(per)), idx;
        if (t == 0 && p->nhwc) {
          LLVMValueRef ok;
          idx = nhwc_index(k, k0, row, c, per, &ok);
          if (valid) idx = LLVMBuildSelect(g->b, valid, idx, C(0), "");
          LLVMValueRef src = gept(g, g->in_t, k->A, idx), dst = gpu_tile_addr(g, &ta, row, col);
          if (async) {
            g->target->async_copy16_zfill(g, dst, src, ok);
            continue;
          }
          if (phase & FETCH) {
            LLVMValueRef x = LLVMBuildLoad2(g->b, v4, src, "");
            LLVMSetAlignment(x, 16);
            vals[v] = LLVMBuildSelect(g->b, ok, x, LLVMConstNull(v4), "");
          }
          if (phase & STORE) LLVMSetAlignment(LLVMBuildStore(g->b, vals[v], dst), 16);
          continue;
        }
        if (t == 0) {
          LLVMValueRef gm = add(g, add(g, mul(g, k->gidx, C(p->M)), k->m0), row);
          idx = add(g, add(g, mul(g, gm, C(p->K)), k0), col);
        } else {
          LLVMValueRef gk = add(g, add(g, mul(g, k->gidx, C(p->K)), k0), row);
          idx = add(g, add(g, mul(g, gk, C(p->N)), k->n0), col);
        }
        if (valid) idx = LLVMBuildSelect(g->b, valid, idx, C(0), "");
        LLVMValueRef src = gept(g, g->in_t, t ? k->B : k->A, idx);
        LLVMValueRef dst = gpu_tile_addr(g, t ? &tb : &ta, row, col);
        if (async) {
          g->target->async_copy16(g, dst, src);
          continue;
        }
        if (phase & FETCH) {
          vals[v] = LLVMBuildLoad2(g->b, v4, src, "");
          LLVMSetAlignment(vals[v], 16);
        }
        if (phase & STORE) LLVMSetAlignment(LLVMBuildStore(g->b, vals[v], dst), 16);
      }
    }
    return;
  }
  int a_n = p->bm * p->bk / p->threads;
  for (int i = 0; i < a_n; i++, v++) {
    /* matmul A is K-contiguous; the conv gather is contiguous along m
     * (neighbouring output pixels), so neighbouring threads take those */
    LLVMValueRef row, col;
    if (q->kind == GPU_OP_MATMUL)
      split(k, i, p->bk, &row, &col);
    else
      split(k, i, p->bm, &col, &row);
    LLVMValueRef m = add(g, k->m0, row), kk = add(g, k0, col);
    LLVMValueRef ok = and1(g, ult(g, m, p->M), ult(g, kk, p->K)), idx;
    if (q->kind == GPU_OP_MATMUL) {
      idx = add(g, mul(g, add(g, mul(g, k->gidx, C(p->M)), m), C(p->K)), kk);
    } else if (p->ktable) {
      /* implicit GEMM through the K-offset table: the pixel part is per
       * thread (hoisted), the (c, r, s) part one shared-memory read */
      LLVMValueRef n = udiv(g, m, p->oh * p->ow), pix = urem(g, m, p->oh * p->ow);
      LLVMValueRef ih0 = LLVMBuildSub(g->b, mul(g, udiv(g, pix, p->ow), C(q->stride)), C(q->pad), "");
      LLVMValueRef iw0 = LLVMBuildSub(g->b, mul(g, urem(g, pix, p->ow), C(q->stride)), C(q->pad), "");
      LLVMValueRef base = add(g, mul(g, add(g, mul(g, n, C(q->cc)), mul(g, k->gidx, C(q->cc / q->groups))),
                                        C(q->ch * q->cw)),
                              add(g, mul(g, ih0, C(q->cw)), iw0));
      /* a dummy read past the last tile stays inside the table */
      LLVMValueRef ti = valid ? LLVMBuildSelect(g->b, valid, kk, col, "") : kk;
      LLVMValueRef ent = gep8(g, k->ktable, mul(g, ti, C(8)));
      LLVMValueRef delta = LLVMBuildLoad2(g->b, g->i32, ent, "");
      LLVMValueRef packed = LLVMBuildLoad2(g->b, g->i32, gep8(g, ent, C(4)), "");
      LLVMValueRef ih = add(g, ih0, LLVMBuildLShr(g->b, packed, C(16), ""));
      LLVMValueRef iw = add(g, iw0, LLVMBuildAnd(g->b, packed, C(0xffff), ""));
      /* k beyond K carries a shift no input has, so the bounds reject it */
      ok = and1(g, ult(g, m, p->M), and1(g, ult(g, ih, q->ch), ult(g, iw, q->cw)));
      idx = add(g, base, delta);
    } else {
      /* implicit GEMM: m = (n, oh, ow), k = (c, r, s) */
      LLVMValueRef n = udiv(g, m, p->oh * p->ow), pix = urem(g, m, p->oh * p->ow);
      LLVMValueRef oh = udiv(g, pix, p->ow), ow = urem(g, pix, p->ow);
      LLVMValueRef c = udiv(g, kk, q->cr * q->cs), rs = urem(g, kk, q->cr * q->cs);
      LLVMValueRef r = udiv(g, rs, q->cs), s = urem(g, rs, q->cs);
      LLVMValueRef ih = LLVMBuildSub(g->b, add(g, mul(g, oh, C(q->stride)), mul(g, r, C(q->dilation))),
                                     C(q->pad), "");
      LLVMValueRef iw = LLVMBuildSub(g->b, add(g, mul(g, ow, C(q->stride)), mul(g, s, C(q->dilation))),
                                     C(q->pad), "");
      /* unsigned compares also reject the negative (padding) side */
      ok = and1(g, ok, and1(g, ult(g, ih, q->ch), ult(g, iw, q->cw)));
      LLVMValueRef ch = add(g, mul(g, k->gidx, C(q->cc / q->groups)), c);
      idx = add(g, mul(g, add(g, mul(g, add(g, mul(g, n, C(q->cc)), ch), C(q->ch)), ih), C(q->cw)), iw);
    }
    if (phase & FETCH) vals[v] = fetch_elem(k, k->A, idx, valid ? and1(g, ok, valid) : ok);
    if (phase & STORE) LLVMBuildStore(g->b, vals[v], gpu_tile_addr(g, &ta, row, col));
  }
  int b_n = p->bk * p->bn / p->threads;
  for (int i = 0; i < b_n; i++, v++) {
    LLVMValueRef row, col, idx;
    if (q->kind == GPU_OP_MATMUL) {
      split(k, i, p->bn, &row, &col);
      LLVMValueRef gk = add(g, add(g, mul(g, k->gidx, C(p->K)), k0), row);
      idx = add(g, mul(g, gk, C(p->N)), add(g, k->n0, col));
    } else {
      /* weights are K-contiguous (OIHW): neighbouring threads take
       * neighbouring k so the reads coalesce */
      split(k, i, p->bk, &col, &row);
      LLVMValueRef oc = add(g, mul(g, k->gidx, C(p->N)), add(g, k->n0, col));
      idx = add(g, mul(g, oc, C(p->K)), add(g, k0, row));
    }
    LLVMValueRef ok = and1(g, ult(g, add(g, k0, row), p->K), ult(g, add(g, k->n0, col), p->N));
    if (phase & FETCH) vals[v] = fetch_elem(k, k->B, idx, valid ? and1(g, ok, valid) : ok);
    if (phase & STORE) LLVMBuildStore(g->b, vals[v], gpu_tile_addr(g, &tb, row, col));
  }
}

static void compute_stage(kernel *k, LLVMValueRef stage) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_frag_ops *fr = k->fr;
  gpu_tile ta = gpu_k_tile_a(k, stage), tb = gpu_k_tile_b(k, stage);
  int n = k->nmf * k->nnf * fr->n_acc;
  LLVMValueRef acc[n];
  for (int i = 0; i < n; i++) acc[i] = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
  LLVMValueRef af[k->nmf], bf[k->nnf];
  for (int kk = 0; kk < p->bk; kk += fr->fk) {
    for (int mf = 0; mf < k->nmf; mf++) af[mf] = fr->load_a(g, &ta, add(g, k->wrow, C(mf * fr->fm)), kk);
    for (int nf = 0; nf < k->nnf; nf++) {
      LLVMValueRef col0 = add(g, k->wcol, C(nf * fr->fn));
      if (fr->load_b2 && nf + 1 < k->nnf) {
        fr->load_b2(g, &tb, kk, col0, &bf[nf]);
        nf++;
      } else {
        bf[nf] = fr->load_b(g, &tb, kk, col0);
      }
    }
    for (int mf = 0; mf < k->nmf; mf++)
      for (int nf = 0; nf < k->nnf; nf++)
        fr->mma(g, af[mf], bf[nf], &acc[(mf * k->nnf + nf) * fr->n_acc]);
  }
  for (int i = 0; i < n; i++) LLVMBuildStore(g->b, acc[i], k->acc_slots[i]);
}

/* Warpgroup MMA on stage `stage`: issues the bk/16 instructions of the
 * warpgroup's tile as one batch, which runs while the caller issues the next
 * copies; wg_stage_wait then waits until `pending` batches are left. The
 * accumulators travel in acc[] from the issue to the wait (and through the
 * slots, which become registers, to the next step). */
void gpu_k_wg_issue(kernel *k, LLVMValueRef stage, LLVMValueRef *acc) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  gpu_tile ta = gpu_k_tile_a(k, stage), tb = gpu_k_tile_b(k, stage);
  int n = p->wn / 2;
  for (int i = 0; i < n; i++) acc[i] = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
  g->target->wg_fence(g);
  for (int kk = 0; kk < p->bk; kk += p->fk) g->target->wg_mma(g, &ta, k->wg_row, &tb, k->wg_col, kk, p->wn, acc);
  g->target->wg_commit(g);
}
void gpu_k_wg_wait(kernel *k, LLVMValueRef *acc, int pending) {
  gpu_gen *g = k->g;
  int n = k->p->wn / 2;
  g->target->wg_wait(g, pending, acc, n);
  for (int i = 0; i < n; i++) LLVMBuildStore(g->b, acc[i], k->acc_slots[i]);
}

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
     * instruction */
    LLVMValueRef z = LLVMBuildFMul(g->b, v, LLVMConstReal(g->f32, 0.7071067811865476), "");
    LLVMValueRef az = gpu_call_intrinsic(g, "llvm.fabs", &g->f32, 1, &z, 1);
    LLVMValueRef t = LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 1.0),
                                   LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0),
                                                 LLVMBuildFMul(g->b, az, LLVMConstReal(g->f32, 0.3275911), ""), ""),
                                   "");
    static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
    LLVMValueRef poly = LLVMConstReal(g->f32, a[4]);
    for (int i = 3; i >= 0; i--)
      poly = LLVMBuildFAdd(g->b, LLVMBuildFMul(g->b, poly, t, ""), LLVMConstReal(g->f32, a[i]), "");
    poly = LLVMBuildFMul(g->b, poly, t, "");
    LLVMValueRef e2 = LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, az, az, ""), LLVMConstReal(g->f32, -1.4426950408889634), "");
    LLVMValueRef ex = g->target->exp2(g, e2);
    LLVMValueRef erf_abs = LLVMBuildFSub(g->b, LLVMConstReal(g->f32, 1.0), LLVMBuildFMul(g->b, poly, ex, ""), "");
    LLVMValueRef erf = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, z, zero, ""),
                                       LLVMBuildFNeg(g->b, erf_abs, ""), erf_abs, "");
    LLVMValueRef one_p = LLVMBuildFAdd(g->b, LLVMConstReal(g->f32, 1.0), erf, "");
    return LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, v, one_p, ""), LLVMConstReal(g->f32, 0.5), "");
  }
  }
  return v;
}

/* Bias and activation of the pair of accumulators i, i + 1 of fragment
 * (mf, nf) at output column col (f32 x 2). */
static LLVMValueRef epi_pair(kernel *k, int mf, int nf, int i, LLVMValueRef col) {
  gpu_gen *g = k->g;
  const gpu_problem *q = &k->p->prob;
  LLVMValueRef pair = LLVMGetUndef(LLVMVectorType(g->f32, 2));
  for (int j = 0; j < 2; j++) {
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[(mf * k->nnf + nf) * k->fr->n_acc + i + j], "");
    if (q->epi.bias)
      v = LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->bias, add(g, col, C(j))), ""), "");
    pair = LLVMBuildInsertElement(g->b, pair, gpu_activation(g, &q->epi, v), C(j), "");
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
  const gpu_plan *p = k->p;
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
          LLVMValueRef pair = epi_pair(k, mf, nf0 + j, i, add(g, col0, add(g, c, C(j * fr->fn))));
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
        LLVMValueRef idx = add(g, mul(g, add(g, mul(g, k->gidx, C(p->M)), row), C(p->N)), col);
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
  /* plan.out_f16 implies this path: tma plans divide M and N, warpgroup
   * accumulators come in pairs, wgmma tiles make N even */
  if (q->kind == GPU_OP_MATMUL && !guard && fr->acc_pairs && fr->n_acc % 2 == 0 && p->N % 2 == 0) {
    /* column pairs as one 8-byte store (N even: the pair is aligned) */
    for (int mf = 0; mf < k->nmf; mf++)
      for (int nf = 0; nf < k->nnf; nf++)
        for (int i = 0; i < fr->n_acc; i += 2) {
          LLVMValueRef r, c;
          fr->acc_coord(g, i, &r, &c);
          LLVMValueRef row = add(g, add(g, k->m0, k->wrow), add(g, r, C(mf * fr->fm)));
          LLVMValueRef col = add(g, add(g, k->n0, k->wcol), add(g, c, C(nf * fr->fn)));
          LLVMValueRef pair = epi_pair(k, mf, nf, i, col);
          LLVMValueRef idx = add(g, mul(g, add(g, mul(g, k->gidx, C(p->M)), row), C(p->N)), col);
          if (p->out_f16) { /* rounded once, stored as 4 bytes */
            LLVMValueRef h = LLVMBuildFPTrunc(g->b, pair, LLVMVectorType(g->f16, 2), "");
            LLVMSetAlignment(LLVMBuildStore(g->b, h, gept(g, g->f16, k->Cout, idx)), 4);
            continue;
          }
          LLVMSetAlignment(LLVMBuildStore(g->b, pair, gept(g, g->f32, k->Cout, idx)), 8);
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
        if (q->kind == GPU_OP_MATMUL) {
          LLVMValueRef idx = add(g, mul(g, add(g, mul(g, k->gidx, C(p->M)), row), C(p->N)), col);
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
static void stage_out(kernel *k) {
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
 * pixels are contiguous: oh*ow % 4 == 0), or with the pooled row order
 * one 2x2 window's max, stored as one pooled pixel. */
static void conv_staged_store(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  int T = p->threads, groups = p->bm / 4, units = groups * p->bn;
  LLVMTypeRef v4f = LLVMVectorType(g->f32, 4);
  for (int i = 0; i < (units + T - 1) / T; i++) {
    LLVMValueRef col, r4;
    split(k, i, groups, &col, &r4);
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
static void conv_staged_store_nhwc(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  int T = p->threads, groups = p->bn / 8, units = groups * p->bm;
  LLVMTypeRef v8f = LLVMVectorType(g->f32, 8);
  for (int i = 0; i < (units + T - 1) / T; i++) {
    LLVMValueRef cg, row;
    split(k, i, p->bm, &cg, &row);
    LLVMValueRef m = add(g, k->m0, row), c0 = mul(g, cg, C(8));
    LLVMValueRef ok = ult(g, m, p->M);
    if (units % T) ok = and1(g, ok, ult(g, cg, groups));
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
static void softmax_rows(kernel *k) {
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

/* The conv K-offset table: entry k = {c*H*W + r*d*W + s*d, (r*d) << 16 |
 * s*d} for k < K, {0, 0x7fff7fff} for the padding of the last tile; built
 * cooperatively, then a barrier. */
static void build_ktable(kernel *k, long long entries) {
  gpu_gen *g = k->g;
  const gpu_problem *q = &k->p->prob;
  long long T = k->p->threads;
  k->ktable = gep8(g, k->smem, C((long long)k->p->stages * k->stage_bytes));
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "ktable");
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "ktable_done");
  LLVMBuildCondBr(g->b, ult(g, k->tid, entries), body, after);
  LLVMPositionBuilderAtEnd(g->b, body);
  LLVMValueRef e = LLVMBuildPhi(g->b, g->i32, "e");
  LLVMValueRef c = udiv(g, e, q->cr * q->cs), rs = urem(g, e, q->cr * q->cs);
  LLVMValueRef rd = mul(g, udiv(g, rs, q->cs), C(q->dilation)), sd = mul(g, urem(g, rs, q->cs), C(q->dilation));
  LLVMValueRef in = ult(g, e, k->p->K);
  LLVMValueRef delta = add(g, add(g, mul(g, c, C(q->ch * q->cw)), mul(g, rd, C(q->cw))), sd);
  LLVMValueRef packed = LLVMBuildOr(g->b, LLVMBuildShl(g->b, rd, C(16), ""), sd, "");
  delta = LLVMBuildSelect(g->b, in, delta, C(0), "");
  packed = LLVMBuildSelect(g->b, in, packed, C(0x7fff7fff), "");
  LLVMValueRef ent = gep8(g, k->ktable, mul(g, e, C(8)));
  LLVMBuildStore(g->b, delta, ent);
  LLVMBuildStore(g->b, packed, gep8(g, ent, C(4)));
  LLVMValueRef e1 = add(g, e, C(T));
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildCondBr(g->b, ult(g, e1, entries), body, after);
  LLVMValueRef vals[2] = {k->tid, e1};
  LLVMBasicBlockRef bbs[2] = {pre, latch};
  LLVMAddIncoming(e, vals, bbs, 2);
  LLVMPositionBuilderAtEnd(g->b, after);
  g->target->barrier(g);
}

cov_status gpu_lower(const gpu_plan *plan, const gpu_target_ops *target, LLVMModuleRef mod,
                     const char *name) {
  gpu_gen gg = {0}, *g = &gg;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, plan, target, mod));
  if (plan->prob.kind == GPU_OP_MAXPOOL || plan->dw) {
    gpu_add_kernel(g, name);
    if (plan->dw)
      gpu_lower_dw(g, plan);
    else
      gpu_lower_maxpool(g, plan);
    LLVMBuildRetVoid(g->b);
    LLVMDisposeBuilder(g->b);
    return NULL;
  }
  kernel kk = {0}, *k = &kk;
  k->g = g;
  k->p = plan;
  /* warpgroup MMA: the epilogue sees a warp's accumulators as fragments */
  if (plan->wgmma && !target->wg_mma)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob), "GPU lowering: target %s has no warpgroup MMA", target->name);
  k->fr = plan->wgmma ? target->wg_acc : plan->matrix ? target->matrix_frag(plan) : gpu_fma_frag(plan->warp_size);
  if (plan->wgmma) {
    /* 16 rows of each warp, wn / 8 column blocks */
  } else if (!k->fr || k->fr->fm != plan->fm || k->fr->fn != plan->fn || k->fr->fk != plan->fk)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob),
                     "GPU lowering: target %s has no %s fragment %dx%dx%d for %s inputs", target->name,
                     plan->matrix ? "matrix" : "FMA", plan->fm, plan->fn, plan->fk,
                     cov_dtype_name(plan->prob.in_dtype));
  k->esize = (int)cov_dtype_size(plan->prob.in_dtype);
  k->a_bytes = plan->bm * plan->bk * k->esize;
  k->stage_bytes = k->a_bytes + plan->bk * plan->bn * k->esize;
  k->nmf = plan->wgmma ? 1 : plan->wm / plan->fm;
  k->nnf = plan->wgmma ? plan->wn / k->fr->fn : plan->wn / plan->fn;

  gpu_add_kernel(g, name);
  k->A = LLVMGetParam(g->fn, 0);
  k->B = LLVMGetParam(g->fn, 1);
  k->Cout = LLVMGetParam(g->fn, 2);
  k->bias = LLVMGetParam(g->fn, 3);

  int n_acc = k->nmf * k->nnf * k->fr->n_acc;
  LLVMValueRef slots[n_acc];
  k->acc_slots = slots;
  for (int i = 0; i < n_acc; i++) {
    slots[i] = LLVMBuildAlloca(g->b, g->f32, "acc");
  }
  for (int i = 0; i < n_acc; i++) LLVMBuildStore(g->b, LLVMConstReal(g->f32, 0.0), slots[i]);
  if (plan->tma) { /* the warp-specialised persistent kernel (gpu_lower_ws.c) */
    cov_status st = gpu_lower_ws(k);
    LLVMDisposeBuilder(g->b);
    return st;
  }

  k->tid = target->thread_id(g);
  g->lane = urem(g, k->tid, plan->warp_size);
  LLVMValueRef warp = udiv(g, k->tid, plan->warp_size);
  int warps_n = plan->bn / plan->wn;
  if (plan->wgmma) {
    /* warpgroups tile the workgroup tile; warp w of one holds its rows
     * 16 (w % 4) .. +16 */
    LLVMValueRef wgi = udiv(g, warp, 4);
    k->wg_row = mul(g, udiv(g, wgi, warps_n), C(plan->wm));
    k->wg_col = mul(g, urem(g, wgi, warps_n), C(plan->wn));
    k->wrow = add(g, k->wg_row, mul(g, urem(g, warp, 4), C(16)));
    k->wcol = k->wg_col;
  } else {
    k->wrow = mul(g, udiv(g, warp, warps_n), C(plan->wm));
    k->wcol = mul(g, urem(g, warp, warps_n), C(plan->wn));
  }
  /* gpu_raster, in IR */
  LLVMValueRef bx = target->block_id(g, 0), by = target->block_id(g, 1);
  long long gx = plan->grid[0], gy = plan->grid[1], grp = 8, per = grp * gx;
  LLVMValueRef pid = add(g, mul(g, by, C(gx)), bx);
  LLVMValueRef first = mul(g, udiv(g, pid, per), C(grp));
  LLVMValueRef left = LLVMBuildSub(g->b, C(gy), first, "");
  LLVMValueRef rows = LLVMBuildSelect(g->b, ult(g, left, grp), left, C(grp), "");
  LLVMValueRef in = urem(g, pid, per);
  LLVMValueRef ty = add(g, first, LLVMBuildURem(g->b, in, rows, ""));
  LLVMValueRef tx = LLVMBuildUDiv(g->b, in, rows, "");
  k->n0 = mul(g, tx, C(plan->bn));
  k->m0 = mul(g, ty, C(plan->bm));
  k->gidx = target->block_id(g, 2);
  k->smem = target->shared_array(g, plan->shared_bytes);
  if (plan->wgmma) {
    /* the swizzle pattern the instructions apply repeats every 1024 bytes
     * of address: tiles start on such a boundary (the plan has 1 KiB spare) */
    LLVMValueRef a = LLVMBuildPtrToInt(g->b, k->smem, g->i32, "");
    LLVMValueRef pad = LLVMBuildAnd(g->b, LLVMBuildSub(g->b, C(0), a, ""), C(1023), "");
    k->smem = gep8(g, k->smem, pad);
  }

  int S = plan->stages;
  long long KT = (plan->K + plan->bk - 1) / plan->bk;
  if (plan->ktable) build_ktable(k, KT * plan->bk);
  int async = target->async_copy16 != NULL && (plan->vector_copy || plan->nhwc);
  LLVMValueRef staged[MAX_STAGED];
  if (n_staged(plan, k->esize) > MAX_STAGED) {
    LLVMDisposeBuilder(g->b);
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob), "GPU lowering: %d copies per thread and tile (at most %d)",
                     n_staged(plan, k->esize), MAX_STAGED);
  }
  /* prologue: the first S-1 tiles in flight (one commit group each, even
   * when empty, so that the wait count below is uniform); S-2 when a
   * warpgroup-MMA batch stays in flight across a step and holds one more
   * stage */
  int D = plan->wgmma ? plan->wg_inflight : 0, ahead = S - 1 - D;
  for (int s = 0; s < ahead; s++) {
    if (s < KT) transfer(k, C(s), C(s), NULL, FETCH | STORE, staged);
    if (async) target->async_commit(g);
  }
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "kloop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "kdone");
  LLVMBuildBr(g->b, loop);
  LLVMPositionBuilderAtEnd(g->b, loop);
  LLVMValueRef kt = LLVMBuildPhi(g->b, g->i32, "kt");
  /* tile kt has landed once at most ahead-1 groups are pending; the
   * barrier also tells every warp that stage (kt-1-D) % S, refilled next,
   * is free */
  if (async) target->async_wait(g, ahead - 1);
  if (plan->wgmma) target->async_proxy_fence(g);
  target->barrier(g);
  LLVMValueRef next = add(g, kt, C(ahead));
  if (plan->wgmma) {
    /* the copies landed (this thread's, then everyone's after the barrier)
     * are made visible to the instructions' reads; the batch runs while the
     * copies of tile kt+ahead are issued into the stage of tile kt-1-D,
     * which every warpgroup finished with before the barrier (its wait for
     * all but D batches in the previous step) */
    LLVMValueRef acc[128];
    gpu_k_wg_issue(k, urem(g, kt, S), acc);
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, next, KT), &join);
    transfer(k, next, urem(g, next, S), NULL, FETCH | STORE, staged);
    end_if(g, join);
    target->async_commit(g);
    gpu_k_wg_wait(k, acc, D);
  } else if (async) {
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, next, KT), &join);
    transfer(k, next, urem(g, next, S), NULL, FETCH | STORE, staged);
    end_if(g, join);
    target->async_commit(g);
    compute_stage(k, urem(g, kt, S));
  } else {
    /* through registers: read tile kt+S-1 now, use tile kt, then store;
     * past the last tile the reads are dummies and the stores land in a
     * stage nobody reads again */
    transfer(k, next, urem(g, next, S), ult(g, next, KT), FETCH, staged);
    compute_stage(k, urem(g, kt, S));
    transfer(k, next, urem(g, next, S), NULL, STORE, staged);
  }
  LLVMValueRef kt1 = add(g, kt, C(1));
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildCondBr(g->b, ult(g, kt1, KT), loop, done);
  LLVMValueRef in_vals[2] = {C(0), kt1};
  LLVMBasicBlockRef in_bbs[2] = {pre, latch};
  LLVMAddIncoming(kt, in_vals, in_bbs, 2);
  LLVMPositionBuilderAtEnd(g->b, done);
  if (D) { /* the last batches */
    LLVMValueRef acc[128];
    for (int i = 0; i < plan->wn / 2; i++) acc[i] = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
    gpu_k_wg_wait(k, acc, 0);
  }
  if (plan->staged) {
    stage_out(k);
    if (plan->prob.epi.softmax)
      softmax_rows(k);
    else if (plan->prob.nhwc_io)
      conv_staged_store_nhwc(k);
    else
      conv_staged_store(k);
  } else {
    gpu_k_epilogue(k);
  }
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  if (plan->nhwc && !plan->prob.nhwc_io) {
    /* the input transform, with its own launch bounds */
    gpu_plan tp = *plan;
    tp.threads = GPU_NHWC_THREADS;
    g->plan = &tp;
    char pre_name[160];
    snprintf(pre_name, sizeof pre_name, "%s_nhwc", name);
    gpu_add_kernel(g, pre_name);
    gpu_lower_nhwc(g, &tp);
    LLVMBuildRetVoid(g->b);
    LLVMDisposeBuilder(g->b);
    g->plan = plan;
  }
  return NULL;
}
