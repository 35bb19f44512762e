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
 * activation and addend), and the copy goes. */
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

/* Step a, a matmul whose f32 result only an f16 operand copy reads,
 * storing that copy's buffer itself; returns whether it did. */
static int fuse_f16_at(gpu_model_plan *p, char *del, int a) {
  gpu_mstep *s = &p->steps[a];
  int y = s->args[2], r = -1;
  if (!open_matmul(p, s) || gpu_ms_users(p, del, y, a, &r) != 1 || gpu_ms_f16_copy_from(p, del, y, a) != r) return 0;
  int h = p->steps[r].args[2];
  if (h < 0 || p->bufs[h].dtype != COV_F16 || p->bufs[h].numel != p->bufs[y].numel) return 0;
  s->plan.out_f16 = true;
  s->args[2] = h;
  size_t n = strlen(s->kernel);
  if (n + 4 < sizeof s->kernel) memcpy(s->kernel + n, "_f16", 5);
  del[r] = 1;
  return 1;
}

int gpu_ms_fuse_matrix_epi(gpu_model_plan *p, char *del) {
  int any = 0;
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_residual_at(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_f16_at(p, del, a);
  return any;
}
