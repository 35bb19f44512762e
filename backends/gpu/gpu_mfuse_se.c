/* backends/gpu/gpu_mfuse_se.c: a squeeze-excite head as one kernel
 * (gpu_ms_fuse_se, gpu_msteps.h).
 *
 * As lowered, a squeeze-excite block's head (after the global average
 * pool, which writes fc1's f16 operand) is fc1 as a matrix kernel (a 1x1
 * convolution of 1x1 pixels, its activation fused), the f16 operand copy
 * of its result and fc2 as a second matrix kernel: three launches, each
 * of one tile or a few, over an [N][C] row. They become one SEHEAD launch
 * (gpu_pool.h), a workgroup per image, reading the pooled f16 row and the
 * matrix kernels' own f16 weights and f32 biases, writing fc2's f32 result,
 * which the gate copy (x * sigmoid(gate), gpu_mfuse.c) reads as before. The
 * gate stays in that copy: it also writes the next convolution's f16
 * operand, so folding it into the head would save nothing, and scaling
 * the next convolution's operand in its matrix kernel would need that
 * kernel to stage and rescale its cp.async tiles. */
#include <stdio.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"
#include "backends/gpu/gpu_pool.h"

/* Whether step s is a matrix kernel computing y [n][cout] = act(x [n][cin]
 * W + b): a 1x1 convolution of 1x1 pixels, f16 operands, f32 out, a bias,
 * no pool (its split, if any, goes with it); fills cin, cout and whether its weights are [cin][cout]
 * (channels-last plan) or [cout][cin]. */
static int fc_of(const gpu_model_plan *p, const gpu_mstep *s, int64_t n, int64_t *cin, int64_t *cout, int *t) {
  const gpu_problem *q = &s->plan.prob;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || q->kind != GPU_OP_CONV2D) return 0;
  if (q->cn != n || q->ch != 1 || q->cw != 1 || q->cr != 1 || q->cs != 1 || q->pad || q->groups != 1 || q->nhwc_io ||
      q->out_f16 || s->plan.out_f16 || q->epi.maxpool2x2 || q->epi.softmax || !q->epi.bias ||
      q->in_dtype != COV_F16)
    return 0;
  int w = s->args[1], b = s->args[3], y = s->args[2];
  if (w < 0 || b < 0 || y < 0 || p->bufs[w].kind != GPU_BUF_WEIGHT || p->bufs[w].dtype != COV_F16 ||
      p->bufs[w].numel != q->cc * q->ck || p->bufs[b].dtype != COV_F32 || p->bufs[b].numel != q->ck ||
      p->bufs[y].dtype != COV_F32 || p->bufs[y].numel != n * q->ck)
    return 0;
  *cin = q->cc, *cout = q->ck, *t = s->plan.nhwc;
  return 1;
}

int gpu_ms_fuse_se(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s1 = &p->steps[i];
  int64_t n = s1->plan.prob.cn, c, k, c2, k2;
  int t1, t2, j = -1, m = -1;
  if (!fc_of(p, s1, n, &c, &k, &t1) || p->bufs[s1->args[2]].kind != GPU_BUF_INTERMEDIATE) return 0;
  int a = s1->args[0], h = s1->args[2];
  if (a < 0 || p->bufs[a].dtype != COV_F16 || p->bufs[a].numel != n * c) return 0;
  if (gpu_ms_users(p, del, h, i, &j) != 1 || gpu_ms_f16_copy_from(p, del, h, i) != j) return 0;
  int h16 = p->steps[j].args[2];
  if (gpu_ms_users(p, del, h16, j, &m) != 1 || m <= j || p->bufs[h16].kind != GPU_BUF_INTERMEDIATE) return 0;
  const gpu_mstep *s2 = &p->steps[m];
  if (!fc_of(p, s2, n, &k2, &c2, &t2) || k2 != k || c2 != c || s2->args[0] != h16) return 0;
  gpu_mstep f = *s2;
  gpu_ew *e = &f.ew;
  memset(e, 0, sizeof *e); /* kernels compare bytewise */
  e->kind = GPU_EW_SEHEAD, e->in_dtype = COV_F16, e->out_dtype = COV_F32;
  e->N = n, e->C = c, e->K = k, e->R = t1, e->S = t2, e->n = n * GPU_EW_THREADS;
  e->post = gpu_act_fn(s1->plan.prob.epi.act), e->post0 = s1->plan.prob.epi.clip_lo, e->post1 = s1->plan.prob.epi.clip_hi;
  e->mul_fn = gpu_act_fn(s2->plan.prob.epi.act), e->mul0 = s2->plan.prob.epi.clip_lo, e->mul1 = s2->plan.prob.epi.clip_hi;
  if (!gpu_se_ok(e) || (s1->plan.prob.epi.act != GPU_ACT_NONE && e->post == GPU_FN_NONE) ||
      (s2->plan.prob.epi.act != GPU_ACT_NONE && e->mul_fn == GPU_FN_NONE))
    return 0;
  f.kkind = GPU_KERNEL_EW;
  memset(&f.plan, 0, sizeof f.plan);
  snprintf(f.kernel, sizeof f.kernel, "%.150s_se", s2->kernel);
  int args[GPU_SE_ARGS] = {a, s1->args[1], s2->args[2], s1->args[3], s2->args[1], s2->args[3]};
  for (int q = 0; q < GPU_CDL_MAX_ARGS; q++) f.args[q] = q < GPU_SE_ARGS ? args[q] : -1;
  f.n_args = GPU_SE_ARGS;
  f.grid[0] = (unsigned)n, f.grid[1] = f.grid[2] = 1;
  f.block[0] = GPU_EW_THREADS, f.block[1] = f.block[2] = 1;
  f.shared_bytes = gpu_se_shared_bytes(e);
  p->steps[m] = f;
  del[i] = del[j] = 1;
  return 1;
}
