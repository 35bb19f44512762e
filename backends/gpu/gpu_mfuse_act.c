/* backends/gpu/gpu_mfuse_act.c: activations joined to the kernel that
 * produces their input (gpu_model_fuse_act, gpu_mplan.h), before the
 * channels-last pass so that a convolution, its activation and the next
 * convolution are neighbours there.
 *
 * A unary activation the epilogues know (relu, relu6 / clip, gelu,
 * hard_swish, hard_sigmoid: gpu_unary_fn) that the frontend left as a group
 * of its own (a HardSwish after a convolution with its folded batch norm)
 * becomes the activation of the matrix kernel or direct convolution that
 * writes its input, when that input has no other reader: the producer
 * writes the activation's result and the launch goes.
 *
 * SiLU as exported (a Sigmoid and the Mul of its input by it, a fill
 * between) joins the producer the same way (efficientnet's convolutions).
 *
 * GELU as torch exports it (Div by sqrt 2, Erf, Add 1, then Mul by the
 * input and by 0.5, in either order: five launches and four fills) is one
 * activation the same way, the epilogue's GELU (erf within 1.5e-7); where
 * the input's producer cannot take it, one copy applying GPU_FN_GELU.
 *
 * GELU's tanh form (GPT-2's gelu_new), exported as eight element-wise
 * steps in orders that differ between exporters, is recognised by what
 * the steps compute from the matmul's result (evaluated at probe points)
 * and becomes that matmul's GPU_ACT_GELU_TANH. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* Whether step s, a launch writing y, takes an activation: a matrix kernel
 * with none, no pool and no softmax, or a direct convolution with none. */
static int takes_act(const gpu_mstep *s, int y) {
  if (s->op != GPU_STEP_LAUNCH || s->pre || s->args[2] != y) return 0;
  if (s->kkind == GPU_KERNEL_MATRIX) {
    const gpu_problem *q = &s->plan.prob;
    return q->kind != GPU_OP_MAXPOOL && q->epi.act == GPU_ACT_NONE && !q->epi.maxpool2x2 && !q->epi.softmax &&
           !q->out_f16;
  }
  return s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_CONV && s->ew.post == GPU_FN_NONE;
}

/* The producer of intermediate f32 buffer y when every other step using y
 * is one of the `n` readers in r[]: its step, or -1. */
static int producer(const gpu_model_plan *p, const char *del, int y, const int *r, int n) {
  if (y < 0 || p->bufs[y].kind != GPU_BUF_INTERMEDIATE || p->bufs[y].dtype != COV_F32) return -1;
  int w = -1;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    int use = s->op == GPU_STEP_FILL ? s->fill_buf == y : 0, mine = 0;
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) use |= s->args[k] == y;
    for (int k = 0; k < n; k++) mine |= r[k] == j;
    if (del[j] || !use || mine) continue;
    if (w >= 0 || !takes_act(s, y) || j > r[0]) return -1;
    w = j;
  }
  return w;
}

/* Step w writes z with activation a instead of y. */
static void set_act(gpu_model_plan *p, char *del, int w, const gpu_ew *a, int z) {
  gpu_mstep *s = &p->steps[w];
  gpu_epilogue *e = &s->plan.prob.epi; /* a direct convolution keeps its problem for gpu_mlayout.c */
  e->act = gpu_fn_act(a->post);
  if (a->post == GPU_FN_CLIP || a->post == GPU_FN_HSIGMOID) e->clip_lo = a->post0, e->clip_hi = a->post1;
  if (s->kkind == GPU_KERNEL_EW) s->ew.post = a->post, s->ew.post0 = a->post0, s->ew.post1 = a->post1;
  s->args[2] = z;
  gpu_ms_drop_fills(p, del, z);
}

/* Step i, a unary activation, joined to the producer of its input. */
static int fuse_unary_at(gpu_model_plan *p, char *del, int i) {
  gpu_ew a = {0};
  if (!gpu_ms_activation(&p->steps[i], &a) || gpu_fn_act(a.post) == GPU_ACT_NONE) return 0;
  int x = p->steps[i].args[0], z = p->steps[i].args[1];
  if (p->bufs[z].dtype != COV_F32 || p->bufs[z].numel != p->bufs[x].numel) return 0;
  int w = producer(p, del, x, &i, 1);
  if (w < 0) return 0;
  set_act(p, del, w, &a, z);
  del[i] = 1;
  return 1;
}

/* The one launch after step `at` that reads intermediate buffer b (and no
 * fill but its own), as argument 0 or 1: its step, or -1. */
static int next_of(const gpu_model_plan *p, const char *del, int b, int at) {
  int j = -1;
  if (b < 0 || p->bufs[b].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, b, -1 - at, &j) != 1 || j < at ||
      p->steps[j].n_args != 2 + (p->steps[j].ew.cdl.n_in == 2) || (p->steps[j].args[0] != b && p->steps[j].args[1] != b))
    return -1;
  return j;
}

/* The other input of binary step j besides b (-1: b twice or not read). */
static int other_of(const gpu_mstep *s, int b) {
  if (s->ew.cdl.n_in != 2 || (s->args[0] == b) == (s->args[1] == b)) return -1;
  return s->args[0] == b ? s->args[1] : s->args[0];
}

/* The GELU chain starting at step i (st[0..4]: div, erf, add, mul, mul),
 * its input *x and result *z; 0 if it is not one. */
static int gelu_chain(const gpu_model_plan *p, const char *del, int i, int st[5], int *x, int *z) {
  const gpu_mstep *s = &p->steps[i];
  int dv = gpu_ms_is_codelet(s, "div");
  if (!(dv || gpu_ms_is_codelet(s, "mul")) || s->ew.cdl.n_in != 2 || s->n_args != 3 ||
      !gpu_ms_scalar(p, s->args[1], dv ? 1.4142135623730951 : 0.7071067811865476))
    return 0;
  *x = s->args[0], st[0] = i;
  int b = s->args[2], j = next_of(p, del, b, i), half = 0, byx = 0;
  if (j < 0 || !gpu_ms_is_codelet(&p->steps[j], "erf")) return 0;
  st[1] = j, b = p->steps[j].args[1], j = next_of(p, del, b, j);
  if (j < 0 || !gpu_ms_is_codelet(&p->steps[j], "add") || other_of(&p->steps[j], b) < 0 ||
      !gpu_ms_scalar(p, other_of(&p->steps[j], b), 1.0))
    return 0;
  st[2] = j, b = p->steps[j].args[2];
  for (int k = 3; k < 5; k++) {
    j = next_of(p, del, b, j);
    if (j < 0 || !gpu_ms_is_codelet(&p->steps[j], "mul")) return 0;
    int o = other_of(&p->steps[j], b);
    if (o == *x && !byx) byx = 1;
    else if (o >= 0 && !half && gpu_ms_scalar(p, o, 0.5)) half = 1;
    else return 0;
    st[k] = j, b = p->steps[j].args[2];
  }
  *z = b;
  int64_t n = p->bufs[*x].numel;
  for (int k = 0; k < 5; k++) {
    const gpu_mbuf *o = &p->bufs[p->steps[st[k]].args[p->steps[st[k]].n_args - 1]];
    if (o->dtype != COV_F32 || o->numel != n) return 0;
  }
  return p->bufs[*x].dtype == COV_F32;
}

/* Step i starting a GELU chain: the producer's activation, or one copy. */
static int fuse_gelu_at(gpu_model_plan *p, char *del, int i) {
  int st[5], x, z;
  if (!gelu_chain(p, del, i, st, &x, &z)) return 0;
  for (int k = 0; k < 4; k++) gpu_ms_drop_fills(p, del, p->steps[st[k]].args[p->steps[st[k]].n_args - 1]);
  gpu_ew a = {.post = GPU_FN_GELU};
  int r[2] = {st[0], p->steps[st[3]].args[0] == x || p->steps[st[3]].args[1] == x ? st[3] : st[4]};
  int w = producer(p, del, x, r, 2);
  if (w >= 0) {
    set_act(p, del, w, &a, z);
    for (int k = 0; k < 5; k++) del[st[k]] = 1;
    return 1;
  }
  gpu_mstep f = gpu_ms_fused_copy(p, &p->steps[st[4]], x, z, "_gelu");
  f.ew.post = GPU_FN_GELU;
  gpu_ms_drop_fills(p, del, z);
  for (int k = 0; k < 4; k++) del[st[k]] = 1;
  p->steps[st[4]] = f;
  return 1;
}

/* Step i, a Sigmoid whose result only the Mul of its input by it reads
 * (SiLU as exported), joined to the producer of that input. */
static int fuse_silu_at(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  if (!gpu_ms_is_codelet(s, "sigmoid") || s->ew.cdl.n_in != 1 || s->n_args != 2) return 0;
  int x = s->args[0], sg = s->args[1], m = next_of(p, del, sg, i);
  if (m < 0 || !gpu_ms_is_codelet(&p->steps[m], "mul") || other_of(&p->steps[m], sg) != x) return 0;
  int z = p->steps[m].args[2];
  if (p->bufs[z].dtype != COV_F32 || p->bufs[z].numel != p->bufs[x].numel || p->bufs[sg].numel != p->bufs[x].numel)
    return 0;
  int r[2] = {i, m}, w = producer(p, del, x, r, 2);
  if (w < 0) return 0;
  gpu_ew a = {.post = GPU_FN_SILU};
  gpu_ms_drop_fills(p, del, sg);
  set_act(p, del, w, &a, z);
  del[i] = del[m] = 1;
  return 1;
}

/* ---- GELU's tanh form, found by what the chain computes ------------------ */

enum { TANH_CHAIN = 12 }; /* element-wise steps at most */

/* Step s's codelet as a pointwise function of its inputs (the ONNX
 * operators the exporters write GELU's tanh form with): its index in
 * k_ops, -1 for any other. */
static const char *const k_ops[] = {"add", "sub", "mul", "div", "pow", "tanh"};
static int op_of(const gpu_mstep *s) {
  for (int k = 0; k < (int)(sizeof k_ops / sizeof *k_ops); k++)
    if (gpu_ms_is_codelet(s, k_ops[k]) && s->ew.cdl.n_in == (k == 5 ? 1 : 2) && s->n_args == s->ew.cdl.n_in + 1)
      return k;
  return -1;
}

static double apply_op(int op, double a, double b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  case 3: return a / b;
  case 4: return pow(a, b);
  default: return tanh(a);
  }
}

/* An f32 constant of one element: its value in *v. */
static int scalar_of(const gpu_model_plan *p, int b, double *v) {
  const gpu_mbuf *c = &p->bufs[b];
  float f;
  if (c->kind != GPU_BUF_WEIGHT || c->dtype != COV_F32 || c->numel != 1 || !c->data) return 0;
  memcpy(&f, c->data, sizeof f);
  *v = f;
  return 1;
}

/* The element-wise steps after step w that compute from x (f32
 * intermediate of n elements) and scalar constants alone, in order (fills
 * skipped), at most TANH_CHAIN: how many, in st[]. */
static int pointwise_chain(const gpu_model_plan *p, const char *del, int w, int x, int st[TANH_CHAIN]) {
  int n = 0, vals[TANH_CHAIN + 1] = {x};
  int64_t numel = p->bufs[x].numel;
  for (int j = w + 1; j < p->n_steps && n < TANH_CHAIN; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (del[j] || s->op == GPU_STEP_FILL) continue;
    int op = op_of(s), from = 0, ok = op >= 0, y = ok ? s->args[s->n_args - 1] : -1;
    for (int i = 0; ok && i < s->ew.cdl.n_in; i++) {
      double c;
      int in = 0;
      for (int k = 0; k <= n; k++) in |= s->args[i] == vals[k];
      from |= in;
      ok = in || scalar_of(p, s->args[i], &c);
    }
    if (!ok || !from || p->bufs[y].kind != GPU_BUF_INTERMEDIATE || p->bufs[y].dtype != COV_F32 ||
        p->bufs[y].numel != numel)
      break;
    st[n++] = j, vals[n] = y;
  }
  return n;
}

/* Whether buffer b is read (or written) by launches other than the chain's
 * first n steps st[] and step w. */
static int read_outside(const gpu_model_plan *p, const char *del, int b, int w, const int *st, int n) {
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    int mine = j == w;
    for (int k = 0; k < n; k++) mine |= st[k] == j;
    for (int k = 0; !del[j] && !mine && s->op == GPU_STEP_LAUNCH && k < s->n_args; k++)
      if (s->args[k] == b) return 1;
  }
  return 0;
}

/* The chain's first n steps from x evaluated at v (f64). */
static double chain_at(const gpu_model_plan *p, const int *st, int n, int x, double v) {
  double val[TANH_CHAIN + 1] = {v};
  int buf[TANH_CHAIN + 1] = {x};
  for (int k = 0; k < n; k++) {
    const gpu_mstep *s = &p->steps[st[k]];
    double in[2] = {0, 0};
    for (int i = 0; i < s->ew.cdl.n_in; i++) {
      int found = 0;
      for (int m = 0; m <= k && !found; m++)
        if (buf[m] == s->args[i]) in[i] = val[m], found = 1;
      if (!found) scalar_of(p, s->args[i], &in[i]);
    }
    val[k + 1] = apply_op(op_of(s), in[0], in[1]), buf[k + 1] = s->args[s->n_args - 1];
  }
  return val[n];
}

/* Whether the chain's first n steps compute GELU's tanh form of x: at
 * 161 points of [-10, 10] within 1e-6 (relative above 1). */
static int is_gelu_tanh(const gpu_model_plan *p, const int *st, int n, int x) {
  for (int i = 0; i <= 160; i++) {
    double v = -10.0 + i / 8.0, want = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    if (!(fabs(chain_at(p, st, n, x, v) - want) <= 1e-6 * fmax(1.0, fabs(want)))) return 0;
  }
  return 1;
}

/* Step w, a matrix kernel without an activation, with the element-wise
 * chain after it that computes GELU's tanh form of its result (GPT-2's
 * gelu_new: Mul, Pow or Mul, Mul, Add, Mul, Tanh, Add, Mul, Mul in the
 * exporters' orders; eight launches and their fills) as its epilogue's
 * GPU_ACT_GELU_TANH. The chain is recognised by what it computes: its
 * steps read only x, each other's results and scalar constants, nothing
 * else reads x or a result before the last, and the last equals the
 * formula at every probe point. */
static int fuse_gelu_tanh_at(gpu_model_plan *p, char *del, int w) {
  gpu_mstep *s = &p->steps[w];
  int x = s->args[2], st[TANH_CHAIN];
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || !takes_act(s, x) || x < 0 ||
      p->bufs[x].kind != GPU_BUF_INTERMEDIATE || p->bufs[x].dtype != COV_F32)
    return 0;
  int n = pointwise_chain(p, del, w, x, st);
  /* the shortest prefix whose last result is GELU's, nothing outside
   * reading x or the results before it */
  for (int m = 1; m <= n; m++) {
    int inside = !read_outside(p, del, x, w, st, m);
    for (int k = 0; inside && k + 1 < m; k++)
      inside = !read_outside(p, del, p->steps[st[k]].args[p->steps[st[k]].n_args - 1], w, st, m);
    if (!inside || !is_gelu_tanh(p, st, m, x)) continue;
    int z = p->steps[st[m - 1]].args[p->steps[st[m - 1]].n_args - 1];
    for (int k = 0; k < m; k++) {
      gpu_ms_drop_fills(p, del, p->steps[st[k]].args[p->steps[st[k]].n_args - 1]);
      del[st[k]] = 1;
    }
    s->plan.prob.epi.act = GPU_ACT_GELU_TANH;
    s->args[2] = z;
    return 1;
  }
  return 0;
}

cov_status gpu_model_fuse_act(gpu_model_plan *p) {
  char *del = calloc((size_t)p->n_steps + 1, 1);
  if (!del) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int any = 0;
  for (int i = 0; i < p->n_steps; i++) any |= !del[i] && (fuse_gelu_at(p, del, i) || fuse_silu_at(p, del, i) || fuse_unary_at(p, del, i));
  for (int i = 0; i < p->n_steps; i++) any |= !del[i] && fuse_gelu_tanh_at(p, del, i);
  if (any) gpu_ms_compact(p, del);
  free(del);
  return NULL;
}
