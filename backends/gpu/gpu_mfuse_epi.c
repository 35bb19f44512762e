/* backends/gpu/gpu_mfuse_epi.c: element-wise work after a matmul joined to
 * the matrix kernel's epilogue at the plan level (gpu_ms_fuse_matrix_epi,
 * gpu_msteps.h; called by gpu_model_fuse).
 *
 * Residual adds: a transformer layer ends its attention and its MLP with a
 * projection (a matmul, its bias in the epilogue) whose result only the
 * residual Add reads: two launches and the add's fill. The add becomes the
 * epilogue's residual addend (epi.residual, kernel argument 6: y =
 * act(acc + bias) + r), the matrix kernel writing the add's result. The add
 * must take both inputs whole (no broadcast), its other input computed
 * before the matrix launch and not rewritten until the add. With split-K
 * only a tile's last workgroup runs the epilogue (on the partials summed
 * in range order), so r is added once and the result stays deterministic.
 *
 * f16 operands: a matmul whose f32 result only the next matrix kernel's
 * f16 operand copy reads (an MLP's first layer, GELU fused, feeding the
 * second) stores that copy itself (plan.out_f16, rounded once after bias,
 * activation and addend), and the copy goes.
 *
 * Channels-last convs: the same for a conv on NHWC f16 tensors whose
 * result only the residual copy back to f32 NCHW reads (ConvNeXt's fc2,
 * then the block's Add): the conv stores the copy's f32 NCHW sum itself
 * (fuse_conv_residual_at).
 *
 * Permuted rows: a matmul whose result only a copy reads that moves whole
 * rows (a seq-first transformer's projection turned batch-first before
 * its residual Add: [S][B][D] to [B][S][D]) stores its rows there itself
 * (plan.out_rq, out_r0, out_r1: the copy's map fitted and checked element
 * by element), before the residual add is joined. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* Whether step s is a matmul launch whose epilogue can take more work: its
 * direct epilogue (no staging, softmax or pool) writing f32 buffer y. */
static int open_matmul(const gpu_model_plan *p, const gpu_mstep *s) {
  const gpu_problem *q = &s->plan.prob;
  int y = s->args[2];
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_MATRIX && !s->pre && q->kind == GPU_OP_MATMUL &&
         !s->plan.staged && !q->epi.softmax && !q->epi.maxpool2x2 && !s->plan.out_f16 && y >= 0 &&
         p->bufs[y].kind == GPU_BUF_INTERMEDIATE && p->bufs[y].dtype == COV_F32 &&
         p->bufs[y].numel == s->plan.G * s->plan.M * s->plan.N;
}

/* Whether any step in (from, to) other than fills of b writes or reads
 * buffer b (reads: read != 0). */
static int touched_between(const gpu_model_plan *p, const char *del, int b, int from, int to, int read) {
  for (int j = from + 1; j < to; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (del[j] || (s->op == GPU_STEP_FILL && read)) continue;
    if (gpu_ms_writes(s, b)) return 1;
    for (int k = 0; read && s->op == GPU_STEP_LAUNCH && k < s->n_args; k++)
      if (s->args[k] == b) return 1;
  }
  return 0;
}

/* Step a, a matmul, with the residual add that alone reads its result as
 * its epilogue's addend; returns whether it did. */
static int fuse_residual_at(gpu_model_plan *p, char *del, int a) {
  gpu_mstep *s = &p->steps[a];
  int y = s->args[2], b = -1;
  if (!open_matmul(p, s) || s->plan.prob.epi.residual || gpu_ms_users(p, del, y, a, &b) != 1 || b < a) return 0;
  const gpu_mstep *add = &p->steps[b];
  const gpu_cdl_call *k = &add->ew.cdl;
  if (!gpu_ms_is_codelet(add, "add") || k->n_in != 2 || add->n_args != 3 || k->in_rank[0] != k->in_rank[1] ||
      memcmp(k->in_shape[0], k->in_shape[1], sizeof k->in_shape[0]) || (add->args[0] == y) == (add->args[1] == y))
    return 0;
  int r = add->args[0] == y ? add->args[1] : add->args[0], z = add->args[2];
  if (r < 0 || z < 0 || r == z || p->bufs[r].dtype != COV_F32 || p->bufs[r].numel != p->bufs[y].numel ||
      p->bufs[z].dtype != COV_F32 || p->bufs[z].numel != p->bufs[y].numel ||
      (p->bufs[z].kind != GPU_BUF_INTERMEDIATE && p->bufs[z].kind != GPU_BUF_OUTPUT))
    return 0;
  /* r complete before the matmul and unchanged until the add; z neither
   * read nor written in between (it is the add's result) */
  int before = 0;
  for (int j = 0; j < a && !before; j++) before = !del[j] && gpu_ms_writes(&p->steps[j], r);
  if ((p->bufs[r].kind == GPU_BUF_INTERMEDIATE && !before) || touched_between(p, del, r, a - 1, b, 0) ||
      touched_between(p, del, z, a, b, 1))
    return 0;
  gpu_ms_drop_fills(p, del, z);
  s->plan.prob.epi.residual = true;
  s->args[2] = z, s->args[6] = r;
  if (s->n_args < 7) {
    for (int j = s->n_args; j < 6; j++) s->args[j] = -1;
    s->n_args = 7;
  }
  size_t n = strlen(s->kernel);
  if (n + 4 < sizeof s->kernel) memcpy(s->kernel + n, "_res", 5);
  del[b] = 1;
  return 1;
}

/* Step a, a channels-last conv (NHWC f16 out: ConvNeXt's fc2, its layer
 * scale folded into the weights by the frontend) whose result only the
 * copy turning it back to f32 NCHW and adding the shortcut reads
 * (gpu_mfuse.c's residual copy): the conv adds the shortcut itself and
 * stores the copy's f32 NCHW result (epi.residual), the copy goes. The
 * shortcut is complete before the conv and unchanged until the copy, the
 * result neither read nor written in between. Returns whether it did. */
static int fuse_conv_residual_at(gpu_model_plan *p, char *del, int a) {
  gpu_mstep *s = &p->steps[a];
  const gpu_plan *pl = &s->plan;
  const gpu_problem *q = &pl->prob;
  int y = s->args[2], c = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || q->kind != GPU_OP_CONV2D ||
      !q->nhwc_io || !pl->out_f16 || !pl->staged || pl->pool_order || q->epi.residual ||
      (pl->oh * pl->ow) % 4 || y < 0 || p->bufs[y].kind != GPU_BUF_INTERMEDIATE ||
      gpu_ms_users(p, del, y, a, &c) != 1 || c < a)
    return 0;
  const gpu_mstep *t = &p->steps[c];
  const gpu_ew *e = &t->ew;
  int z = t->args[2], r = t->args[3], before = 0;
  if (t->op != GPU_STEP_LAUNCH || t->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || t->args[0] != y ||
      t->args[1] >= 0 || e->bias != 1 || e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE ||
      e->out_dtype != COV_F32 || z < 0 || p->bufs[z].dtype != COV_F32 ||
      r < 0 || r == z || !gpu_ms_reads_nhwc_as(p, e, z) || p->bufs[z].shape[1] != q->ck ||
      p->bufs[r].dtype != COV_F32 || p->bufs[r].numel != p->bufs[z].numel ||
      (p->bufs[z].kind != GPU_BUF_INTERMEDIATE && p->bufs[z].kind != GPU_BUF_OUTPUT))
    return 0;
  for (int j = 0; j < a && !before; j++) before = !del[j] && gpu_ms_writes(&p->steps[j], r);
  if ((p->bufs[r].kind == GPU_BUF_INTERMEDIATE && !before) || touched_between(p, del, r, a - 1, c, 0) ||
      touched_between(p, del, z, a, c, 1))
    return 0;
  gpu_ms_drop_fills(p, del, z);
  s->plan.prob.epi.residual = true, s->plan.out_f16 = false;
  s->args[2] = z;
  for (int j = s->n_args; j < 6; j++) s->args[j] = -1;
  s->args[6] = r, s->n_args = s->n_args < 7 ? 7 : s->n_args;
  size_t n = strlen(s->kernel);
  if (n + 4 < sizeof s->kernel) memcpy(s->kernel + n, "_res", 5);
  del[c] = 1;
  return 1;
}

/* Step a, a matmul whose f32 result only an f16 operand copy reads,
 * storing that copy's buffer itself; returns whether it did. */
static int fuse_f16_at(gpu_model_plan *p, char *del, int a) {
  gpu_mstep *s = &p->steps[a];
  int y = s->args[2], r = -1;
  if (!open_matmul(p, s) || gpu_ms_users(p, del, y, a, &r) != 1 || gpu_ms_f16_copy_from(p, del, y, a) != r) return 0;
  int h = p->steps[r].args[2];
  if (h < 0 || p->bufs[h].dtype != COV_F16 || p->bufs[h].numel != p->bufs[y].numel ||
      touched_between(p, del, h, a, r, 1))
    return 0;
  s->plan.out_f16 = true;
  s->args[2] = h;
  size_t n = strlen(s->kernel);
  if (n + 4 < sizeof s->kernel) memcpy(s->kernel + n, "_f16", 5);
  del[r] = 1;
  return 1;
}

enum { MAX_ROWS_ELEMS = 1 << 25 }; /* a permuted result checked element by element */

int gpu_ms_fit_rows(const gpu_ew *e, int64_t M, int64_t N, int64_t out[3]) {
  int64_t n = M * N;
  if (e->n != n || n > MAX_ROWS_ELEMS || M < 2) return 0;
  int64_t *row = malloc((size_t)M * sizeof *row);
  char *seen = calloc((size_t)n + 1, 1);
  int ok = row && seen;
  for (int64_t j = 0; j < n && ok; j++) {
    int64_t src, dst;
    gpu_ew_copy_at(e, j, &src, &dst);
    ok = src >= 0 && src < n && dst >= 0 && dst < n;
    if (ok && src % N == 0) row[src / N] = dst % N ? -1 : dst / N;
  }
  int64_t rq = 1, r0 = ok ? row[1] : 0, r1 = 0;
  ok = ok && row[0] == 0 && r0 > 0;
  while (ok && rq < M && row[rq] == rq * r0) rq++;
  if (ok && rq < M) r1 = row[rq];
  ok = ok && M % rq == 0 && r1 >= 0;
  for (int64_t j = 0; j < n && ok; j++) {
    int64_t src, dst, m;
    gpu_ew_copy_at(e, j, &src, &dst);
    m = src / N;
    ok = !seen[dst] && dst == (m / rq * r1 + m % rq * r0) * N + src % N;
    seen[dst] = 1;
  }
  free(row), free(seen);
  out[0] = rq, out[1] = r0, out[2] = r1;
  return ok && rq < M;
}

/* Step a, a matmul whose f32 result only a row-moving copy reads, storing
 * its rows where the copy puts them; returns whether it did. */
static int fuse_rows_at(gpu_model_plan *p, char *del, int a) {
  gpu_mstep *s = &p->steps[a];
  int y = s->args[2], c = -1;
  if (!open_matmul(p, s) || s->plan.out_rq || s->plan.G != 1 || s->plan.prob.epi.residual ||
      gpu_ms_users(p, del, y, a, &c) != 1 || c < a)
    return 0;
  const gpu_mstep *t = &p->steps[c];
  const gpu_ew *e = &t->ew;
  int z = t->args[2], writers = 0;
  if (t->op != GPU_STEP_LAUNCH || t->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || t->args[0] != y || z < 0 ||
      z == y || t->args[1] >= 0 || t->args[3] >= 0 || e->in_dtype == COV_F16 || e->out_dtype != COV_F32 || e->bias ||
      e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || gpu_ew_raw(e) ||
      p->bufs[z].kind != GPU_BUF_INTERMEDIATE || p->bufs[z].dtype != COV_F32 || p->bufs[z].numel != p->bufs[y].numel ||
      touched_between(p, del, z, a, c, 1))
    return 0;
  for (int j = 0; j < p->n_steps; j++) writers += !del[j] && gpu_ms_writes(&p->steps[j], z);
  int64_t f[3];
  if (writers != 1 || !gpu_ms_fit_rows(e, s->plan.M, s->plan.N, f)) return 0;
  s->plan.out_rq = f[0], s->plan.out_r0 = f[1], s->plan.out_r1 = f[2];
  s->args[2] = z;
  size_t n = strlen(s->kernel);
  if (n + 5 < sizeof s->kernel) memcpy(s->kernel + n, "_rows", 6);
  del[c] = 1;
  return 1;
}

int gpu_ms_fuse_matrix_epi(gpu_model_plan *p, char *del) {
  int any = 0;
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_rows_at(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_residual_at(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_conv_residual_at(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_f16_at(p, del, a);
  return any;
}
