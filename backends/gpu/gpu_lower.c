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
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/gpu/gpu_lower.h"

/* Guarded element read: base[idx] if ok, else 0. An out-of-range element
 * reads element 0 (always valid) and is replaced by zero: no branches. */
static LLVMValueRef fetch_elem(kernel *k, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef ok) {
  gpu_gen *g = k->g;
  LLVMValueRef safe = LLVMBuildSelect(g->b, ok, idx, C(0), "");
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->in_t, gept(g, g->in_t, base, safe), "");
  return LLVMBuildSelect(g->b, ok, v, LLVMConstNull(g->in_t), "");
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

/* Channels-last K tile kt: its filter tap (r * S + s) and first channel;
 * a tap takes cdiv(C, bk) tiles (gpu_k_tiles). */
static void nhwc_tap(kernel *k, LLVMValueRef kt, LLVMValueRef *rs, LLVMValueRef *c0) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  long long per_tap = (p->prob.cc + p->bk - 1) / p->bk;
  *rs = udiv(g, kt, per_tap);
  *c0 = mul(g, urem(g, kt, per_tap), C(p->bk));
}

/* The channels-last A gather: row `row` of the tile, 16-byte chunk `c`:
 * the input pixel of output row m0 + row shifted by filter tap rs,
 * channels c0 + 8c .. . *ok is false for padding, rows past M and channels
 * past C; the index is then 0 (a valid address). */
static LLVMValueRef nhwc_index(kernel *k, LLVMValueRef rs, LLVMValueRef c0, LLVMValueRef row, LLVMValueRef c,
                               int per, LLVMValueRef *ok) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  LLVMValueRef m = add(g, k->m0, row), n, oh, ow;
  conv_pixel(k, m, &n, &oh, &ow);
  LLVMValueRef ih0 = LLVMBuildSub(g->b, mul(g, oh, C(q->stride)), C(q->pad), "");
  LLVMValueRef iw0 = LLVMBuildSub(g->b, mul(g, ow, C(q->stride)), C(q->pad), "");
  LLVMValueRef ih = add(g, ih0, mul(g, udiv(g, rs, q->cs), C(q->dilation)));
  LLVMValueRef iw = add(g, iw0, mul(g, urem(g, rs, q->cs), C(q->dilation)));
  LLVMValueRef ch = add(g, c0, mul(g, c, C(per)));
  *ok = and1(g, ult(g, m, p->M), and1(g, ult(g, ih, q->ch), ult(g, iw, q->cw)));
  if (q->cc % p->bk) *ok = and1(g, *ok, ult(g, ch, q->cc));
  LLVMValueRef pix = add(g, mul(g, add(g, mul(g, n, C(q->ch)), ih), C(q->cw)), iw);
  return LLVMBuildSelect(g->b, *ok, add(g, mul(g, pix, C(q->cc)), ch), C(0), "");
}

/* The channels-last B copy: row `row` of the tile (channel c0 + row of
 * filter tap rs in the [R][S][C][K] weights), 16-byte chunk `c` of its
 * columns. *ok is NULL where every chunk is inside the weights (C and N
 * multiples of the tiles), else false for channels past C and columns
 * past N; the index is then 0. */
static LLVMValueRef nhwc_b_index(kernel *k, LLVMValueRef rs, LLVMValueRef c0, LLVMValueRef row, LLVMValueRef c,
                                 int per, LLVMValueRef *ok) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  LLVMValueRef ch = add(g, c0, row), col = add(g, k->n0, mul(g, c, C(per)));
  LLVMValueRef idx = add(g, mul(g, add(g, mul(g, rs, C(q->cc)), ch), C(p->N)), col);
  *ok = NULL;
  if (q->cc % p->bk) *ok = ult(g, ch, q->cc);
  if (p->N % p->bn) *ok = *ok ? and1(g, *ok, ult(g, col, p->N)) : ult(g, col, p->N);
  return *ok ? LLVMBuildSelect(g->b, *ok, idx, C(0), "") : idx;
}

/* One 16-byte chunk of a channels-last K tile (tap rs, channel c0): A's
 * (t == 0) or B's row `row`, chunk `c`, zero-filled where outside the
 * tensors; through registers in the phases asked (vals[0]) without
 * asynchronous copies. */
static void nhwc_chunk(kernel *k, int t, LLVMValueRef rs, LLVMValueRef c0, LLVMValueRef row, LLVMValueRef c,
                       const gpu_tile *tile, LLVMValueRef valid, int phase, LLVMValueRef *vals) {
  gpu_gen *g = k->g;
  int per = 16 / k->esize;
  LLVMValueRef ok, idx = t ? nhwc_b_index(k, rs, c0, row, c, per, &ok) : nhwc_index(k, rs, c0, row, c, per, &ok);
  if (valid) idx = LLVMBuildSelect(g->b, valid, idx, C(0), "");
  LLVMValueRef src = gept(g, g->in_t, t ? k->B : k->A, idx), dst = gpu_tile_addr(g, tile, row, mul(g, c, C(per)));
  if (g->target->async_copy16) {
    if (ok) g->target->async_copy16_zfill(g, dst, src, ok);
    else g->target->async_copy16(g, dst, src);
    return;
  }
  LLVMTypeRef v4 = LLVMVectorType(g->i32, 4);
  if (phase & FETCH) {
    LLVMValueRef x = LLVMBuildLoad2(g->b, v4, src, "");
    LLVMSetAlignment(x, 16);
    vals[0] = ok ? LLVMBuildSelect(g->b, ok, x, LLVMConstNull(v4), "") : x;
  }
  if (phase & STORE) LLVMSetAlignment(LLVMBuildStore(g->b, vals[0], dst), 16);
}

static void transfer(kernel *k, LLVMValueRef kt, LLVMValueRef stage, LLVMValueRef valid, int phase,
                     LLVMValueRef *vals) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  gpu_tile ta = gpu_k_tile_a(k, stage), tb = gpu_k_tile_b(k, stage);
  LLVMValueRef k0 = mul(g, kt, C(p->bk)), tap = NULL, c0 = NULL;
  int v = 0;
  if (p->nhwc) nhwc_tap(k, kt, &tap, &c0);
  if (p->vector_copy || p->nhwc) {
    int per = 16 / k->esize;
    int async = g->target->async_copy16 != NULL;
    LLVMTypeRef v4 = LLVMVectorType(g->i32, 4);
    for (int t = 0; t < 2; t++) {
      int rows = t ? p->bk : p->bm, rc = (t ? p->bn : p->bk) / per, n = rows * rc / p->threads;
      for (int i = 0; i < n; i++, v++) {
        LLVMValueRef row, c;
        gpu_k_split(k, i, rc, &row, &c);
        LLVMValueRef col = mul(g, c, C(per)), idx;
        if (p->nhwc) {
          nhwc_chunk(k, t, tap, c0, row, c, t ? &tb : &ta, valid, phase, &vals[v]);
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
      gpu_k_split(k, i, p->bk, &row, &col);
    else
      gpu_k_split(k, i, p->bm, &col, &row);
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
    if (phase & FETCH)
      vals[v] = q->a_pro ? gpu_k_prologue_a(k, idx, valid ? and1(g, ok, valid) : ok, m, kk)
                         : fetch_elem(k, k->A, idx, valid ? and1(g, ok, valid) : ok);
    if (phase & STORE) LLVMBuildStore(g->b, vals[v], gpu_tile_addr(g, &ta, row, col));
  }
  int b_n = p->bk * p->bn / p->threads;
  for (int i = 0; i < b_n; i++, v++) {
    LLVMValueRef row, col, idx;
    if (q->kind == GPU_OP_MATMUL) {
      gpu_k_split(k, i, p->bn, &row, &col);
      LLVMValueRef gk = add(g, add(g, mul(g, k->gidx, C(p->K)), k0), row);
      idx = add(g, mul(g, gk, C(p->N)), add(g, k->n0, col));
    } else {
      /* weights are K-contiguous (OIHW): neighbouring threads take
       * neighbouring k so the reads coalesce */
      gpu_k_split(k, i, p->bk, &col, &row);
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

/* The fragments the plan's warps accumulate with (the target's matrix
 * instruction, warpgroup MMA or the shared FMA fragment) and the tile
 * sizes derived from them. */
static cov_status pick_fragments(kernel *k) {
  const gpu_plan *plan = k->p;
  const gpu_target_ops *target = k->g->target;
  if (plan->wgmma && !target->wg_mma)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob), "GPU lowering: target %s has no warpgroup MMA", target->name);
  k->fr = plan->wgmma ? target->wg_acc : plan->matrix ? target->matrix_frag(plan) : gpu_fma_frag(plan->warp_size);
  /* warpgroup MMA: the epilogue sees a warp's accumulators as fragments
   * (16 rows of each warp, wn / 8 column blocks) */
  if (!plan->wgmma && (!k->fr || k->fr->fm != plan->fm || k->fr->fn != plan->fn || k->fr->fk != plan->fk))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob),
                     "GPU lowering: target %s has no %s fragment %dx%dx%d for %s inputs", target->name,
                     plan->matrix ? "matrix" : "FMA", plan->fm, plan->fn, plan->fk,
                     cov_dtype_name(plan->prob.in_dtype));
  k->esize = (int)cov_dtype_size(plan->prob.in_dtype);
  k->a_bytes = plan->bm * plan->bk * k->esize;
  k->stage_bytes = k->a_bytes + plan->bk * plan->bn * k->esize;
  k->nmf = plan->wgmma ? 1 : plan->wm / plan->fm;
  k->nnf = plan->wgmma ? plan->wn / k->fr->fn : plan->wn / plan->fn;
  return NULL;
}

/* This thread's warp sub-tile origin (wrow, wcol) and lane. */
static void warp_origin(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *plan = k->p;
  k->tid = g->target->thread_id(g);
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
}

/* The workgroup's output tile (m0, n0, gidx: gpu_raster, in IR) and its
 * shared memory. */
static void tile_origin(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *plan = k->p;
  LLVMValueRef bx = g->target->block_id(g, 0), by = g->target->block_id(g, 1);
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
  k->gidx = g->target->block_id(g, 2);
  k->split_z = C(0);
  if (plan->split > 1) { /* grid z: batch, then the split's K range */
    k->split_z = urem(g, k->gidx, plan->split);
    k->gidx = udiv(g, k->gidx, plan->split);
  }
  k->smem = g->target->shared_array(g, plan->shared_bytes);
  if (plan->wgmma) {
    /* the swizzle pattern the instructions apply repeats every 1024 bytes
     * of address: tiles start on such a boundary (the plan has 1 KiB spare) */
    LLVMValueRef a = LLVMBuildPtrToInt(g->b, k->smem, g->i32, "");
    LLVMValueRef pad = LLVMBuildAnd(g->b, LLVMBuildSub(g->b, C(0), a, ""), C(1023), "");
    k->smem = gep8(g, k->smem, pad);
  }
}

/* One step of the K loop at tile kt: wait for it, issue the copies of tile
 * kt + ahead, and the matrix work on tile kt. */
static void k_step(kernel *k, LLVMValueRef kt, LLVMValueRef KT, int ahead, int async, LLVMValueRef *staged) {
  gpu_gen *g = k->g;
  const gpu_plan *plan = k->p;
  const gpu_target_ops *target = g->target;
  int S = plan->stages, D = plan->wgmma ? plan->wg_inflight : 0;
  /* tile kt has landed once at most ahead-1 groups are pending; the
   * barrier also tells every warp that stage (kt-1-D) % S, refilled next,
   * is free */
  if (async) target->async_wait(g, ahead - 1);
  if (plan->wgmma) target->async_proxy_fence(g);
  target->barrier(g);
  LLVMValueRef next = add(g, kt, C(ahead)), more = LLVMBuildICmp(g->b, LLVMIntULT, next, KT, "");
  /* the K tile copied next, counted from the split's first */
  LLVMValueRef knext = add(g, k->kt0, next);
  if (plan->wgmma) {
    /* the copies landed (this thread's, then everyone's after the barrier)
     * are made visible to the instructions' reads; the batch runs while the
     * copies of tile kt+ahead are issued into the stage of tile kt-1-D,
     * which every warpgroup finished with before the barrier (its wait for
     * all but D batches in the previous step) */
    LLVMValueRef acc[128];
    gpu_k_wg_issue(k, urem(g, kt, S), acc);
    LLVMBasicBlockRef join;
    begin_if(g, more, &join);
    transfer(k, knext, urem(g, next, S), NULL, FETCH | STORE, staged);
    end_if(g, join);
    target->async_commit(g);
    gpu_k_wg_wait(k, acc, D);
  } else if (async) {
    LLVMBasicBlockRef join;
    begin_if(g, more, &join);
    transfer(k, knext, urem(g, next, S), NULL, FETCH | STORE, staged);
    end_if(g, join);
    target->async_commit(g);
    compute_stage(k, urem(g, kt, S));
  } else {
    /* through registers: read tile kt+S-1 now, use tile kt, then store;
     * past the last tile the reads are dummies and the stores land in a
     * stage nobody reads again */
    transfer(k, knext, urem(g, next, S), more, FETCH, staged);
    compute_stage(k, urem(g, kt, S));
    transfer(k, knext, urem(g, next, S), NULL, STORE, staged);
  }
}

/* The pipeline: the prologue's copies, then the K loop (an IR loop). */
static cov_status k_loop(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *plan = k->p;
  const gpu_target_ops *target = g->target;
  int S = plan->stages;
  long long KT = gpu_k_tiles(plan);
  if (plan->ktable) build_ktable(k, KT * plan->bk);
  int async = target->async_copy16 != NULL && (plan->vector_copy || plan->nhwc);
  LLVMValueRef staged[MAX_STAGED];
  if (n_staged(plan, k->esize) > MAX_STAGED)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob), "GPU lowering: %d copies per thread and tile (at most %d)",
                     n_staged(plan, k->esize), MAX_STAGED);
  /* prologue: the first S-1 tiles in flight (one commit group each, even
   * when empty, so that the wait count below is uniform); S-2 when a
   * warpgroup-MMA batch stays in flight across a step and holds one more
   * stage */
  int D = plan->wgmma ? plan->wg_inflight : 0, ahead = S - 1 - D;
  /* this workgroup's K tiles: all, or its split's range kt0 .. kt0+n
   * (the last range may be shorter) */
  long long fewest = KT;
  LLVMValueRef n = C(KT);
  k->kt0 = C(0);
  if (plan->split > 1) {
    fewest = KT - (long long)(plan->split - 1) * plan->split_kt;
    k->kt0 = mul(g, k->split_z, C(plan->split_kt));
    LLVMValueRef left = LLVMBuildSub(g->b, C(KT), k->kt0, "");
    n = LLVMBuildSelect(g->b, ult(g, left, plan->split_kt), left, C(plan->split_kt), "");
  }
  for (int s = 0; s < ahead; s++) {
    if (s < fewest) {
      transfer(k, add(g, k->kt0, C(s)), C(s), NULL, FETCH | STORE, staged);
    } else if (s < KT) {
      LLVMBasicBlockRef join;
      begin_if(g, LLVMBuildICmp(g->b, LLVMIntULT, C(s), n, ""), &join);
      transfer(k, add(g, k->kt0, C(s)), C(s), NULL, FETCH | STORE, staged);
      end_if(g, join);
    }
    if (async) target->async_commit(g);
  }
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "kloop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "kdone");
  LLVMBuildBr(g->b, loop);
  LLVMPositionBuilderAtEnd(g->b, loop);
  LLVMValueRef kt = LLVMBuildPhi(g->b, g->i32, "kt");
  k_step(k, kt, n, ahead, async, staged);
  LLVMValueRef kt1 = add(g, kt, C(1));
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, kt1, n, ""), loop, done);
  LLVMValueRef in_vals[2] = {C(0), kt1};
  LLVMBasicBlockRef in_bbs[2] = {pre, latch};
  LLVMAddIncoming(kt, in_vals, in_bbs, 2);
  LLVMPositionBuilderAtEnd(g->b, done);
  if (D) { /* the last batches */
    LLVMValueRef acc[128];
    for (int i = 0; i < plan->wn / 2; i++) acc[i] = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
    gpu_k_wg_wait(k, acc, 0);
  }
  return NULL;
}

static void epilogue(kernel *k) {
  const gpu_plan *plan = k->p;
  if (!plan->staged) {
    gpu_k_epilogue(k);
    return;
  }
  gpu_k_stage_out(k);
  if (plan->prob.epi.softmax)
    gpu_k_softmax_rows(k);
  else if (plan->prob.nhwc_io && !plan->prob.epi.residual)
    gpu_k_conv_staged_store_nhwc(k);
  else
    gpu_k_conv_staged_store(k);
}

/* The channels-last input transform, a second kernel with its own launch
 * bounds. */
static void nhwc_kernel(gpu_gen *g, const gpu_plan *plan, const char *name) {
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
  COV_RETURN_IF_ERROR(pick_fragments(k));
  gpu_add_kernel_n(g, name,
                   plan->prob.a_pro ? GPU_APRO_ARG + 1 : plan->prob.epi.residual ? 7 : plan->split > 1 ? 6 : 4);
  k->A = LLVMGetParam(g->fn, 0);
  k->B = LLVMGetParam(g->fn, 1);
  k->Cout = LLVMGetParam(g->fn, 2);
  k->bias = LLVMGetParam(g->fn, 3);
  if (plan->split > 1) k->split_ws = LLVMGetParam(g->fn, 4), k->split_count = LLVMGetParam(g->fn, 5);
  if (plan->prob.epi.residual) k->resid = LLVMGetParam(g->fn, 6);
  if (plan->prob.a_pro) k->apro = LLVMGetParam(g->fn, GPU_APRO_ARG);
  int n_acc = k->nmf * k->nnf * k->fr->n_acc;
  LLVMValueRef slots[n_acc];
  k->acc_slots = slots;
  for (int i = 0; i < n_acc; i++) slots[i] = LLVMBuildAlloca(g->b, g->f32, "acc");
  for (int i = 0; i < n_acc; i++) LLVMBuildStore(g->b, LLVMConstReal(g->f32, 0.0), slots[i]);
  if (plan->tma) { /* the warp-specialised persistent kernel (gpu_lower_ws.c) */
    cov_status st = gpu_lower_ws(k);
    LLVMDisposeBuilder(g->b);
    return st;
  }
  /* split-K's workspace holds bm x bn floats per tile and range: every
   * accumulator once */
  if (plan->split > 1 && (long long)n_acc * plan->threads != (long long)plan->bm * plan->bn) {
    LLVMDisposeBuilder(g->b);
    return cov_error(COV_INTERNAL, GPU_PROB_LOC(&plan->prob), "GPU lowering: split-K partials of %d x %d floats for a %dx%d tile",
                     n_acc, plan->threads, plan->bm, plan->bn);
  }
  warp_origin(k);
  tile_origin(k);
  cov_status st = k_loop(k);
  if (st) {
    LLVMDisposeBuilder(g->b);
    return st;
  }
  /* split-K: only the tile's last workgroup goes on, with the sum */
  if (plan->split > 1) gpu_k_split_combine(k);
  epilogue(k);
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  if (plan->nhwc && !plan->prob.nhwc_io) nhwc_kernel(g, plan, name);
  return NULL;
}
