/* backends/gpu/gpu_mfuse_lnpro.c: a LayerNorm over rows joined to the
 * matrix kernels reading its result (gpu_ms_fuse_ln_prologue, called by
 * gpu_model_fuse after gpu_mfuse_ln.c has made each LayerNorm one
 * GPU_EW_LNORM launch).
 *
 * A pre-norm transformer layer normalises its residual stream x twice, each
 * time only for the next matmul (the QKV projection, the MLP's first layer):
 * the LayerNorm launch writes the f16 operand h that the matmul alone
 * reads. Where every reader of h is a matmul whose kernel can normalise its
 * A rows as it loads them (prob.a_lnorm, gpu_lower_aln.c: guarded element
 * copies, K = the norm's width up to GPU_ALN_MAX_K, 16-bit), each reads x
 * instead, with the norm's gamma, beta (arguments 7, 8) and epsilon, and
 * the LayerNorm launch goes. x must then stay unchanged from the LayerNorm
 * to its last reader; it does in a transformer (the next residual add
 * writes a new buffer), and it is still the later residual add's input.
 *
 * Rows moved on the way: a LayerNorm storing its rows permuted (`rq`: a
 * seq-first transformer's QKV operand, [S][B] rows of [B][S]) has each
 * matmul read input row perm^-1(m) for its row m; a LayerNorm whose f32
 * result only a copy reads that picks whole rows into an f16 operand (ViT's
 * and BERT's class token before the head) has the matmul read the picked
 * rows, and the copy goes too. Either map must fit (m / q) * r1 + (m % q)
 * * r0 (prob.a_rq, a_r0, a_r1), checked row by row. A LayerNorm whose f32
 * result is read otherwise (a post-norm layer: the result is the residual,
 * `dual`) or over the channels of an image (W > 1) stays a launch. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* the statistics' 8 bytes a row added to a plan's shared memory stay
 * within the least any GPU target offers a workgroup (the plan pass does
 * not see the target's capacity) */
enum { GPU_ALN_MAX_SHARED = 64 * 1024, GPU_ALN_MAX_ROWS = 1 << 22 };

/* Whether step s reads h as a matmul's A operand that it can normalise:
 * n rows of c (one batch where rows are mapped, map[0] != 0); x not its
 * residual addend. */
static int takes_rows(const gpu_mstep *s, int h, int x, int64_t n, int64_t c, const int64_t map[3]) {
  const gpu_plan *pl = &s->plan;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || pl->prob.kind != GPU_OP_MATMUL ||
      pl->prob.in_dtype != COV_F16 || pl->prob.a_lnorm || s->args[0] != h || pl->G * pl->M != n || pl->K != c ||
      s->n_args > 7)
    return 0;
  for (int k = 1; k < s->n_args; k++)
    if (s->args[k] == h || s->args[k] == x) return 0;
  gpu_plan q = *pl;
  q.prob.a_lnorm = true, q.prob.a_rq = map[0], q.prob.a_r0 = map[1], q.prob.a_r1 = map[2];
  uint64_t need = gpu_plan_shared_need(&q, 2);
  return gpu_aln_ok(&q) && (need <= GPU_ALN_MAX_SHARED || need <= pl->shared_bytes);
}

/* Matmul step s reading x through the norm of step f, rows through map. */
static void join(gpu_mstep *s, const gpu_mstep *f, const int64_t map[3]) {
  gpu_problem *q = &s->plan.prob;
  q->a_lnorm = true, q->a_ln_eps = f->ew.post0, q->a_rq = map[0], q->a_r0 = map[1], q->a_r1 = map[2];
  s->plan.shared_bytes = (unsigned)gpu_plan_shared_need(&s->plan, 2);
  s->shared_bytes = s->plan.shared_bytes;
  for (int k = s->n_args; k < 7; k++) s->args[k] = -1;
  s->args[0] = f->args[0], s->args[7] = f->args[1], s->args[8] = f->args[3], s->n_args = 9;
  size_t n = strlen(s->kernel);
  if (n + 3 < sizeof s->kernel) memcpy(s->kernel + n, "_ln", 4);
}

/* row[0 .. n) as (m / q) * r1 + (m % q) * r0 into map; {0, 0, 0} for the
 * identity. Returns whether it fits. */
static int fit_map(const int64_t *row, int64_t n, int64_t map[3]) {
  map[0] = map[1] = map[2] = 0;
  if (n < 1 || row[0] != 0) return 0;
  int64_t r0 = n > 1 ? row[1] : 1, q = 1;
  while (q < n && row[q] == q * r0) q++;
  int64_t r1 = q < n ? row[q] : 0;
  for (int64_t m = 0; m < n; m++)
    if (row[m] != m / q * r1 + m % q * r0) return 0;
  if (q < n || r0 != 1) map[0] = q, map[1] = r0, map[2] = r1;
  return 1;
}

/* Every user of h but step `from` (its writer) and fills a matmul after
 * it taking the n rows of c of LayerNorm L's input x through map, x
 * unchanged from L to the last one: each joined to L. Returns whether they
 * were (none: no). */
static int join_readers(gpu_model_plan *p, const char *del, int L, int from, int h, int64_t n, int64_t c,
                        const int64_t map[3]) {
  const gpu_mstep *f = &p->steps[L];
  int x = f->args[0], readers = 0, last = -1;
  for (int j = 0; j < p->n_steps; j++) {
    if (del[j] || j == L || j == from || p->steps[j].op == GPU_STEP_FILL) continue;
    const gpu_mstep *s = &p->steps[j];
    int uses = gpu_ms_writes(s, h);
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) uses |= s->args[k] == h;
    if (!uses) continue;
    if (j < from || !takes_rows(s, h, x, n, c, map)) return 0;
    readers++, last = j;
  }
  for (int j = L + 1; j <= last; j++) /* x unchanged until the last reader */
    if (!del[j] && gpu_ms_writes(&p->steps[j], x)) return 0;
  if (!readers) return 0;
  for (int j = L + 1; j <= last; j++)
    if (!del[j] && p->steps[j].op == GPU_STEP_LAUNCH && p->steps[j].kkind == GPU_KERNEL_MATRIX &&
        p->steps[j].args[0] == h)
      join(&p->steps[j], f, map);
  return 1;
}

/* The rows of A as LayerNorm f stores them permuted (row n at (n / rq) *
 * r1 + (n % rq) * r0): input row perm^-1(m) for row m, fitted into map. */
static int inverse_map(const gpu_ew *e, int64_t map[3]) {
  int64_t n = e->N, *inv = n <= GPU_ALN_MAX_ROWS ? malloc((size_t)n * sizeof *inv) : NULL;
  int ok = inv != NULL;
  for (int64_t m = 0; ok && m < n; m++) inv[m] = -1;
  for (int64_t r = 0; ok && r < n; r++) {
    int64_t to = r / e->rq * e->r1 + r % e->rq * e->r0;
    ok = to >= 0 && to < n && inv[to] < 0;
    if (ok) inv[to] = r;
  }
  ok = ok && fit_map(inv, n, map);
  free(inv);
  return ok;
}

/* Whether step c copies whole rows of y (f32, rows of width w) into an f16
 * buffer nothing else writes, every element of it once: the source row of
 * each of its rows fitted into map, their count in *rows. */
static int picks_rows(const gpu_model_plan *p, const char *del, const gpu_mstep *c, int y, int64_t w, int64_t map[3],
                      int64_t *rows) {
  const gpu_ew *e = &c->ew;
  int z = c->args[2], writers = 0;
  if (c->op != GPU_STEP_LAUNCH || c->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || c->args[0] != y ||
      c->args[1] >= 0 || c->args[3] >= 0 || z < 0 || e->in_dtype == COV_F16 || e->out_dtype != COV_F16 || e->bias ||
      e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || gpu_ew_raw(e) ||
      p->bufs[z].kind != GPU_BUF_INTERMEDIATE || p->bufs[z].dtype != COV_F16 || e->n != p->bufs[z].numel ||
      e->n % w || e->n / w > GPU_ALN_MAX_ROWS)
    return 0;
  for (int j = 0; j < p->n_steps; j++) writers += !del[j] && gpu_ms_writes(&p->steps[j], z);
  int64_t n = e->n / w, *row = malloc((size_t)n * sizeof *row);
  char *seen = calloc((size_t)e->n + 1, 1);
  int ok = writers == 1 && row && seen;
  for (int64_t m = 0; ok && m < n; m++) row[m] = -1;
  for (int64_t j = 0; ok && j < e->n; j++) {
    int64_t src, dst;
    gpu_ew_copy_at(e, j, &src, &dst);
    ok = src >= 0 && src < p->bufs[y].numel && dst >= 0 && dst < e->n && !seen[dst] && src % w == dst % w &&
         (row[dst / w] < 0 || row[dst / w] == src / w);
    if (ok) seen[dst] = 1, row[dst / w] = src / w;
  }
  ok = ok && fit_map(row, n, map);
  free(row), free(seen);
  *rows = n;
  return ok;
}

/* Step L, a row LayerNorm writing only the f16 operand of matmuls that can
 * take it (directly, or through a copy picking rows of its f32 result),
 * joined to them; returns whether it was. */
static int fuse_at(gpu_model_plan *p, char *del, int L) {
  const gpu_mstep *f = &p->steps[L];
  const gpu_ew *e = &f->ew;
  if (f->op != GPU_STEP_LAUNCH || f->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_LNORM || e->W != 1 || e->dual ||
      e->also || f->n_args != 4)
    return 0;
  int x = f->args[0], h = f->args[2], c = -1;
  if (x < 0 || h < 0 || f->args[1] < 0 || f->args[3] < 0 || p->bufs[x].dtype != COV_F32 ||
      p->bufs[x].numel != e->N * e->C || p->bufs[h].kind != GPU_BUF_INTERMEDIATE || p->bufs[h].numel != e->N * e->C)
    return 0;
  int64_t map[3] = {0, 0, 0}, rows = e->N;
  if (e->out_dtype == COV_F16) {
    if (e->rq && !inverse_map(e, map)) return 0;
    if (!join_readers(p, del, L, L, h, rows, e->C, map)) return 0;
  } else {
    if (e->out_dtype != COV_F32 || e->rq || gpu_ms_users(p, del, h, L, &c) != 1 || c < L ||
        !picks_rows(p, del, &p->steps[c], h, e->C, map, &rows))
      return 0;
    int z = p->steps[c].args[2];
    if (!join_readers(p, del, L, c, z, rows, e->C, map)) return 0;
    del[c] = 1;
    gpu_ms_drop_fills(p, del, z);
  }
  gpu_ms_drop_fills(p, del, h);
  del[L] = 1;
  return 1;
}

int gpu_ms_fuse_ln_prologue(gpu_model_plan *p, char *del) {
  int any = 0;
  for (int L = 0; L < p->n_steps; L++) any |= !del[L] && fuse_at(p, del, L);
  return any;
}
