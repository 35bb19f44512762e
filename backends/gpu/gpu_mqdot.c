/* backends/gpu/gpu_mqdot.c: where a model's quantized layers become the
 * integer dot-product kernel (gpu_qdot.h). The frontend describes an
 * integer convolution or matmul group as codelet calls (codelets/quant.cdl:
 * the zero points already folded into the operands and the bias): the
 * accumulation in i32, the bias, the requantisation; this file recognises
 * that chain on constant operands and fills the kernel's description. A
 * chain it does not take (u8 operands, run-time weights, a bias or scale
 * computed at run time) stays codelet kernels, which compute the same. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_qdot.h"

static int64_t attr_i(const gpu_cap_call *c, const char *name, int64_t def) {
  for (size_t i = 0; i < c->n_attrs; i++)
    if (!strcmp(c->attrs[i].name, name)) return c->attrs[i].is_float ? (int64_t)c->attrs[i].f : c->attrs[i].i;
  return def;
}

/* a constant of dtype dt and n elements (its data captured) */
static const gpu_cap_arg *const_of(const gpu_cap_call *c, size_t a, cov_dtype dt, int64_t n) {
  if (a >= c->n_args) return NULL;
  const gpu_cap_arg *x = &c->args[a];
  if (x->kind != COV_MODEL_ARG_CONST || x->t.dtype != dt || !x->t.data) return NULL;
  return n < 0 || cov_tensor_numel(&x->t) == n ? x : NULL;
}

/* the accumulating call: conv2d_acc or matmul_acc of a run-time i8 value */
static int acc_call(const gpu_cap_call *c, gpu_ew *e, gpu_qdot_layer *src) {
  if (c->n_args != 2 || c->args[0].kind == COV_MODEL_ARG_CONST || c->args[0].t.dtype != COV_I8 ||
      c->out.dtype != COV_I32)
    return 0;
  const cov_tensor *x = &c->args[0].t;
  src->w = const_of(c, 1, COV_I8, -1);
  if (!src->w) return 0;
  const cov_tensor *w = &src->w->t;
  e->sh = e->sw = e->dh = e->dw = e->groups = 1;
  e->R = e->S = e->H = e->W = e->P = e->Q = 1;
  if (!strcmp(c->codelet, "conv2d_acc") && x->rank == 4 && w->rank == 4 && c->out.rank == 4) {
    e->N = x->shape[0], e->C = x->shape[1], e->H = x->shape[2], e->W = x->shape[3];
    e->K = w->shape[0], e->R = w->shape[2], e->S = w->shape[3];
    e->P = c->out.shape[2], e->Q = c->out.shape[3];
    e->sh = attr_i(c, "stride_h", 1), e->sw = attr_i(c, "stride_w", 1);
    e->dh = attr_i(c, "dilation_h", 1), e->dw = attr_i(c, "dilation_w", 1);
    e->pt = attr_i(c, "pad_top", 0), e->pl = attr_i(c, "pad_left", 0);
    e->groups = attr_i(c, "groups", 1);
    return e->sh >= 1 && e->sw >= 1 && e->dh >= 1 && e->dw >= 1 && e->pt >= 0 && e->pl >= 0 && e->groups >= 1 &&
           e->C % e->groups == 0 && e->K % e->groups == 0 && w->shape[1] * e->groups == e->C;
  }
  if (!strcmp(c->codelet, "matmul_acc") && x->rank == 2 && w->rank == 2 && w->shape[0] == x->shape[1]) {
    e->N = x->shape[0], e->C = x->shape[1], e->K = w->shape[1];
    src->kn = 1;
    return 1;
  }
  return 0;
}

size_t gpu_qdot_chain(const gpu_cap_group *g, size_t c0, gpu_qdot_layer *src) {
  memset(src, 0, sizeof *src); /* kernels compare bytewise */
  gpu_ew *e = &src->e;
  if (!acc_call(&g->calls[c0], e, src)) return 0;
  e->kind = GPU_EW_QDOT, e->out_dtype = COV_I32;
  src->x_call = (int)c0;
  size_t i = c0 + 1;
  int conv = !src->kn;
  const gpu_cap_call *n = i < g->n_calls && g->calls[i].args[0].kind == COV_MODEL_ARG_PREV ? &g->calls[i] : NULL;
  if (n && !strcmp(n->codelet, conv ? "bias_add" : "bias_add_2d") && (src->bias = const_of(n, 1, COV_I32, e->K)))
    e->bias = 1, i++;
  else if (n && conv && !strcmp(n->codelet, "bias_add_chw") && (src->bias = const_of(n, 1, COV_I32, e->K * e->P * e->Q)))
    e->bias = 2, i++;
  n = i < g->n_calls && g->calls[i].args[0].kind == COV_MODEL_ARG_PREV ? &g->calls[i] : NULL;
  const char *rq = n ? n->codelet : "";
  int i8 = !strcmp(rq, conv ? "requant_i8" : "requant_2d_i8"), u8 = !strcmp(rq, conv ? "requant_u8" : "requant_2d_u8");
  if ((i8 || u8) && (src->m = const_of(n, 1, COV_F32, e->K)) && (src->zp = const_of(n, 2, COV_F32, e->K)))
    e->out_dtype = i8 ? COV_I8 : COV_U8, i++;
  else
    src->m = src->zp = NULL;
  e->n = cov_tensor_numel(&g->calls[i - 1].out) / gpu_qdot_kb(e);
  return i - c0;
}

int32_t *gpu_qdot_packed(const gpu_qdot_layer *l) {
  int32_t *w = malloc((size_t)gpu_qdot_words(&l->e) * 4 + 4);
  if (w) gpu_qdot_pack(&l->e, l->w->t.data, l->kn, w);
  return w;
}
