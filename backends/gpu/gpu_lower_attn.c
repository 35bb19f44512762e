/* backends/gpu/gpu_lower_attn.c: the fused attention kernel (gpu_attn.h).
 *
 *   workgroup (qb, h): query rows qb*bm .. +bm of head h; a warp owns wm
 *   (16 or 32) of them with its Q fragments (16 x dim per row block)
 *   loaded once into registers, or (wm = 64) a warpgroup owns 64 whose Q
 *   tile the warpgroup MMAs read from shared memory;
 *   for each key block j (bn keys): S = Q K_j^T (m16n8k16 with K read from
 *   its [key][dim] tile by non-transposing ldmatrix: a K row is a B column;
 *   or one wgmma batch with K as a K-major B), online softmax in the log2
 *   domain (x = s * scale * log2 e: row max over the thread's values and
 *   its quad's by shuffles, alpha = 2^(m - m'), p = 2^(x - m'), the running
 *   sum and O scaled by alpha), P rounded to 16 bits as the A fragments of
 *   P V_j (an m16n8 accumulator pair is exactly an m16k16 A fragment; the
 *   register operand of wgmma has the same layout per warp), V_j read with
 *   ldmatrix.trans or as an N-major wgmma B;
 *   K_{j+1} and V_{j+1} are copied (cp.async) into the other stage while
 *   block j is computed; one barrier per block;
 *   finally the quad sums the row sums and O / sum is stored as 16-bit pairs.
 * The warpgroup form also comes pipelined (attn_wg: the softmax under the
 * previous block's P V) and chained (attn_wg_chain: the previous block's
 * P V and this block's S as one batch, awaited once).
 * Every thread holds rows g and g+8 of its warp's 16-row blocks (g =
 * lane / 4), so the softmax statistics are two values per thread and block. */
#include "backends/gpu/gpu_attn.h"

#include <float.h>
#include <math.h>

#include "backends/gpu/gpu_ir.h"

enum { ATTN_BN = 64, ATTN_MAX_BN = 128, ATTN_MAX_DIM = 128, ATTN_STATE = ATTN_MAX_DIM / 2 + 4 };

void gpu_attn_vendor_plan(const gpu_attn *a, gpu_plan *p) {
  memset(p, 0, sizeof *p);
  p->prob.in_dtype = a->in_dtype;
  p->fm = 16, p->fn = 8, p->fk = 16;
  p->matrix = true;
  p->warp_size = 32;
  p->threads = a->threads;
  p->shared_bytes = a->shared_bytes;
  for (int i = 0; i < 3; i++) p->grid[i] = a->grid[i];
}

void gpu_attn_out_dense(gpu_attn *a) {
  a->o_off = 0, a->o_hn = a->batch * a->heads, a->o_s0 = a->out_seq * a->out_dim, a->o_s1 = 0;
  a->o_row = a->out_dim;
}

cov_status gpu_attn_plan(int64_t batch, int64_t heads, int64_t seq, int64_t dim, cov_dtype in_dtype, int bm,
                         int wm, int bn, bool pipe, bool chain, const gpu_target_ops *target, const char *where,
                         gpu_attn *out) {
  memset(out, 0, sizeof *out);
  if (batch < 1 || heads < 1 || seq < 1 || dim < 1 || batch > 65535 || heads > 65535 || seq >= (1ll << 31) ||
      dim >= (1ll << 31) || batch * heads > 65535 || batch * heads * seq * dim >= (1ll << 31))
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, where), "attention %lldx%lldx%lldx%lld: sizes out of range",
                     (long long)batch, (long long)heads, (long long)seq, (long long)dim);
  if (in_dtype != COV_F16 && in_dtype != COV_BF16)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, where), "fused attention takes f16 or bf16 inputs, not %s",
                     cov_dtype_name(in_dtype));
  if (bm < 1 || (wm != 16 && wm != 32 && wm != 64) || bm % wm || bm / (wm == 64 ? 16 : wm) > 16)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, where),
                     "fused attention: %d query rows per warp (16 or 32; 64 per warpgroup) must divide the %d of a "
                     "workgroup into at most 16 warps",
                     wm, bm);
  if (wm == 64 && dim != 64)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, where),
                     "fused attention by warpgroups (64 rows) reads 128-byte rows of Q and K: head dim 64, not %lld",
                     (long long)dim);
  if ((pipe || chain) && wm != 64)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, where),
                     "fused attention: only the warpgroup form (64 rows per warp group) is %s, not %d rows per warp",
                     pipe ? "pipelined" : "chained", wm);
  if (pipe && chain)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, where),
                     "fused attention: pipelined (p) or chained (c), not both");
  if (wm == 64 && (!target->wg_mma_bt || !target->wg_mma_ra || !target->async_proxy_fence))
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, where),
                     "target %s: fused attention by warpgroups (64 rows) needs warpgroup MMAs with K-major and "
                     "register operands",
                     target->name);
  /* rows of 2^k 16-byte chunks keep the swizzle (gpu_tile_addr) inside the
   * row; every thread copies whole chunks of each tile */
  int threads = bm / (wm == 64 ? 16 : wm) * 32;
  if (!bn) bn = ATTN_BN;
  if (bn != 64 && bn != ATTN_MAX_BN)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, where), "fused attention: key blocks of 64 or %d, not %d",
                     ATTN_MAX_BN, bn);
  if (dim < 16 || dim > ATTN_MAX_DIM || (dim & (dim - 1)) || seq % bm || seq % bn ||
      (bn * dim / 8) % threads || (bm * dim / 8) % threads)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, where),
                     "fused attention needs a head dim that is a power of two from 16 to %d (with %d threads, at "
                     "least %d) and a sequence that is a multiple of %d and of the query tile %d (got dim %lld, "
                     "seq %lld)",
                     ATTN_MAX_DIM, threads, threads * 8 / bn, bn, bm, (long long)dim, (long long)seq);
  gpu_plan probe = {0};
  probe.prob.in_dtype = in_dtype, probe.fm = 16, probe.fn = 8, probe.fk = 16;
  const gpu_frag_ops *fr = target->matrix_frag ? target->matrix_frag(&probe) : NULL;
  if (!fr || !fr->load_b2 || !target->async_copy16 || !target->shfl_xor)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, where),
                     "target %s: fused attention needs m16n8k16 matrix fragments with paired B loads, asynchronous "
                     "copies and a warp shuffle",
                     target->name);
  out->batch = batch, out->heads = heads, out->seq = seq, out->dim = dim, out->in_dtype = in_dtype;
  out->scale = (float)(1.0 / sqrt((double)dim));
  out->keys = seq;
  out->out_seq = seq, out->out_dim = dim;
  gpu_attn_out_dense(out);
  out->in_seq = seq, out->in_dim = dim;
  out->bm = bm, out->bn = bn, out->wm = wm, out->pipe = pipe, out->chain = chain;
  out->threads = threads;
  out->grid[0] = (unsigned)(seq / bm), out->grid[1] = (unsigned)(batch * heads), out->grid[2] = 1;
  /* the Q tile and two stages of K and V tiles */
  out->shared_bytes = (unsigned)((bm + 4 * bn) * dim * 2 + (wm == 64 ? 1024 : 0));
  return NULL;
}

typedef struct attn_k {
  gpu_gen *g;
  const gpu_attn *a;
  const gpu_frag_ops *fr;
  LLVMValueRef tid, warp, head, head_off; /* head_off: element offset of this head's [seq][dim] */
  LLVMValueRef wrow;                /* the first query row of the warp's accumulators */
  LLVMValueRef mrow, kbase;         /* softmax_step's row block (first row) and key block (first key) */
  LLVMValueRef q, k, v, o, mask, smem;
  LLVMTypeRef v4i32, v2h;
} attn_k;

static gpu_tile tile_at(attn_k *s, int byte_off, int rows) {
  gpu_tile t = {gep8(s->g, s->smem, gpu_i32(s->g, byte_off)), rows, (int)s->a->dim, 2, 0};
  return t;
}
static gpu_tile kv_tile(attn_k *s, int which, LLVMValueRef stage) {
  gpu_gen *g = s->g;
  int tb = s->a->bn * (int)s->a->dim * 2;
  LLVMValueRef off = add(g, C(s->a->bm * (int)s->a->dim * 2 + which * 2 * tb), mul(g, stage, C(tb)));
  gpu_tile t = {gep8(g, s->smem, off), s->a->bn, (int)s->a->dim, 2, 0};
  return t;
}

/* rows row0 .. row0+rows of src (a [seq][dim] tensor of this head) into t,
 * as 16-byte asynchronous copies spread over the workgroup. Where the
 * workgroup covers a multiple of 8 rows per round (the swizzle's period),
 * a thread's chunks are one shared and one global address plus constant
 * offsets: a base register each instead of two 64-bit addresses per chunk
 * held across the key loop (48 registers at 128 keys). */
/* copy_rows from an unpadded [in_seq][in_dim] tensor (or one at the
 * strided layout, in_strided): chunks of rows past
 * in_seq or columns past in_dim written as zeros, reading nothing (their
 * addresses clamped inside the tensor all the same). */
static void copy_rows_zfill(attn_k *s, LLVMValueRef src, LLVMValueRef row0, const gpu_tile *t) {
  gpu_gen *g = s->g;
  const gpu_attn *a = s->a;
  int per_row = (int)a->dim / 8, chunks = t->rows * per_row, threads = a->threads;
  LLVMValueRef base = mul(g, s->head, C(a->in_seq * a->in_dim));
  long long rstride = a->in_dim;
  if (a->in_strided) { /* the layout fitted to a model's copy (gpu_attn.h) */
    base = add(g, mul(g, udiv(g, s->head, a->i_hn), C(a->i_s1)), mul(g, urem(g, s->head, a->i_hn), C(a->i_s0)));
    rstride = a->i_row;
  }
  for (int i = 0; i < chunks / threads; i++) {
    LLVMValueRef c = add(g, s->tid, C(i * threads));
    LLVMValueRef row = udiv(g, c, per_row), col = mul(g, urem(g, c, per_row), C(8)), r = add(g, row0, row);
    LLVMValueRef rok = ult(g, r, a->in_seq), cok = ult(g, col, a->in_dim);
    LLVMValueRef rc = LLVMBuildSelect(g->b, rok, r, C(a->in_seq - 1), "");
    LLVMValueRef cc = LLVMBuildSelect(g->b, cok, col, C(a->in_dim - 8), "");
    LLVMValueRef idx = add(g, base, add(g, mul(g, rc, C(rstride)), cc));
    g->target->async_copy16_zfill(g, gpu_tile_addr(g, t, row, col), gept(g, g->in_t, src, idx), and1(g, rok, cok));
  }
}

static void copy_rows(attn_k *s, LLVMValueRef src, LLVMValueRef row0, const gpu_tile *t) {
  gpu_gen *g = s->g;
  if (s->a->in_seq != s->a->seq || s->a->in_dim != s->a->dim || s->a->in_strided) {
    copy_rows_zfill(s, src, row0, t);
    return;
  }
  int per_row = (int)s->a->dim / 8, chunks = t->rows * per_row, threads = s->a->threads;
  if (threads % per_row == 0 && (threads / per_row) % 8 == 0) {
    int rstep = threads / per_row;
    LLVMValueRef row = udiv(g, s->tid, per_row), col = mul(g, urem(g, s->tid, per_row), C(8));
    LLVMValueRef sp = gpu_tile_addr(g, t, row, col);
    LLVMValueRef gp = gept(g, g->in_t, src, add(g, s->head_off, add(g, mul(g, add(g, row0, row), C(s->a->dim)), col)));
    for (int i = 0; i < chunks / threads; i++)
      g->target->async_copy16(g, gep8(g, sp, C((long long)i * rstep * t->cols * t->esize)),
                              gept(g, g->in_t, gp, C((long long)i * rstep * s->a->dim)));
    return;
  }
  for (int i = 0; i < chunks / threads; i++) {
    LLVMValueRef c = add(g, s->tid, C(i * threads));
    LLVMValueRef row = udiv(g, c, per_row), col = mul(g, urem(g, c, per_row), C(8));
    LLVMValueRef idx = add(g, s->head_off, add(g, mul(g, add(g, row0, row), C(s->a->dim)), col));
    g->target->async_copy16(g, gpu_tile_addr(g, t, row, col), gept(g, g->in_t, src, idx));
  }
}

static LLVMValueRef pair_struct(attn_k *s, LLVMValueRef x, LLVMValueRef y) {
  gpu_gen *g = s->g;
  LLVMTypeRef f[2] = {g->i32, g->i32};
  LLVMValueRef v = LLVMGetUndef(LLVMStructTypeInContext(g->ctx, f, 2, 0));
  v = LLVMBuildInsertValue(g->b, v, x, 0, "");
  return LLVMBuildInsertValue(g->b, v, y, 1, "");
}
static LLVMValueRef quad_struct(attn_k *s, LLVMValueRef *x) {
  gpu_gen *g = s->g;
  LLVMTypeRef f[4] = {g->i32, g->i32, g->i32, g->i32};
  LLVMValueRef v = LLVMGetUndef(LLVMStructTypeInContext(g->ctx, f, 4, 0));
  for (unsigned i = 0; i < 4; i++) v = LLVMBuildInsertValue(g->b, v, x[i], i, "");
  return v;
}
/* two f32 rounded to the input dtype, as the i32 a fragment register holds */
static LLVMValueRef pack2(attn_k *s, LLVMValueRef x, LLVMValueRef y) {
  gpu_gen *g = s->g;
  if (g->target->pack_half2) return g->target->pack_half2(g, g->in_t, x, y);
  LLVMTypeRef v2 = LLVMVectorType(g->in_t, 2);
  LLVMValueRef v = LLVMGetUndef(v2);
  v = LLVMBuildInsertElement(g->b, v, LLVMBuildFPTrunc(g->b, x, g->in_t, ""), C(0), "");
  v = LLVMBuildInsertElement(g->b, v, LLVMBuildFPTrunc(g->b, y, g->in_t, ""), C(1), "");
  return LLVMBuildBitCast(g->b, v, g->i32, "");
}

static LLVMValueRef fconst(gpu_gen *g, double v) { return LLVMConstReal(g->f32, v); }

static LLVMValueRef fmax2(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef args[2] = {x, y};
  LLVMTypeRef ft = g->f32;
  return gpu_call_intrinsic(g, "llvm.maxnum", &ft, 1, args, 2); /* max.f32: one instruction */
}

/* max (or sum) of v[0 .. n) as a balanced tree: log2(n) dependent steps
 * instead of n (the softmax's latency per block); v is overwritten */
static LLVMValueRef tree_reduce(gpu_gen *g, LLVMValueRef *v, int n, int is_max) {
  for (; n > 1; n = (n + 1) / 2)
    for (int i = 0; i < n / 2; i++)
      v[i] = is_max ? fmax2(g, v[2 * i], v[2 * i + 1]) : LLVMBuildFAdd(g->b, v[2 * i], v[2 * i + 1], "");
  for (int i = 0; i < n % 2; i++) v[n / 2] = v[n - 1];
  return v[0];
}

/* max (or sum) over the 4 lanes of a quad */
static LLVMValueRef quad_reduce(attn_k *s, LLVMValueRef x, int is_max) {
  gpu_gen *g = s->g;
  for (int d = 1; d <= 2; d *= 2) {
    LLVMValueRef y = g->target->shfl_xor(g, x, d);
    x = is_max ? fmax_sel(g, x, y) : LLVMBuildFAdd(g->b, x, y, "");
  }
  return x;
}

/* The lowest masked score: finite after the softmax's scaling to log2
 * units, so that a row whose every key is masked weighs them equally. */
double gpu_attn_mask_floor(const gpu_attn *a) {
  double c = (double)a->scale * 1.4426950408889634;
  return -FLT_MAX / 4.0 / (c > 1.0 ? c : 1.0);
}

/* Scores of masked keys (past a->keys, or after the row when causal) set
 * to -inf: accumulator n*4 + 2h + e of a thread holds row mrow + lane/4 +
 * 8h, key kbase + 8n + 2(lane%4) + e (m16n8 fragments, and the warpgroup
 * accumulators seen per warp). */
static void mask_scores(attn_k *s, LLVMValueRef *sacc) {
  const gpu_attn *a = s->a;
  if (!a->causal && !a->mask && a->keys >= a->seq) return;
  gpu_gen *g = s->g;
  LLVMValueRef grp = udiv(g, g->lane, 4), key0 = add(g, s->kbase, mul(g, urem(g, g->lane, 4), C(2)));
  LLVMValueRef ninf = fconst(g, -INFINITY), last = C(a->keys - 1);
  for (int h = 0; h < 2; h++) {
    LLVMValueRef row = add(g, s->mrow, add(g, grp, C(8 * h)));
    LLVMValueRef mrow = NULL; /* the mask's row (a padded row reads the last one) */
    if (a->mask) {
      LLVMValueRef r = LLVMBuildSelect(g->b, ult(g, row, a->keys), row, last, "");
      mrow = add(g, mul(g, s->head, C(a->mask_head)), mul(g, r, C(a->keys)));
    }
    for (int n = 0; n < a->bn / 8; n++)
      for (int e = 0; e < 2; e++) {
        LLVMValueRef key = add(g, key0, C(8 * n + e)), ok = ult(g, key, a->keys);
        if (a->causal) ok = and1(g, ok, LLVMBuildICmp(g->b, LLVMIntULE, key, row, ""));
        LLVMValueRef *v = &sacc[n * 4 + 2 * h + e];
        if (mrow) { /* s + mask / scale, so that the scaled score is s * scale + mask */
          LLVMValueRef kc = LLVMBuildSelect(g->b, ok, key, last, "");
          LLVMValueRef mv = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, s->mask, add(g, mrow, kc)), "");
          LLVMValueRef x = LLVMBuildFAdd(g->b, *v, LLVMBuildFMul(g->b, mv, fconst(g, 1.0 / a->scale), ""), "");
          *v = fmax_sel(g, x, fconst(g, gpu_attn_mask_floor(a)));
        }
        *v = LLVMBuildSelect(g->b, ok, *v, ninf, "");
      }
  }
}

/* The online softmax of one key block for one 16-row block: sacc holds S
 * (bn/8 m16n8 fragments), st O's accumulators (dim/8 x 4), then m[2] and
 * l[2]; P goes to pk as 16-bit pairs (pk[n][h]: rows g + 8h, columns of
 * fragment n). */
static void softmax_step(attn_k *s, LLVMValueRef *sacc, LLVMValueRef *st, LLVMValueRef (*pk)[2],
                         LLVMValueRef *alpha_out) {
  gpu_gen *g = s->g;
  int nd = (int)s->a->dim / 8, nk = s->a->bn / 8;
  double c = (double)s->a->scale * 1.4426950408889634; /* log2(e) */
  LLVMValueRef *o = st, *m = o + 4 * nd, *l = m + 2;
  LLVMValueRef (*ex)(gpu_gen *, LLVMValueRef) = g->target->exp2_ftz ? g->target->exp2_ftz : g->target->exp2;
  mask_scores(s, sacc);
  for (int h = 0; h < 2; h++) {
    LLVMValueRef v[ATTN_MAX_BN / 4], p[ATTN_MAX_BN / 8][2];
    for (int i = 0; i < 2 * nk; i++) v[i] = sacc[i / 2 * 4 + 2 * h + i % 2];
    LLVMValueRef mx = tree_reduce(g, v, 2 * nk, 1);
    mx = LLVMBuildFMul(g->b, quad_reduce(s, mx, 1), fconst(g, c), "");
    LLVMValueRef mn = fmax_sel(g, m[h], mx), neg = LLVMBuildFNeg(g->b, mn, "");
    LLVMValueRef alpha = g->target->exp2(g, LLVMBuildFSub(g->b, m[h], mn, ""));
    for (int n = 0; n < nk; n++)
      for (int e = 0; e < 2; e++) {
        /* x * scale * log2 e - m' in one fma; 2^that <= 1, and values
         * below 2^-126 count for nothing next to the row's 1 */
        LLVMValueRef args[3] = {sacc[n * 4 + 2 * h + e], fconst(g, c), neg};
        LLVMTypeRef ft = g->f32;
        p[n][e] = v[2 * n + e] = ex(g, gpu_call_intrinsic(g, "llvm.fma", &ft, 1, args, 3));
      }
    LLVMValueRef sum = tree_reduce(g, v, 2 * nk, 0);
    for (int n = 0; n < nk; n++) pk[n][h] = pack2(s, p[n][0], p[n][1]);
    l[h] = LLVMBuildFAdd(g->b, LLVMBuildFMul(g->b, l[h], alpha, ""), sum, "");
    m[h] = mn;
    if (alpha_out) { /* O is in flight: the caller rescales it */
      alpha_out[h] = alpha;
      continue;
    }
    for (int n = 0; n < nd; n++)
      for (int e = 0; e < 2; e++) o[n * 4 + 2 * h + e] = LLVMBuildFMul(g->b, o[n * 4 + 2 * h + e], alpha, "");
  }
}

/* P's A fragment for keys 16kk .. +16 (two accumulator fragments) */
static LLVMValueRef p_frag(attn_k *s, LLVMValueRef (*pk)[2], int kk) {
  LLVMValueRef af[4] = {pk[2 * kk][0], pk[2 * kk][1], pk[2 * kk + 1][0], pk[2 * kk + 1][1]};
  return quad_struct(s, af);
}

/* One key block on stage `stage` with m16n8k16 MMAs, for the warp's wm/16
 * row blocks (st[mb]: softmax_step's state); qf the Q fragments (dim/16
 * per row block); K and V fragments are loaded once for every row block. */
static void attn_block(attn_k *s, LLVMValueRef stage, LLVMValueRef (*qf)[ATTN_MAX_DIM / 16], LLVMValueRef **st) {
  gpu_gen *g = s->g;
  const gpu_frag_ops *fr = s->fr;
  int nd = (int)s->a->dim / 8, nk = s->a->bn / 8, mw = s->a->wm / 16;
  gpu_tile kt = kv_tile(s, 0, stage), vt = kv_tile(s, 1, stage);
  LLVMValueRef sacc[2][ATTN_MAX_BN / 8 * 4];
  for (int mb = 0; mb < mw; mb++)
    for (int i = 0; i < 4 * nk; i++) sacc[mb][i] = fconst(g, 0.0);
  for (int kb = 0; kb < nk / 2; kb++)
    for (int ks = 0; ks < (int)s->a->dim / 16; ks++) {
      /* keys kb*16 .. +16, dims ks*16 .. +16: registers 0/2 are the B
       * fragment of keys 0-7, 1/3 that of keys 8-15 */
      LLVMValueRef r = fr->load_a(g, &kt, C(kb * 16), ks * 16);
      LLVMValueRef x[4];
      for (unsigned i = 0; i < 4; i++) x[i] = LLVMBuildExtractValue(g->b, r, i, "");
      LLVMValueRef b0 = pair_struct(s, x[0], x[2]), b1 = pair_struct(s, x[1], x[3]);
      for (int mb = 0; mb < mw; mb++) {
        fr->mma(g, qf[mb][ks], b0, &sacc[mb][(2 * kb) * 4]);
        fr->mma(g, qf[mb][ks], b1, &sacc[mb][(2 * kb + 1) * 4]);
      }
    }
  LLVMValueRef pk[2][ATTN_MAX_BN / 8][2];
  for (int mb = 0; mb < mw; mb++) {
    s->mrow = add(g, s->wrow, C(16 * mb));
    softmax_step(s, sacc[mb], st[mb], pk[mb], NULL);
  }
  for (int kk = 0; kk < nk / 2; kk++) {
    LLVMValueRef a[2];
    for (int mb = 0; mb < mw; mb++) a[mb] = p_frag(s, pk[mb], kk);
    for (int dp = 0; dp < nd / 2; dp++) {
      LLVMValueRef bf[2];
      fr->load_b2(g, &vt, kk * 16, C(dp * 16), bf);
      for (int mb = 0; mb < mw; mb++) {
        fr->mma(g, a[mb], bf[0], &st[mb][(2 * dp) * 4]);
        fr->mma(g, a[mb], bf[1], &st[mb][(2 * dp + 1) * 4]);
      }
    }
  }
}

/* Rows g and g+8 (h) of O into the unpadded result at its layout (o_off,
 * o_hn, o_s0, o_s1, o_row): two columns per 8-byte f32 or 4-byte f16
 * store (out_f16), rows past out_seq and column fragments past out_dim
 * not stored. */
static void store_f32(attn_k *s, LLVMValueRef row, LLVMValueRef *o, int h, LLVMValueRef inv) {
  gpu_gen *g = s->g;
  const gpu_attn *a = s->a;
  LLVMValueRef t2 = mul(g, urem(g, g->lane, 4), C(2));
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, row, a->out_seq), &join);
  LLVMValueRef hb = add(g, mul(g, udiv(g, s->head, a->o_hn), C(a->o_s1)), mul(g, urem(g, s->head, a->o_hn), C(a->o_s0)));
  LLVMValueRef base = add(g, add(g, C(a->o_off), hb), mul(g, row, C(a->o_row)));
  LLVMTypeRef v2f = LLVMVectorType(g->f32, 2);
  for (int n = 0; n < (int)a->out_dim / 8; n++) {
    LLVMValueRef v = LLVMGetUndef(v2f);
    v = LLVMBuildInsertElement(g->b, v, LLVMBuildFMul(g->b, o[n * 4 + 2 * h], inv, ""), C(0), "");
    v = LLVMBuildInsertElement(g->b, v, LLVMBuildFMul(g->b, o[n * 4 + 2 * h + 1], inv, ""), C(1), "");
    LLVMValueRef at = add(g, base, add(g, C(n * 8), t2));
    if (a->out_f16) { /* rounded once */
      LLVMValueRef hv = LLVMBuildFPTrunc(g->b, v, LLVMVectorType(g->f16, 2), "");
      LLVMSetAlignment(LLVMBuildStore(g->b, hv, gept(g, g->f16, s->o, at)), 4);
    } else {
      LLVMSetAlignment(LLVMBuildStore(g->b, v, gept(g, g->f32, s->o, at)), 8);
    }
  }
  end_if(g, join);
}

/* O / l of m-block mb, rounded to the input dtype, two columns per store
 * (or as f32, store_f32) */
static void attn_store(attn_k *s, LLVMValueRef q0, int mb, LLVMValueRef *st) {
  gpu_gen *g = s->g;
  int nd = (int)s->a->dim / 8;
  LLVMValueRef *o = st, *l = st + 4 * nd + 2;
  LLVMValueRef grp = udiv(g, g->lane, 4), t2 = mul(g, urem(g, g->lane, 4), C(2));
  for (int h = 0; h < 2; h++) {
    LLVMValueRef inv = LLVMBuildFDiv(g->b, fconst(g, 1.0), quad_reduce(s, l[h], 0), "");
    int rw = s->a->wm == 64 ? 16 : s->a->wm; /* a warpgroup's warps hold 16 rows each */
    LLVMValueRef row = add(g, add(g, q0, mul(g, s->warp, C(rw))), add(g, grp, C(16 * mb + 8 * h)));
    if (s->a->out_f32) {
      store_f32(s, row, o, h, inv);
      continue;
    }
    LLVMValueRef base = add(g, s->head_off, mul(g, row, C(s->a->dim)));
    for (int n = 0; n < nd; n++) {
      LLVMValueRef x = LLVMBuildFMul(g->b, o[n * 4 + 2 * h], inv, "");
      LLVMValueRef y = LLVMBuildFMul(g->b, o[n * 4 + 2 * h + 1], inv, "");
      LLVMValueRef ptr = gept(g, g->in_t, s->o, add(g, base, add(g, C(n * 8), t2)));
      LLVMSetAlignment(LLVMBuildStore(g->b, pack2(s, x, y), ptr), 4);
    }
  }
}

/* S = Q K_j^T of the warpgroup's 64 rows (K from stage kstage), issued and
 * committed as one batch into sacc (zeroed here); not awaited. */
static void wg_scores(attn_k *s, const gpu_tile *qt, LLVMValueRef row0, LLVMValueRef kstage, LLVMValueRef *sacc) {
  gpu_gen *g = s->g;
  gpu_tile kt = kv_tile(s, 0, kstage);
  for (int i = 0; i < s->a->bn / 2; i++) sacc[i] = LLVMGetUndef(g->f32); /* the first product overwrites */
  for (int ks = 0; ks < (int)s->a->dim / 16; ks++)
    g->target->wg_mma_bt(g, qt, row0, &kt, C(0), ks * 16, s->a->bn, sacc);
  g->target->wg_commit(g);
}

/* O += P V (P: softmax_step's 16-bit pairs, the A operand from registers;
 * V from stage vstage), issued and committed as one batch; not awaited. */
static void wg_values(attn_k *s, LLVMValueRef (*pk)[2], LLVMValueRef vstage, LLVMValueRef *o) {
  gpu_gen *g = s->g;
  gpu_tile vt = kv_tile(s, 1, vstage);
  for (int kk = 0; kk < s->a->bn / 16; kk++) g->target->wg_mma_ra(g, p_frag(s, pk, kk), &vt, kk * 16, (int)s->a->dim, o);
  g->target->wg_commit(g);
}

/* Awaits every batch; P (the A operand the tensor cores read until then)
 * passes through the wait with O, so that nothing overwrites its registers
 * before it (LLVM would otherwise reuse them once the MMA was issued). */
static void wg_wait_pv(attn_k *s, LLVMValueRef *o, LLVMValueRef (*pk)[2]) {
  gpu_gen *g = s->g;
  int nd = (int)s->a->dim / 8, np = s->a->bn / 4;
  LLVMValueRef v[ATTN_MAX_DIM / 2 + ATTN_MAX_BN / 4];
  for (int i = 0; i < 4 * nd; i++) v[i] = o[i];
  for (int i = 0; i < np; i++) v[4 * nd + i] = LLVMBuildBitCast(g->b, pk[i / 2][i % 2], g->f32, "");
  g->target->wg_wait(g, 0, v, 4 * nd + np);
  for (int i = 0; i < 4 * nd; i++) o[i] = v[i];
}

/* One key block with warpgroup MMAs, unpipelined: S = Q K^T, its softmax,
 * O += P V, each product awaited before its result is read. */
static void attn_block_wg(attn_k *s, LLVMValueRef stage, const gpu_tile *qt, LLVMValueRef *st) {
  gpu_gen *g = s->g;
  LLVMValueRef sacc[ATTN_MAX_BN / 8 * 4], pk[ATTN_MAX_BN / 8][2];
  g->target->wg_fence(g);
  wg_scores(s, qt, mul(g, udiv(g, s->warp, 4), C(64)), stage, sacc);
  g->target->wg_wait(g, 0, sacc, s->a->bn / 2);
  softmax_step(s, sacc, st, pk, NULL);
  g->target->wg_fence(g);
  wg_values(s, pk, stage, st);
  wg_wait_pv(s, st, pk);
}

/* the copies awaited and made visible to the async proxy and every thread */
static void copies_done(attn_k *s) {
  s->g->target->async_wait(s->g, 0);
  s->g->target->async_proxy_fence(s->g);
  s->g->target->barrier(s->g);
}

/* The first copies of a workgroup's tile, as two groups: Q and K_0, then
 * V_0 and K_1 (which arrive behind S_0) */
static void first_copies(attn_k *s, LLVMValueRef q0) {
  gpu_gen *g = s->g;
  const gpu_attn *a = s->a;
  gpu_tile qt = tile_at(s, 0, a->bm), k0 = kv_tile(s, 0, C(0)), v0 = kv_tile(s, 1, C(0));
  copy_rows(s, s->q, q0, &qt);
  copy_rows(s, s->k, C(0), &k0);
  g->target->async_commit(g);
  copy_rows(s, s->v, C(0), &v0);
  if (a->seq > a->bn) {
    gpu_tile k1 = kv_tile(s, 0, C(1));
    copy_rows(s, s->k, C(a->bn), &k1);
  }
  g->target->async_commit(g);
}

/* Both warpgroup forms' first block: Q and K_0 (and V_0, K_1 in flight)
 * copied, S_0 = Q K_0^T awaited and its softmax; st starts as O = 0,
 * m = -inf, l = 0. */
static void wg_first_block(attn_k *s, LLVMValueRef q0, gpu_tile *qt, LLVMValueRef *row0, LLVMValueRef *st,
                           LLVMValueRef *sacc, LLVMValueRef (*pk)[2]) {
  gpu_gen *g = s->g;
  const gpu_target_ops *t = g->target;
  int nd = (int)s->a->dim / 8, nk = s->a->bn / 8, nst = 4 * nd + 4;
  *qt = tile_at(s, 0, s->a->bm);
  *row0 = mul(g, udiv(g, s->warp, 4), C(64));
  first_copies(s, q0);
  t->async_wait(g, 1); /* Q and K_0 */
  t->async_proxy_fence(g);
  t->barrier(g);
  for (int i = 0; i < nst; i++) st[i] = fconst(g, i == 4 * nd || i == 4 * nd + 1 ? -INFINITY : 0.0);
  t->wg_fence(g);
  wg_scores(s, qt, *row0, C(0), sacc);
  t->wg_wait(g, 0, sacc, 4 * nk);
  s->kbase = C(0);
  softmax_step(s, sacc, st, pk, NULL);
}

/* Opens both warpgroup forms' loop over blocks 1.. with the loop-carried
 * values as phis: O, m, l (st), then P of the previous block (pprev).
 * starts and phis hold ATTN_STATE + ATTN_MAX_BN / 4 values. */
static LLVMValueRef wg_carry_open(attn_k *s, gpu_loop *lp, LLVMValueRef *st, LLVMValueRef (*pk)[2],
                                  LLVMValueRef (*pprev)[2], LLVMValueRef *starts, LLVMValueRef *phis) {
  gpu_gen *g = s->g;
  int nst = 4 * ((int)s->a->dim / 8) + 4, np = 2 * (s->a->bn / 8);
  for (int i = 0; i < nst; i++) starts[i] = st[i];
  for (int i = 0; i < np; i++) starts[nst + i] = pk[i / 2][i % 2];
  LLVMValueRef j = loop_open(g, lp, C(1), (int)(s->a->seq / s->a->bn), 1);
  for (int i = 0; i < nst + np; i++) {
    phis[i] = LLVMBuildPhi(g->b, LLVMTypeOf(starts[i]), "");
    LLVMAddIncoming(phis[i], &starts[i], &lp->pre, 1);
  }
  for (int i = 0; i < nst; i++) st[i] = phis[i];
  for (int i = 0; i < np; i++) pprev[i / 2][i % 2] = phis[nst + i];
  return j;
}

/* Block j's copies in both warpgroup forms: K_{j+1} (if there is one) and
 * V_j into the stages of K_{j-1} and V_{j-2}, as one commit group. */
static void wg_next_copies(attn_k *s, LLVMValueRef j) {
  gpu_gen *g = s->g;
  const gpu_attn *a = s->a;
  LLVMValueRef nj = add(g, j, C(1));
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, nj, (int)(a->seq / a->bn)), &join);
  gpu_tile kn = kv_tile(s, 0, LLVMBuildAnd(g->b, nj, C(1), ""));
  copy_rows(s, s->k, mul(g, nj, C(a->bn)), &kn);
  end_if(g, join);
  gpu_tile vn = kv_tile(s, 1, LLVMBuildAnd(g->b, j, C(1), ""));
  copy_rows(s, s->v, mul(g, j, C(a->bn)), &vn);
  g->target->async_commit(g);
}

/* Closes that loop with this block's O, m, l and P; outs gets their values
 * after it. */
static void wg_carry_close(attn_k *s, gpu_loop *lp, LLVMValueRef *st, LLVMValueRef (*pk)[2], LLVMValueRef *starts,
                           LLVMValueRef *phis, LLVMValueRef *outs) {
  int nst = 4 * ((int)s->a->dim / 8) + 4, np = 2 * (s->a->bn / 8);
  LLVMValueRef nexts[ATTN_STATE + ATTN_MAX_BN / 4];
  for (int i = 0; i < nst; i++) nexts[i] = st[i];
  for (int i = 0; i < np; i++) nexts[nst + i] = pk[i / 2][i % 2];
  loop_close(s->g, lp, nst + np, phis, nexts, starts, outs);
}

/* The warpgroup form (wm == 64), software-pipelined inside the warpgroup
 * (flash-attention 3's intra-warpgroup overlap): block j's S_j = Q K_j^T
 * and block j-1's O += P_{j-1} V_{j-1} are issued back to back, only S_j
 * is awaited (wait_group 1), and the softmax of S_j runs on the ALUs while
 * the tensor cores compute P_{j-1} V_{j-1}; O is rescaled by block j's
 * alpha after wait_group 0. V lags K by one block: iteration j copies
 * K_{j+1} and V_j into the stages of K_{j-1} and V_{j-2}, whose products
 * the previous iteration awaited before its barrier. */
static void attn_wg(attn_k *s, LLVMValueRef q0) {
  gpu_gen *g = s->g;
  const gpu_target_ops *t = g->target;
  const gpu_attn *a = s->a;
  int nd = (int)a->dim / 8, nk = a->bn / 8, blocks = (int)(a->seq / a->bn), nst = 4 * nd + 4, np = 2 * nk;
  gpu_tile qt;
  LLVMValueRef row0, st[ATTN_STATE], sacc[ATTN_MAX_BN / 8 * 4], pk[ATTN_MAX_BN / 8][2], alpha[2];
  wg_first_block(s, q0, &qt, &row0, st, sacc, pk);
  copies_done(s);

  LLVMValueRef starts[ATTN_STATE + ATTN_MAX_BN / 4], phis[ATTN_STATE + ATTN_MAX_BN / 4];
  LLVMValueRef outs[ATTN_STATE + ATTN_MAX_BN / 4], pprev[ATTN_MAX_BN / 8][2];
  gpu_loop lp;
  LLVMValueRef j = wg_carry_open(s, &lp, st, pk, pprev, starts, phis);
  wg_next_copies(s, j);
  t->wg_fence(g);
  wg_scores(s, &qt, row0, LLVMBuildAnd(g->b, j, C(1), ""), sacc);
  wg_values(s, pprev, LLVMBuildAnd(g->b, add(g, j, C(1)), C(1), ""), st);
  t->wg_wait(g, 1, sacc, 4 * nk);
  s->kbase = mul(g, j, C(a->bn));
  softmax_step(s, sacc, st, pk, alpha);
  wg_wait_pv(s, st, pprev);
  for (int n = 0; n < nd; n++)
    for (int i = 0; i < 4; i++) st[n * 4 + i] = LLVMBuildFMul(g->b, st[n * 4 + i], alpha[i / 2], "");
  copies_done(s);
  wg_carry_close(s, &lp, st, pk, starts, phis, outs);
  /* epilogue: the last block's P V */
  for (int i = 0; i < np; i++) pk[i / 2][i % 2] = outs[nst + i];
  t->wg_fence(g);
  wg_values(s, pk, C((blocks - 1) & 1), outs);
  wg_wait_pv(s, outs, pk);
  attn_store(s, q0, 0, outs);
}

/* The chained warpgroup form (wm == 64, a->chain): block j-1's O +=
 * P_{j-1} V_{j-1} and block j's S_j = Q K_j^T are issued as one batch and
 * awaited together, so the tensor cores run both back to back and each
 * block waits once on them instead of twice (the unpipelined form's S and
 * P V round trips). Nothing is in flight across the loop's back edge and
 * the softmax runs after the wait, so no more registers are live than in
 * the unpipelined form (S_j, P_j and O; the loop carries P, not S). One
 * barrier per block: K_{j+1} goes to the stage of K_{j-1} and V_j to that
 * of V_{j-2}, whose products every warp awaited in block j-1. */
static void attn_wg_chain(attn_k *s, LLVMValueRef q0) {
  gpu_gen *g = s->g;
  const gpu_target_ops *t = g->target;
  const gpu_attn *a = s->a;
  int nd = (int)a->dim / 8, nk = a->bn / 8, blocks = (int)(a->seq / a->bn), nst = 4 * nd + 4, np = 2 * nk;
  gpu_tile qt;
  LLVMValueRef row0, st[ATTN_STATE], sacc[ATTN_MAX_BN / 8 * 4], pk[ATTN_MAX_BN / 8][2], pprev[ATTN_MAX_BN / 8][2];
  wg_first_block(s, q0, &qt, &row0, st, sacc, pk);

  LLVMValueRef starts[ATTN_STATE + ATTN_MAX_BN / 4], phis[ATTN_STATE + ATTN_MAX_BN / 4];
  LLVMValueRef outs[ATTN_STATE + ATTN_MAX_BN / 4];
  gpu_loop lp;
  LLVMValueRef j = wg_carry_open(s, &lp, st, pk, pprev, starts, phis);
  copies_done(s); /* K_j and V_{j-1} */
  wg_next_copies(s, j);
  t->wg_fence(g);
  gpu_tile vt = kv_tile(s, 1, LLVMBuildAnd(g->b, add(g, j, C(1)), C(1), ""));
  for (int kk = 0; kk < nk / 2; kk++) t->wg_mma_ra(g, p_frag(s, pprev, kk), &vt, kk * 16, (int)a->dim, st);
  wg_scores(s, &qt, row0, LLVMBuildAnd(g->b, j, C(1), ""), sacc);
  /* O, S_j and P_{j-1} (read by the tensor cores until then) through one wait */
  LLVMValueRef v[ATTN_MAX_DIM / 2 + ATTN_MAX_BN / 2 + ATTN_MAX_BN / 4];
  for (int i = 0; i < 4 * nd; i++) v[i] = st[i];
  for (int i = 0; i < 4 * nk; i++) v[4 * nd + i] = sacc[i];
  for (int i = 0; i < np; i++) v[4 * nd + 4 * nk + i] = LLVMBuildBitCast(g->b, pprev[i / 2][i % 2], g->f32, "");
  t->wg_wait(g, 0, v, 4 * nd + 4 * nk + np);
  for (int i = 0; i < 4 * nd; i++) st[i] = v[i];
  for (int i = 0; i < 4 * nk; i++) sacc[i] = v[4 * nd + i];
  s->kbase = mul(g, j, C(a->bn));
  softmax_step(s, sacc, st, pk, NULL);
  wg_carry_close(s, &lp, st, pk, starts, phis, outs);
  /* the last block's P V (V_last awaited) */
  for (int i = 0; i < np; i++) pk[i / 2][i % 2] = outs[nst + i];
  copies_done(s);
  t->wg_fence(g);
  wg_values(s, pk, C((blocks - 1) & 1), outs);
  wg_wait_pv(s, outs, pk);
  attn_store(s, q0, 0, outs);
}

cov_status gpu_lower_attn(const gpu_attn *a, const gpu_target_ops *target, LLVMModuleRef mod, const char *name) {
  gpu_plan vp;
  gpu_attn_vendor_plan(a, &vp);
  gpu_gen gg = {0}, *g = &gg;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, &vp, target, mod));
  attn_k sk = {0}, *s = &sk;
  s->g = g, s->a = a, s->fr = target->matrix_frag(&vp);
  if (!s->fr || !s->fr->load_b2 || !target->shfl_xor || !target->async_copy16)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "target %s: no fused attention", target->name);
  gpu_add_kernel_n(g, name, a->mask ? 5 : 4);
  if (a->mask) s->mask = LLVMGetParam(g->fn, 4);
  s->q = LLVMGetParam(g->fn, 0), s->k = LLVMGetParam(g->fn, 1), s->v = LLVMGetParam(g->fn, 2);
  if (a->q_off) s->q = gept(g, g->in_t, s->q, C(a->q_off));
  if (a->k_off) s->k = gept(g, g->in_t, s->k, C(a->k_off));
  if (a->v_off) s->v = gept(g, g->in_t, s->v, C(a->v_off));
  s->o = LLVMGetParam(g->fn, 3);
  s->smem = target->shared_array(g, a->shared_bytes);
  int wg = a->wm == 64;
  if (wg) {
    /* warpgroup MMAs read the 128-byte swizzle, whose pattern repeats
     * every 1024 bytes: the tiles start on such a boundary (1 KiB spare) */
    LLVMValueRef addr = LLVMBuildPtrToInt(g->b, s->smem, g->i32, "");
    s->smem = gep8(g, s->smem, LLVMBuildAnd(g->b, LLVMBuildSub(g->b, C(0), addr, ""), C(1023), ""));
  }
  s->tid = target->thread_id(g);
  g->lane = urem(g, s->tid, 32);
  s->warp = udiv(g, s->tid, 32);
  s->head = target->block_id(g, 1);
  s->head_off = mul(g, s->head, C(a->seq * a->dim));
  LLVMValueRef q0 = mul(g, target->block_id(g, 0), C(a->bm));
  s->wrow = s->mrow = add(g, q0, mul(g, s->warp, C(wg ? 16 : a->wm)));
  if (wg && (a->pipe || a->chain)) {
    if (a->chain)
      attn_wg_chain(s, q0);
    else
      attn_wg(s, q0);
    LLVMBuildRetVoid(g->b);
    LLVMDisposeBuilder(g->b);
    return NULL;
  }
  int nd = (int)a->dim / 8, nst = 4 * nd + 4, blocks = (int)(a->seq / a->bn);

  gpu_tile qt = tile_at(s, 0, a->bm);
  copy_rows(s, s->q, q0, &qt);
  gpu_tile k0 = kv_tile(s, 0, C(0)), v0 = kv_tile(s, 1, C(0));
  copy_rows(s, s->k, C(0), &k0);
  copy_rows(s, s->v, C(0), &v0);
  target->async_commit(g);
  target->async_wait(g, 0);
  if (wg) target->async_proxy_fence(g); /* the copies, seen by the async proxy */
  target->barrier(g);
  int mw = wg ? 1 : a->wm / 16, n_all = mw * nst;
  LLVMValueRef qf[2][ATTN_MAX_DIM / 16];
  for (int mb = 0; mb < (wg ? 0 : mw); mb++)
    for (int ks = 0; ks < (int)a->dim / 16; ks++)
      qf[mb][ks] = s->fr->load_a(g, &qt, add(g, mul(g, s->warp, C(a->wm)), C(16 * mb)), ks * 16);

  LLVMValueRef starts[2 * ATTN_STATE], phis[2 * ATTN_STATE], st[2 * ATTN_STATE], outs[2 * ATTN_STATE];
  for (int i = 0; i < n_all; i++) starts[i] = fconst(g, (i % nst == 4 * nd || i % nst == 4 * nd + 1) ? -INFINITY : 0.0);
  gpu_loop lp;
  LLVMValueRef j = loop_open(g, &lp, C(0), blocks, 1);
  for (int i = 0; i < n_all; i++) {
    phis[i] = LLVMBuildPhi(g->b, g->f32, "");
    LLVMAddIncoming(phis[i], &starts[i], &lp.pre, 1);
    st[i] = phis[i];
  }
  /* the next block's K and V into the other stage (free: every thread
   * passed the barrier that ended the block that read it) */
  LLVMValueRef nj = add(g, j, C(1));
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, nj, blocks), &join);
  LLVMValueRef ns = LLVMBuildAnd(g->b, nj, C(1), "");
  gpu_tile kn = kv_tile(s, 0, ns), vn = kv_tile(s, 1, ns);
  copy_rows(s, s->k, mul(g, nj, C(a->bn)), &kn);
  copy_rows(s, s->v, mul(g, nj, C(a->bn)), &vn);
  end_if(g, join);
  target->async_commit(g);
  LLVMValueRef *stp[2] = {st, st + nst};
  s->kbase = mul(g, j, C(a->bn));
  if (wg)
    attn_block_wg(s, LLVMBuildAnd(g->b, j, C(1), ""), &qt, st);
  else
    attn_block(s, LLVMBuildAnd(g->b, j, C(1), ""), qf, stp);
  target->async_wait(g, 0);
  if (wg) target->async_proxy_fence(g);
  target->barrier(g);
  loop_close(g, &lp, n_all, phis, st, starts, outs);
  for (int mb = 0; mb < mw; mb++) attn_store(s, q0, mb, outs + mb * nst);
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  return NULL;
}
