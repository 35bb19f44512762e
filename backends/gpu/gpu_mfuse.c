/* backends/gpu/gpu_mfuse.c: element-wise work fused across layer groups at
 * the plan level (gpu_model_fuse, gpu_mplan.h).
 *
 * Residual adds: after gpu_mlayout.c a residual block ends in three
 * launches and a fill: the conversion of the last conv's NHWC f16 output
 * to f32 NCHW, the fill zeroing the add's output (the codelet kernel's
 * start), the add with the shortcut, and the activation (relu, relu6,
 * clip, gelu) as a group of its own. When the converted buffer is read by
 * the add alone and the add's result by the activation alone (or by
 * anything, without an activation), they are one copy kernel: y[dst] =
 * post(x[src] + shortcut[dst]) (gpu_ew COPY with `bias` and `post`),
 * launched where the add was, writing every element of the result (so the
 * fill goes). The add must take both inputs whole (no broadcast). Where
 * the result is also converted to NHWC f16 for the next convolution, that
 * store is made by the same launch (`also`).
 *
 * SiLU: exported as a Sigmoid group and a Mul group (x * sigmoid(x), a
 * fill between), it becomes one copy applying GPU_FN_SILU, which writes
 * the f16 operand copy of the next matrix kernel instead where that copy
 * is the result's only reader. A squeeze-excite gate (a Sigmoid of one
 * value per channel, then the Mul broadcasting it over the pixels) is one
 * copy the same way: x * sigmoid(gate[dst / hw]) (scale_hw). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* Whether step s is the conversion of f32 NCHW buffer b to NHWC f16
 * (gpu_mlayout.c's), which the fused copy can store as well. */
static int to_nhwc_of(const gpu_model_plan *p, const gpu_mstep *s, int b) {
  const gpu_mbuf *x = &p->bufs[b];
  const gpu_ew *e = &s->ew;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || s->args[0] != b ||
      e->in_dtype == COV_F16 || e->out_dtype != COV_F16 || e->bias || e->also || e->post != GPU_FN_NONE || x->rank != 4 ||
      e->n != x->numel || e->run != 1 || e->s0 || e->d0)
    return 0;
  int64_t c = x->shape[1], hw = x->shape[2] * x->shape[3];
  const int64_t rep[3] = {c, hw, x->shape[0]}, ss[3] = {hw, 1, c * hw}, ds[3] = {1, c, c * hw};
  for (int l = 0; l < GPU_COPY_LEVELS; l++)
    if (e->rep[l] != rep[l] || e->ss[l] != ss[l] || e->ds[l] != ds[l]) return 0;
  return 1;
}

/* Step a (a conversion back to NCHW) fused with the add reading it and
 * the activation after; returns whether it did. */
static int fuse_at(gpu_model_plan *p, char *del, int a) {
  const gpu_mstep *s = &p->steps[a];
  int y = s->args[2], b = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || s->ew.kind != GPU_EW_COPY ||
      s->ew.in_dtype != COV_F16 || s->ew.out_dtype != COV_F32 || s->ew.bias || s->ew.post != GPU_FN_NONE || y < 0 ||
      p->bufs[y].kind != GPU_BUF_INTERMEDIATE || s->ew.n != p->bufs[y].numel || gpu_ms_users(p, del, y, a, &b) != 1)
    return 0;
  gpu_mstep *add = &p->steps[b];
  const gpu_cdl_call *k = &add->ew.cdl;
  if (!gpu_ms_is_codelet(add, "add") || k->n_in != 2 || add->n_args != 3 || k->in_rank[0] != k->in_rank[1] ||
      memcmp(k->in_shape[0], k->in_shape[1], sizeof k->in_shape[0]) || (add->args[0] == y) == (add->args[1] == y))
    return 0;
  int other = add->args[0] == y ? add->args[1] : add->args[0], z = add->args[2];
  if (p->bufs[other].dtype != COV_F32 || p->bufs[other].numel != p->bufs[y].numel ||
      p->bufs[z].dtype != COV_F32 || p->bufs[z].numel != p->bufs[y].numel)
    return 0;
  gpu_mstep f = *s;
  f.group = add->group;
  memcpy(f.label, add->label, sizeof f.label);
  snprintf(f.kernel, sizeof f.kernel, "%.150s_add", s->kernel);
  f.ew.bias = 1, f.args[3] = other, f.args[2] = z;
  gpu_ms_drop_fills(p, del, z);
  int c = -1;
  if (p->bufs[z].kind == GPU_BUF_INTERMEDIATE && gpu_ms_users(p, del, z, b, &c) == 1 && p->steps[c].args[0] == z &&
      gpu_ms_activation(&p->steps[c], &f.ew) && p->bufs[p->steps[c].args[1]].dtype == COV_F32) {
    f.args[2] = p->steps[c].args[1];
    gpu_ms_drop_fills(p, del, f.args[2]);
    del[c] = 1;
  }
  /* the result's conversion to NHWC for the next convolution: the same
   * launch stores it */
  int out = f.args[2], d = -1;
  for (int j = b + 1; j < p->n_steps && d < 0; j++)
    if (!del[j] && to_nhwc_of(p, &p->steps[j], out)) d = j;
  if (d >= 0 && p->bufs[out].rank == 4) {
    f.ew.also = 1, f.args[1] = p->steps[d].args[2];
    f.ew.N = p->bufs[out].shape[0], f.ew.C = p->bufs[out].shape[1];
    f.ew.H = p->bufs[out].shape[2], f.ew.W = p->bufs[out].shape[3];
    del[d] = 1;
  }
  del[a] = 1;
  *add = f;
  return 1;
}

/* Step i, a sigmoid, with the mul of its input by its result (SiLU, as
 * exported: two groups, a fill between) as one copy applying x *
 * sigmoid(x); where the result is read only by its f16 operand copy, the
 * copy writes that instead. Returns whether it did. */
static int fuse_silu_at(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  if (!gpu_ms_is_codelet(s, "sigmoid") || s->ew.cdl.n_in != 1 || s->n_args != 2) return 0;
  int x = s->args[0], sg = s->args[1], m = -1;
  if (p->bufs[sg].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, sg, -1 - i, &m) != 1) return 0;
  gpu_mstep *mul = &p->steps[m];
  const gpu_cdl_call *k = &mul->ew.cdl;
  if (!gpu_ms_is_codelet(mul, "mul") || k->n_in != 2 || mul->n_args != 3 || k->in_rank[0] != k->in_rank[1] ||
      memcmp(k->in_shape[0], k->in_shape[1], sizeof k->in_shape[0]) ||
      !((mul->args[0] == x && mul->args[1] == sg) || (mul->args[0] == sg && mul->args[1] == x)))
    return 0;
  int z = mul->args[2];
  if (p->bufs[x].dtype != COV_F32 || p->bufs[z].dtype != COV_F32 || p->bufs[z].numel != p->bufs[x].numel) return 0;
  gpu_ms_drop_fills(p, del, sg);
  gpu_mstep f = gpu_ms_fused_copy(p, mul, x, z, "_silu");
  f.ew.post = GPU_FN_SILU;
  gpu_ms_replace(p, del, i, m, &f);
  return 1;
}

/* Step i, a sigmoid of a squeeze-excite's gate (one value per channel),
 * with the mul scaling the activation by it (a broadcast over the
 * pixels), as one copy: x * sigmoid(gate) per channel (scale_hw); its f16
 * operand copy folded in as for SiLU. Returns whether it did. */
static int fuse_gate_at(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  if (!gpu_ms_is_codelet(s, "sigmoid") || s->ew.cdl.n_in != 1 || s->n_args != 2) return 0;
  int gate = s->args[0], sg = s->args[1], m = -1;
  if (p->bufs[sg].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, sg, -1 - i, &m) != 1) return 0;
  gpu_mstep *mul = &p->steps[m];
  const gpu_cdl_call *k = &mul->ew.cdl;
  if (!gpu_ms_is_codelet(mul, "mul") || k->n_in != 2 || mul->n_args != 3 || k->in_rank[0] != 4 || k->in_rank[1] != 4 ||
      (mul->args[0] == sg) == (mul->args[1] == sg))
    return 0;
  int gi = mul->args[0] == sg ? 0 : 1, x = mul->args[1 - gi], z = mul->args[2];
  /* the gate equals x's shape up to an axis and is 1 after it: constant
   * over x's innermost `hw` elements (the frontend's rank-4 forms put the
   * pixels last: [1, 1, C, H*W] by [1, 1, C, 1]) */
  const int64_t *gs = k->in_shape[gi], *xs = k->in_shape[1 - gi];
  int lead = 4;
  while (lead > 0 && gs[lead - 1] == 1) lead--;
  int64_t outer = 1, hw = 1;
  for (int d = 0; d < 4; d++) {
    if (d < lead && gs[d] != xs[d]) return 0;
    if (d < lead) outer *= xs[d];
    else hw *= xs[d];
  }
  if (hw < 2 || p->bufs[x].dtype != COV_F32 || p->bufs[gate].dtype != COV_F32 || p->bufs[z].dtype != COV_F32 ||
      p->bufs[x].numel != outer * hw || p->bufs[z].numel != p->bufs[x].numel || p->bufs[gate].numel != outer)
    return 0;
  gpu_ms_drop_fills(p, del, sg);
  gpu_mstep f = gpu_ms_fused_copy(p, mul, x, z, "_gate");
  f.ew.scale_hw = hw, f.args[3] = gate;
  gpu_ms_replace(p, del, i, m, &f);
  return 1;
}

cov_status gpu_model_fuse(gpu_model_plan *p) {
  char *del = calloc((size_t)p->n_steps + 1, 1);
  if (!del) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int any = 0;
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && (fuse_at(p, del, a) || fuse_silu_at(p, del, a) || fuse_gate_at(p, del, a));
  int n = 0;
  for (int i = 0; i < p->n_steps && any; i++)
    if (!del[i]) p->steps[n++] = p->steps[i];
  if (any) p->n_steps = n;
  free(del);
  return NULL;
}
