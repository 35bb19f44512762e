/* backends/gpu/gpu_lower_aln.c: a LayerNorm over the rows of the matrix
 * kernel's A operand, applied as the tiles are loaded (prob.a_lnorm), so a
 * pre-norm transformer's LayerNorm is no launch of its own: the matmul
 * reads the f32 residual stream the norm reads.
 *
 * At its start each workgroup takes the statistics of its bm rows: a row
 * per GPU_ALN_LANES threads (a warp, or half an AMDGPU wave), lane l
 * holding the row's values l, l + 32, ... in registers; the mean, then
 * the mean square deviation, each summed lane by lane in order and then
 * over the lanes by a butterfly (masks 16 .. 1); rstd = 1 / sqrt(var +
 * eps). That is the LayerNorm kernel's arithmetic at 32 lanes a row
 * (gpu_lnorm.h), so the normalised operand is bit for bit what that kernel
 * stores for rows up to 256 wide, and gpu_model_emulate follows it. Mean
 * and rstd go to shared memory after the pipeline's bytes; each A element
 * is then read as f32 through the guarded element copies and becomes
 * (a - mean) * rstd * gamma[k] + beta[k], rounded to the 16-bit input
 * dtype before it is stored into the tile.
 *
 * gamma and beta are applied here rather than folded into the weights
 * (W' = diag(gamma) W, bias' = bias + beta W): folding would round the
 * operand and W' differently from the LayerNorm it replaces, moving the
 * model's error, and would need new constants per consumer; two loads of
 * K-long vectors that stay in L1 cost little next to the row reads. */
#include "backends/gpu/gpu_lower.h"

/* v of the lane `mask` lanes away (mask < 32) */
static LLVMValueRef exchange(gpu_gen *g, LLVMValueRef v, int mask) {
  if (g->target->shfl_xor) return g->target->shfl_xor(g, v, mask);
  LLVMValueRef i = LLVMBuildBitCast(g->b, v, g->i32, "");
  return LLVMBuildBitCast(g->b, g->target->lane_xor(g, i, mask), g->f32, "");
}

static LLVMValueRef lanes_sum(gpu_gen *g, LLVMValueRef v) {
  for (int mask = GPU_ALN_LANES / 2; mask >= 1; mask /= 2) v = LLVMBuildFAdd(g->b, v, exchange(g, v, mask), "");
  return v;
}

static LLVMValueRef fsel(gpu_gen *g, LLVMValueRef ok, LLVMValueRef v) {
  return ok ? LLVMBuildSelect(g->b, ok, v, LLVMConstReal(g->f32, 0.0), "") : v;
}

/* The norm input's row of A's row m (i32) of batch k->gidx. */
static LLVMValueRef source_row(kernel *k, LLVMValueRef m) {
  gpu_gen *g = k->g;
  const gpu_problem *q = &k->p->prob;
  if (!q->a_rq) return add(g, mul(g, k->gidx, C(k->p->M)), m);
  return add(g, mul(g, udiv(g, m, q->a_rq), C(q->a_r1)), mul(g, urem(g, m, q->a_rq), C(q->a_r0)));
}

enum { ALN_BATCH_VALUES = 32 }; /* values a lane holds for the rows it takes at once */
_Static_assert(ALN_BATCH_VALUES >= GPU_ALN_MAX_K / GPU_ALN_LANES, "a lane holds one whole row");

/* The statistics of tile rows r, r + stride, ... (n of them, i32, < bm) by
 * this thread's lane, their loads and lane sums side by side so their
 * latencies overlap; lane 0 stores them. */
static void row_stats(kernel *k, LLVMValueRef r, int n, int stride, LLVMValueRef lane) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  int steps = (int)((p->K + GPU_ALN_LANES - 1) / GPU_ALN_LANES);
  LLVMValueRef v[ALN_BATCH_VALUES], ok[GPU_ALN_MAX_K / GPU_ALN_LANES], rows[ALN_BATCH_VALUES];
  LLVMValueRef sum[ALN_BATCH_VALUES], dev[ALN_BATCH_VALUES], mean[ALN_BATCH_VALUES];
  LLVMValueRef zero = LLVMConstReal(g->f32, 0.0), fk = LLVMConstReal(g->f32, (double)p->K);
  for (int s = 0; s < steps; s++) /* only the last step runs past K */
    ok[s] = (long long)(s + 1) * GPU_ALN_LANES > p->K ? ult(g, add(g, lane, C((long long)s * GPU_ALN_LANES)), p->K) : NULL;
  for (int j = 0; j < n; j++) {
    rows[j] = add(g, r, C((long long)j * stride));
    LLVMValueRef gm = add(g, k->m0, rows[j]), live = ult(g, gm, p->M);
    /* rows past M read row 0 of the batch and store statistics nobody uses */
    LLVMValueRef base = mul(g, source_row(k, LLVMBuildSelect(g->b, live, gm, C(0), "")), C(p->K));
    sum[j] = zero, dev[j] = zero;
    for (int s = 0; s < steps; s++) {
      LLVMValueRef ch = add(g, lane, C((long long)s * GPU_ALN_LANES));
      LLVMValueRef c = ok[s] ? LLVMBuildSelect(g->b, ok[s], ch, C(0), "") : ch;
      v[j * steps + s] = fsel(g, ok[s], LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->A, add(g, base, c)), ""));
      sum[j] = LLVMBuildFAdd(g->b, sum[j], v[j * steps + s], "");
    }
  }
  for (int j = 0; j < n; j++) mean[j] = LLVMBuildFDiv(g->b, lanes_sum(g, sum[j]), fk, "");
  for (int j = 0; j < n; j++)
    for (int s = 0; s < steps; s++) {
      LLVMValueRef d = fsel(g, ok[s], LLVMBuildFSub(g->b, v[j * steps + s], mean[j], ""));
      dev[j] = LLVMBuildFAdd(g->b, dev[j], LLVMBuildFMul(g->b, d, d, ""), "");
    }
  LLVMBasicBlockRef join;
  LLVMValueRef rstd[ALN_BATCH_VALUES];
  for (int j = 0; j < n; j++) {
    LLVMValueRef var = LLVMBuildFDiv(g->b, lanes_sum(g, dev[j]), fk, "");
    LLVMValueRef sq = LLVMBuildFAdd(g->b, var, LLVMConstReal(g->f32, p->prob.a_ln_eps), "");
    rstd[j] = LLVMBuildFDiv(g->b, LLVMConstReal(g->f32, 1.0), gpu_call_intrinsic(g, "llvm.sqrt", &g->f32, 1, &sq, 1), "");
  }
  begin_if(g, LLVMBuildICmp(g->b, LLVMIntEQ, lane, C(0), ""), &join);
  for (int j = 0; j < n; j++) {
    LLVMBuildStore(g->b, mean[j], gept(g, g->f32, k->ln_stats, rows[j]));
    LLVMBuildStore(g->b, rstd[j], gept(g, g->f32, k->ln_stats, add(g, rows[j], C(p->bm))));
  }
  end_if(g, join);
}

/* Rows a thread takes at once: a divisor of its bm / slots rows holding
 * at most ALN_BATCH_VALUES values a lane (one row at least). */
static int rows_at_once(const gpu_plan *p) {
  int steps = (int)((p->K + GPU_ALN_LANES - 1) / GPU_ALN_LANES), per = p->bm / (p->threads / GPU_ALN_LANES), n = 1;
  for (int c = 2; c <= per && c * steps <= ALN_BATCH_VALUES; c++)
    if (per % c == 0) n = c;
  return n;
}

cov_status gpu_k_aln_check(const gpu_plan *p) {
  if (!p->prob.a_lnorm) return NULL;
  if (!gpu_aln_ok(p) || p->shared_bytes < 8u * (unsigned)p->bm)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob),
                     "GPU lowering: a LayerNorm over A's rows needs a 16-bit matmul with guarded element copies, K "
                     "<= %d (K is %lld)",
                     GPU_ALN_MAX_K, (long long)p->K);
  return NULL;
}

cov_status gpu_k_aln_stats(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  if (!g->target->shfl_xor && !g->target->lane_xor)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob), "GPU lowering: a LayerNorm over A's rows needs the target's lane exchange");
  k->ln_stats = gep8(g, k->smem, C(p->shared_bytes - 8u * (unsigned)p->bm));
  LLVMValueRef t = g->target->thread_id(g);
  int slots = p->threads / GPU_ALN_LANES, n = rows_at_once(p);
  gpu_loop l;
  LLVMValueRef r = loop_open(g, &l, udiv(g, t, GPU_ALN_LANES), p->bm, (long long)n * slots);
  /* rows all past M (a short last tile) take no statistics: r, their
   * first, is the same for a row's 32 lanes, so the lanes exchanging
   * values take the same branch */
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, add(g, k->m0, r), p->M), &join);
  row_stats(k, r, n, slots, urem(g, t, GPU_ALN_LANES));
  end_if(g, join);
  loop_close(g, &l, 0, NULL, NULL, NULL, NULL);
  g->target->barrier(g);
  return NULL;
}

LLVMValueRef gpu_k_aln_fetch(kernel *k, LLVMValueRef row, LLVMValueRef m, LLVMValueRef kk, LLVMValueRef ok) {
  gpu_gen *g = k->g;
  LLVMValueRef c = LLVMBuildSelect(g->b, ok, kk, C(0), "");
  LLVMValueRef idx = add(g, mul(g, source_row(k, LLVMBuildSelect(g->b, ok, m, C(0), "")), C(k->p->K)), c);
  LLVMValueRef x = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->A, idx), "");
  LLVMValueRef mean = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->ln_stats, row), "");
  LLVMValueRef rstd = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->ln_stats, add(g, row, C(k->p->bm))), "");
  LLVMValueRef v = LLVMBuildFMul(g->b, LLVMBuildFSub(g->b, x, mean, ""), rstd, "");
  v = LLVMBuildFMul(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->ln_w, c), ""), "");
  v = LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->ln_b, c), ""), "");
  return LLVMBuildSelect(g->b, ok, LLVMBuildFPTrunc(g->b, v, g->in_t, ""), LLVMConstNull(g->in_t), "");
}
