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
 * copy the same way: x * sigmoid(gate[dst / hw]) (scale_hw); SiLU whose
 * input's producer can take it is joined to it earlier (gpu_mfuse_act.c).
 *
 * A Mul by a per-channel factor (a layer scale, a gate after its
 * hard_sigmoid) is one copy x * a1[c] (mul_c), with the residual Add after
 * it where that is the product's only reader, reading a channels-last
 * result through its conversion back where that is the Mul's only input.
 * LayerNorm: gpu_mfuse_ln.c. A direct convolution, f32 copy or global
 * average pool whose result only an f16 operand copy reads writes that
 * copy's buffer.
 *
 * NHWC residual adds, once the rest is fused: a residual copy whose
 * shortcut some earlier launch also stores channels-last (a residual
 * copy's second store, a conversion for a convolution) reads that f16
 * form (bias 2), and a residual copy whose f32 result nobody reads any
 * more stores only its NHWC f16 form (also 2). A shortcut converted back
 * from a channels-last result (a downsample) is read in that NHWC form,
 * its conversion dropped once unread; a residual copy that then moves only
 * NHWC f16 walks them in NHWC order (coalesced). Concats: gpu_mfuse_cat.c.
 * The f16 operand copies of one buffer (one per matrix kernel reading it,
 * as lowered group by group) are one. An add of a whole constant (ViT's
 * position embedding) to a buffer that plain copies write (its Concat)
 * is added by those copies, and an add to a row gather's result (an
 * embedding plus the position embedding) by the gather. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

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
    if (!del[j] && gpu_ms_to_nhwc(p, &p->steps[j], out)) d = j;
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

/* How mul step m broadcasts its input gi over the other: the other's
 * elements seen as [outer][mid][hw] with gi's numel == mid (gi's shape is
 * the other's on the middle axes, 1 elsewhere); 0 if not so. */
static int per_channel(const gpu_model_plan *p, const gpu_mstep *m, int gi, int64_t *mid, int64_t *hw) {
  const gpu_cdl_call *k = &m->ew.cdl;
  int r = k->in_rank[0];
  if (k->in_rank[1] != r) return 0;
  const int64_t *gs = k->in_shape[gi], *xs = k->in_shape[1 - gi];
  int lo = 0, hi = r;
  while (lo < r && gs[lo] == 1) lo++;
  while (hi > lo && gs[hi - 1] == 1) hi--;
  int64_t outer = 1;
  *mid = 1, *hw = 1;
  for (int d = 0; d < r; d++) {
    if (d >= lo && d < hi && gs[d] != xs[d]) return 0;
    if (d < lo) outer *= xs[d];
    else if (d < hi) *mid *= xs[d];
    else *hw *= xs[d];
  }
  return p->bufs[m->args[gi]].numel == *mid && p->bufs[m->args[1 - gi]].numel == outer * *mid * *hw &&
         outer * *mid * *hw > *mid;
}

/* The conversion of a channels-last f16 result back to f32 NCHW that
 * writes x and that step m alone reads (gpu_mlayout.c's), -1 if none. */
static int conversion_into(const gpu_model_plan *p, const char *del, int x, int m) {
  int w = -1;
  if (p->bufs[x].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, x, m, &w) != 1) return -1;
  const gpu_mstep *s = &p->steps[w];
  const gpu_ew *e = &s->ew;
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_EW && e->kind == GPU_EW_COPY && s->args[2] == x &&
                 e->in_dtype == COV_F16 && e->out_dtype == COV_F32 && !e->bias && !e->also && !e->mul_c &&
                 !e->scale_hw && e->post == GPU_FN_NONE && e->n == p->bufs[x].numel && w < m
             ? w
             : -1;
}

/* Step i, a Mul by a per-channel factor (ConvNeXt's layer scale, a
 * squeeze-excite gate after its hard_sigmoid), with the residual Add after
 * it where the product has no other reader, as one copy: y = x * a1[c] (+
 * a3); where x is a channels-last result's conversion back read by the Mul
 * alone, the copy reads the f16 NHWC result itself. */
static int fuse_scale_at(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  int64_t mid, hw;
  if (!gpu_ms_is_codelet(s, "mul") || s->ew.cdl.n_in != 2 || s->n_args != 3) return 0;
  int gi = per_channel(p, s, 0, &mid, &hw) ? 0 : per_channel(p, s, 1, &mid, &hw) ? 1 : -1;
  if (gi < 0) return 0;
  int g = s->args[gi], x = s->args[1 - gi], z = s->args[2], a = -1, at = i;
  if (p->bufs[g].dtype != COV_F32 || p->bufs[x].dtype != COV_F32 || p->bufs[z].dtype != COV_F32 ||
      p->bufs[z].numel != p->bufs[x].numel)
    return 0;
  gpu_mstep f = gpu_ms_fused_copy(p, s, x, z, "_scale");
  if (p->bufs[z].kind == GPU_BUF_INTERMEDIATE && gpu_ms_users(p, del, z, -1 - i, &a) == 1) {
    const gpu_mstep *ad = &p->steps[a];
    const gpu_cdl_call *k = &ad->ew.cdl;
    int r = ad->args[0] == z ? ad->args[1] : ad->args[0];
    if (gpu_ms_is_codelet(ad, "add") && k->n_in == 2 && ad->n_args == 3 && k->in_rank[0] == k->in_rank[1] &&
        !memcmp(k->in_shape[0], k->in_shape[1], sizeof k->in_shape[0]) && (ad->args[0] == z) != (ad->args[1] == z) &&
        p->bufs[r].dtype == COV_F32 && p->bufs[r].numel == p->bufs[z].numel &&
        p->bufs[ad->args[2]].dtype == COV_F32 && p->bufs[ad->args[2]].numel == p->bufs[z].numel) {
      f = gpu_ms_fused_copy(p, ad, x, ad->args[2], "_scale_add");
      f.ew.bias = 1, f.args[3] = r;
      gpu_ms_drop_fills(p, del, z);
      at = a;
    }
  }
  int v = conversion_into(p, del, x, i);
  if (v >= 0) { /* read the channels-last result through the conversion's runs */
    gpu_ew e = p->steps[v].ew;
    e.bias = f.ew.bias;
    f.ew = e, f.args[0] = p->steps[v].args[0];
    del[v] = 1;
  }
  f.ew.mul_c = mid, f.ew.mul_hw = hw, f.args[1] = g;
  gpu_ms_replace(p, del, i, at, &f);
  return 1;
}

/* Step i, a direct convolution, an f32 copy (a fused GELU, a scale) or a
 * global average pool whose result is read only by the next matrix
 * kernel's f16 operand copy, writes that copy's buffer itself. */
static int fuse_f16_out_at(gpu_model_plan *p, char *del, int i) {
  gpu_mstep *s = &p->steps[i];
  const gpu_ew *e = &s->ew;
  int y = s->args[2], r = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || (e->kind != GPU_EW_CONV && e->kind != GPU_EW_COPY && e->kind != GPU_EW_GAVGPOOL) ||
      e->out_dtype != COV_F32 || e->also || y < 0 || p->bufs[y].kind != GPU_BUF_INTERMEDIATE ||
      p->bufs[y].dtype != COV_F32 || gpu_ms_users(p, del, y, i, &r) != 1 || gpu_ms_f16_copy_from(p, del, y, i) != r)
    return 0;
  s->ew.out_dtype = COV_F16, s->args[2] = p->steps[r].args[2];
  del[r] = 1;
  return 1;
}

/* Whether step t is a plain conversion of an NHWC f16 result back to f32
 * NCHW buffer b (nothing added, scaled or applied). */
static int to_nchw(const gpu_model_plan *p, const gpu_mstep *t, int b) {
  const gpu_ew *e = &t->ew;
  return t->op == GPU_STEP_LAUNCH && t->kkind == GPU_KERNEL_EW && t->args[2] == b && e->out_dtype == COV_F32 &&
         !e->bias && !e->also && !e->mul_c && !e->scale_hw && e->post == GPU_FN_NONE && gpu_ms_reads_nhwc_as(p, e, b);
}

/* The step before `before` storing the NHWC f16 form of f32 NCHW buffer s
 * (a residual copy's second store, a conversion for a convolution) or
 * converting s from it (a channels-last result's conversion back), and
 * that form's buffer in *h; -1 if none. */
static int nhwc_form(const gpu_model_plan *p, const char *del, int s, int before, int *h) {
  for (int j = 0; j < before; j++) {
    const gpu_mstep *t = &p->steps[j];
    if (del[j] || t->op != GPU_STEP_LAUNCH || t->kkind != GPU_KERNEL_EW || t->ew.kind != GPU_EW_COPY) continue;
    if (t->ew.also && t->args[2] == s) return *h = t->args[1], j;
    if (gpu_ms_to_nhwc(p, t, s)) return *h = t->args[2], j;
    if (to_nchw(p, t, s)) return *h = t->args[0], j;
  }
  return -1;
}

/* A residual copy that reads, adds and stores only NHWC f16 activations
 * (the conversion's runs from NHWC source, bias 2, also 2) walks them in
 * their own order: element i of the source, the shortcut and the result
 * are the same NHWC element, so neighbouring threads touch neighbouring
 * halves (in NCHW destination order every access strides by C). As an
 * [N*H*W][1][1][1] tensor the NHWC index of the destination is itself. */
static void nhwc_order(const gpu_model_plan *p, gpu_mstep *f) {
  gpu_ew *e = &f->ew;
  if (e->also != 2 || e->bias != 2 || e->mul_c || e->scale_hw || e->N * e->C * e->H * e->W != e->n) return;
  int64_t sh[4] = {e->N, e->C, e->H, e->W};
  const gpu_mbuf *h = &p->bufs[f->args[0]];
  if (h->rank != 4 || h->shape[0] != sh[0] || h->shape[1] != sh[2] || h->shape[2] != sh[3] || h->shape[3] != sh[1])
    return;
  int64_t c = sh[1], hw = sh[2] * sh[3];
  const int64_t rep[3] = {hw, c, sh[0]}, ss[3] = {c, 1, c * hw}, ds[3] = {1, hw, c * hw};
  for (int l = 0; l < GPU_COPY_LEVELS; l++)
    if (e->run != 1 || e->s0 || e->d0 || e->rep[l] != rep[l] || e->ss[l] != ss[l] || e->ds[l] != ds[l]) return;
  e->run = 0, e->N = e->n, e->C = e->H = e->W = 1;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e->rep[l] = e->ss[l] = e->ds[l] = 0;
  size_t k = strlen(f->kernel), t = strlen("_to_nchw_add");
  if (k > t && !strcmp(f->kernel + k - t, "_to_nchw_add")) /* named for what it does: unique as before */
    snprintf(f->kernel + k - t, sizeof f->kernel - (k - t), "_nhwc_add");
}

/* NHWC residual adds: a residual copy whose shortcut is stored in NHWC f16
 * as well reads that (bias 2: two bytes an element instead of four), and
 * a residual copy whose f32 NCHW result is then read by nothing stores
 * only its NHWC f16 form (also 2), the next convolution's input: between
 * two channels-last blocks only f16 NHWC activations move. */
static int nhwc_shortcuts(gpu_model_plan *p, char *del) {
  int any = 0;
  for (int i = 0; i < p->n_steps; i++) {
    gpu_mstep *f = &p->steps[i];
    gpu_ew *e = &f->ew;
    int s = f->args[3], h = -1;
    if (del[i] || f->op != GPU_STEP_LAUNCH || f->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || e->bias != 1 ||
        e->in_dtype != COV_F16 || e->mul_c || e->scale_hw || p->bufs[s].rank != 4 || p->bufs[s].dtype != COV_F32 ||
        p->bufs[s].numel != e->n || nhwc_form(p, del, s, i, &h) < 0)
      continue;
    e->bias = 2, f->args[3] = h;
    e->N = p->bufs[s].shape[0], e->C = p->bufs[s].shape[1], e->H = p->bufs[s].shape[2], e->W = p->bufs[s].shape[3];
    any = 1;
  }
  for (int i = 0; i < p->n_steps; i++) {
    gpu_mstep *f = &p->steps[i];
    int z = f->args[2], w = -1;
    if (del[i] || f->op != GPU_STEP_LAUNCH || f->kkind != GPU_KERNEL_EW || f->ew.kind != GPU_EW_COPY ||
        f->ew.also != 1 || z < 0 || p->bufs[z].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, z, i, &w))
      continue;
    f->ew.also = 2, f->args[2] = -1;
    any = 1;
  }
  for (int i = 0; i < p->n_steps; i++) { /* conversions back that no step reads any more */
    const gpu_mstep *t = &p->steps[i];
    int z = t->args[2], w = -1;
    if (!del[i] && t->op == GPU_STEP_LAUNCH && t->kkind == GPU_KERNEL_EW && t->ew.kind == GPU_EW_COPY && z >= 0 &&
        p->bufs[z].kind == GPU_BUF_INTERMEDIATE && to_nchw(p, t, z) && !gpu_ms_users(p, del, z, i, &w))
      del[i] = 1, any = 1;
  }
  for (int i = 0; i < p->n_steps; i++)
    if (!del[i] && p->steps[i].op == GPU_STEP_LAUNCH && p->steps[i].kkind == GPU_KERNEL_EW) nhwc_order(p, &p->steps[i]);
  return any;
}

/* Whether step s is a whole-buffer f16 copy of f32 buffer x into an
 * intermediate (a matrix kernel's operand copy). */
static int f16_copy_of(const gpu_model_plan *p, const gpu_mstep *s, int x) {
  const gpu_ew *e = &s->ew;
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_EW && e->kind == GPU_EW_COPY && s->args[0] == x &&
         s->args[2] >= 0 && p->bufs[s->args[2]].kind == GPU_BUF_INTERMEDIATE && e->out_dtype == COV_F16 &&
         e->in_dtype != COV_F16 && !e->run && !e->s0 && !e->d0 && !e->bias && !e->also && !e->mul_c &&
         !e->scale_hw && e->post == GPU_FN_NONE && e->n == p->bufs[x].numel && p->bufs[x].dtype == COV_F32;
}

/* Step i, an f16 operand copy, and the later copies of the same buffer
 * (one per matrix kernel reading it, as lowered group by group: a fire
 * module's two expand convolutions) as one: their readers read the
 * first's result. Neither buffer may be written in between. */
static int dedup_f16_copies(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  int x = s->args[0], y = s->args[2], any = 0;
  if (x < 0 || !f16_copy_of(p, s, x)) return 0;
  for (int j = i + 1; j < p->n_steps; j++) {
    const gpu_mstep *t = &p->steps[j];
    if (del[j]) continue;
    if (gpu_ms_writes(t, x) || gpu_ms_writes(t, y)) break;
    int y2 = t->args[2], w = -1;
    if (!f16_copy_of(p, t, x) || y2 == y) continue;
    int writers = 0;
    for (int k = 0; k < p->n_steps; k++) writers += !del[k] && gpu_ms_writes(&p->steps[k], y2);
    if (writers != 1 || !gpu_ms_users(p, del, y2, j, &w)) continue;
    for (int k = j + 1; k < p->n_steps; k++)
      for (int a = 0; !del[k] && p->steps[k].op == GPU_STEP_LAUNCH && a < p->steps[k].n_args; a++)
        if (p->steps[k].args[a] == y2) p->steps[k].args[a] = y;
    del[j] = 1, any = 1;
  }
  return any;
}

/* Step b, an add of a whole constant (ViT's position embedding) to a
 * buffer only plain f32 copies write (the class token and the patches'
 * Concat), each element once: each copy adds the constant at its
 * destinations (bias 1, argument 3) into the add's result, and the add
 * goes. Returns whether it did. */
static int fuse_const_add_at(gpu_model_plan *p, char *del, int b) {
  const gpu_mstep *add = &p->steps[b];
  const gpu_cdl_call *k = &add->ew.cdl;
  if (!gpu_ms_is_codelet(add, "add") || k->n_in != 2 || add->n_args != 3) return 0;
  int ci = p->bufs[add->args[0]].kind == GPU_BUF_WEIGHT ? 0 : 1, x = add->args[1 - ci], c = add->args[ci];
  int z = add->args[2], cp[4], n = 0, w = -1;
  int64_t numel = p->bufs[x].numel;
  if (p->bufs[c].kind != GPU_BUF_WEIGHT || p->bufs[c].dtype != COV_F32 || p->bufs[c].numel != numel ||
      p->bufs[x].kind != GPU_BUF_INTERMEDIATE || p->bufs[x].dtype != COV_F32 || p->bufs[z].dtype != COV_F32 ||
      p->bufs[z].numel != numel || numel > (1 << 24) || gpu_ms_users(p, del, x, -1 - b, &w) < 1)
    return 0;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *t = &p->steps[j];
    int use = t->op == GPU_STEP_FILL ? t->fill_buf == x : 0;
    for (int a = 0; t->op == GPU_STEP_LAUNCH && a < t->n_args; a++) use |= t->args[a] == x;
    if (del[j] || j == b || !use) continue;
    const gpu_ew *e = &t->ew;
    if (n == 4 || j > b || t->op != GPU_STEP_LAUNCH || t->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY ||
        t->args[2] != x || t->args[1] >= 0 || t->args[3] >= 0 || e->out_dtype != COV_F32 || e->bias || e->also ||
        e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || gpu_ew_raw(e))
      return 0;
    cp[n++] = j;
  }
  char *seen = calloc((size_t)numel + 1, 1);
  int ok = seen && n > 0;
  for (int i = 0; i < n && ok; i++)
    for (int64_t j = 0; j < p->steps[cp[i]].ew.n && ok; j++) {
      int64_t src, dst;
      gpu_ew_copy_at(&p->steps[cp[i]].ew, j, &src, &dst);
      ok = dst >= 0 && dst < numel && !seen[dst];
      if (ok) seen[dst] = 1;
    }
  for (int64_t j = 0; j < numel && ok; j++) ok = seen[j];
  free(seen);
  if (!ok) return 0;
  gpu_ms_drop_fills(p, del, z);
  for (int i = 0; i < n; i++) {
    gpu_mstep *t = &p->steps[cp[i]];
    t->ew.bias = 1, t->args[3] = c, t->args[2] = z;
    size_t l = strlen(t->kernel);
    if (l + 4 < sizeof t->kernel) memcpy(t->kernel + l, "_add", 5);
  }
  del[b] = 1;
  return 1;
}

/* Step b, an add of two whole f32 values one of which a row gather alone
 * makes for it (an embedding), the other complete before the gather (the
 * position embedding, or another embedding): the gather adds it (bias,
 * argument 3) and writes the add's result. Returns whether it did. */
static int fuse_rows_add_at(gpu_model_plan *p, char *del, int b) {
  const gpu_mstep *add = &p->steps[b];
  const gpu_cdl_call *k = &add->ew.cdl;
  if (!gpu_ms_is_codelet(add, "add") || k->n_in != 2 || add->n_args != 3) return 0;
  for (int side = 1; side >= 0; side--) {
    int y = add->args[side], o = add->args[1 - side], z = add->args[2], g = -1, before = 0;
    if (y == o || p->bufs[y].kind != GPU_BUF_INTERMEDIATE || p->bufs[y].dtype != COV_F32 ||
        p->bufs[o].dtype != COV_F32 || p->bufs[o].numel != p->bufs[y].numel || p->bufs[z].dtype != COV_F32 ||
        p->bufs[z].numel != p->bufs[y].numel || gpu_ms_users(p, del, y, b, &g) != 1 || g > b)
      continue;
    gpu_mstep *t = &p->steps[g];
    if (t->op != GPU_STEP_LAUNCH || t->kkind != GPU_KERNEL_EW || t->ew.kind != GPU_EW_ROWS || t->ew.bias ||
        t->args[2] != y || t->ew.n != p->bufs[y].numel)
      continue;
    for (int j = 0; j < g && !before; j++) before = !del[j] && gpu_ms_writes(&p->steps[j], o);
    int moved = 0;
    for (int j = g; j < b && !moved; j++) moved = !del[j] && (gpu_ms_writes(&p->steps[j], o) || gpu_ms_writes(&p->steps[j], z));
    if ((p->bufs[o].kind == GPU_BUF_INTERMEDIATE && !before) || moved) continue;
    gpu_ms_drop_fills(p, del, z);
    t->ew.bias = 1, t->args[3] = o, t->args[2] = z;
    size_t l = strlen(t->kernel);
    if (l + 4 < sizeof t->kernel) memcpy(t->kernel + l, "_add", 5);
    del[b] = 1;
    return 1;
  }
  return 0;
}

cov_status gpu_model_fuse(gpu_model_plan *p) {
  char *del = calloc((size_t)p->n_steps + 1, 1);
  if (!del) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int any = 0;
  for (int a = 0; a < p->n_steps; a++)
    any |= !del[a] && (fuse_at(p, del, a) || fuse_silu_at(p, del, a) || fuse_gate_at(p, del, a) ||
                       gpu_ms_fuse_lnorm(p, del, a) || fuse_scale_at(p, del, a) || fuse_const_add_at(p, del, a) ||
                       fuse_rows_add_at(p, del, a));
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && fuse_f16_out_at(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && gpu_ms_fuse_se(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && gpu_ms_fuse_gate_a(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && gpu_ms_fuse_cast_a(p, del, a);
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && gpu_ms_fuse_gate_nhwc(p, del, a);
  int *scratch = malloc(((size_t)p->n_steps + 1) * sizeof *scratch);
  if (!scratch) {
    free(del);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  int cat = gpu_ms_fuse_concat(p, del, scratch);
  free(scratch);
  if (cat < 0) {
    free(del);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  any |= cat;
  for (int a = 0; a < p->n_steps; a++) any |= !del[a] && dedup_f16_copies(p, del, a);
  any |= nhwc_shortcuts(p, del);
  any |= gpu_ms_fuse_matrix_epi(p, del);
  int n = 0;
  for (int i = 0; i < p->n_steps && any; i++)
    if (!del[i]) p->steps[n++] = p->steps[i];
  if (any) p->n_steps = n;
  free(del);
  return NULL;
}
