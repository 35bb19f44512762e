/* frontend/ops/graph_norm.c: InstanceNormalization, GroupNormalization and
 * LpNormalization, lowered onto codelets.
 *
 * Instance and group normalization are LayerNormalization over a [rows,
 * cols] view ([N*C, spatial] per instance, [N*G, C/G*spatial] per group)
 * with unit scale and zero bias (`layernorm`), then the per-channel scale
 * and bias as `mul` and `add` over an [N, C, spatial, 1] view. Opset 18's
 * GroupNormalization has one scale and bias per group, opset 21's one per
 * channel; a group's value is repeated over its channels. LpNormalization
 * divides by the p-norm along an axis: `reduce_l2` / `reduce_l1` over a
 * [before*after, axis] copy (the axis moved last, layout work, when it is
 * not), then `div` over [1, before, axis, after]. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

typedef struct norm_params {
  float eps;
  int64_t groups;   /* channels per statistics row: C (instance) or G (group) */
  int64_t n, c, sp; /* N, C and the product of the spatial dims (-1 unknown) */
  bool per_group;   /* scale/bias hold one value per group (GroupNorm opset 18) */
} norm_params;

static bool is_group(const graph_node *n) { return strcmp(n->op_type, "GroupNormalization") == 0; }

static cov_status check_param(const graph *g, const graph_node *n, const graph_value *x,
                              const graph_value *s, int64_t want, const char *what) {
  if (!s) return graph_node_error(g, n, COV_INVALID_INPUT, "the %s input is missing", what);
  COV_RETURN_IF_ERROR(graph_check_float(g, n, s));
  if (s->dtype != x->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' is %s but the input is %s", what,
                            s->name, cov_dtype_name(s->dtype), cov_dtype_name(x->dtype));
  if (s->rank >= 0 && (s->rank != 1 || (want >= 0 && s->dims[0] >= 0 && s->dims[0] != want)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be 1-D with one value per %s",
                            what, s->name, (is_group(n) && n->opset < 21) ? "group" : "channel");
  return NULL;
}

static cov_status norm_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                 norm_params *p) {
  const graph_value *x = in[0];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  bool group = is_group(n);
  int min_rank = group ? 2 : 3;
  if (x->rank >= 0 && x->rank < min_rank)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has rank %d; expected >= %d ([N, C, ...])", x->name,
                            x->rank, min_rank);
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "epsilon", 1e-5f, &p->eps));
  p->n = x->rank > 0 ? x->dims[0] : -1;
  p->c = x->rank > 1 ? x->dims[1] : -1;
  p->sp = x->rank > 0 ? 1 : -1;
  for (int i = 2; i < x->rank; i++) p->sp = (p->sp < 0 || x->dims[i] < 0) ? -1 : p->sp * x->dims[i];
  p->groups = p->c;
  p->per_group = false;
  if (group) {
    if (n->opset < 18)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "GroupNormalization is an opset 18 operator (the model has %d)",
                              n->opset);
    if (!graph_attr_find(n, "num_groups"))
      return graph_node_error(g, n, COV_INVALID_INPUT, "the 'num_groups' attribute is missing");
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "num_groups", 0, &p->groups));
    int64_t stash = 1;
    if (n->opset >= 21) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "stash_type", 1, &stash));
    if (stash != 1)
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "stash_type %lld is not supported (only 1, float)", (long long)stash);
    if (p->groups < 1)
      return graph_node_error(g, n, COV_INVALID_INPUT, "num_groups %lld is not positive",
                              (long long)p->groups);
    if (p->c >= 0 && p->c % p->groups != 0)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "%lld channels do not divide into num_groups %lld groups",
                              (long long)p->c, (long long)p->groups);
    p->per_group = n->opset < 21;
  }
  int64_t want = p->per_group ? p->groups : p->c;
  COV_RETURN_IF_ERROR(check_param(g, n, x, in[1], want, "scale"));
  return check_param(g, n, x, in[2], want, "bias");
}

cov_status graph_infer_instance_norm(const graph *g, const graph_node *n, graph_value *const *in,
                                     graph_value *const *out) {
  norm_params p;
  COV_RETURN_IF_ERROR(norm_params_of(g, n, in, &p));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

/* A per-channel [C] copy of a per-group parameter (or the parameter). */
static cov_status channel_param(const graph *g, const graph_node *n, const graph_value *s,
                                const norm_params *p, void **owned, cov_tensor *t) {
  *owned = NULL;
  *t = graph_view_as(s, 4, (int64_t[]){1, p->c, 1, 1});
  if (!p->per_group) return NULL;
  size_t es = cov_dtype_size(s->dtype);
  unsigned char *d = malloc(p->c > 0 ? (size_t)p->c * es : 1);
  if (!d) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  int64_t per = p->c / p->groups;
  for (int64_t c = 0; c < p->c; c++)
    memcpy(d + (size_t)c * es, (const unsigned char *)s->data + (size_t)(c / per) * es, es);
  *owned = d;
  t->data = d;
  return NULL;
}

/* 1 when input i of n is a model constant (a per-group parameter's
 * per-channel copy is then a constant too), else 0. */
static unsigned model_const(const graph_exec *x, const graph_node *n, int i) {
  return n->in[i] && x->g->values[n->in[i]->id]->data ? 1u : 0u;
}

cov_status graph_exec_instance_norm(graph_exec *x, const graph_node *n, graph_value *const *in,
                                    graph_value *const *out) {
  norm_params p;
  COV_RETURN_IF_ERROR(norm_params_of(x->g, n, in, &p));
  const graph_value *xv = in[0];
  size_t es = cov_dtype_size(xv->dtype);
  int64_t rows = p.n * p.groups, cols = p.c / p.groups * p.sp;
  /* Unit scale and zero bias for the layernorm call: the channel's scale
   * and bias come after, per channel. */
  void *ones = malloc(cols > 0 ? (size_t)cols * es : 1), *zeros = calloc(cols > 0 ? (size_t)cols : 1, es);
  void *own_s = NULL, *own_b = NULL;
  cov_tensor y = {0}, ys = {0}, yb = {0}, s, b;
  cov_status st = (!ones || !zeros) ? graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory")
                                    : NULL;
  for (int64_t i = 0; !st && i < cols; i++) graph_store_elem(ones, xv->dtype, (size_t)i, 1.0);
  if (!st) {
    cov_tensor ops[3] = {graph_view_as(xv, 2, (int64_t[]){rows, cols}),
                         {.dtype = xv->dtype, .rank = 1, .shape = {cols}, .data = ones},
                         {.dtype = xv->dtype, .rank = 1, .shape = {cols}, .data = zeros}};
    cov_attr a = graph_lower_attr_f("epsilon", p.eps);
    /* ones and zeros depend on the shape alone: constants to a group description */
    st = graph_lower_call_const(x, n, "layernorm", &a, 1, ops, 3, &y, 6u);
  }
  if (!st) st = channel_param(x->g, n, in[1], &p, &own_s, &s);
  if (!st) st = channel_param(x->g, n, in[2], &p, &own_b, &b);
  if (!st) {
    cov_tensor v = y;
    v.rank = 4;
    v.shape[0] = p.n, v.shape[1] = p.c, v.shape[2] = p.sp, v.shape[3] = 1;
    cov_tensor vs[2] = {v, s};
    st = graph_lower_call_const(x, n, "mul", NULL, 0, vs, 2, &ys, model_const(x, n, 1) << 1);
  }
  if (!st) {
    cov_tensor yv[2] = {ys, b};
    st = graph_lower_call_const(x, n, "add", NULL, 0, yv, 2, &yb, model_const(x, n, 2) << 1);
  }
  if (!st) st = graph_lower_adopt(x, n, &yb, out[0]);
  free(ones);
  free(zeros);
  free(own_s);
  free(own_b);
  cov_tensor_release(&y);
  cov_tensor_release(&ys);
  cov_tensor_release(&yb);
  return st;
}

int graph_codelets_instance_norm(const graph_node *n, const char **names, int max) {
  static const char *const k[] = {"layernorm", "mul", "add"};
  (void)n;
  int c = 0;
  for (; c < 3 && c < max; c++) names[c] = k[c];
  return c;
}

/* ---- LpNormalization ---------------------------------------------------- */

static cov_status lp_params(const graph *g, const graph_node *n, const graph_value *x, int *axis,
                            int64_t *p) {
  int64_t a;
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", -1, &a));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "p", 2, p));
  if (*p != 1 && *p != 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "p is %lld; ONNX defines only 1 and 2",
                            (long long)*p);
  if (x->rank < 0) return NULL;
  if (x->rank < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' is a scalar; expected rank >= 1",
                            x->name);
  return graph_axis(g, n, a, x->rank, "axis", axis);
}

cov_status graph_infer_lp_norm(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  int axis;
  int64_t p;
  COV_RETURN_IF_ERROR(lp_params(g, n, in[0], &axis, &p));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_lp_norm(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  int axis;
  int64_t p;
  const graph_value *v = in[0];
  COV_RETURN_IF_ERROR(lp_params(x->g, n, v, &axis, &p));
  int64_t before = 1, after = 1, len = v->dims[axis];
  for (int i = 0; i < axis; i++) before *= v->dims[i];
  for (int i = axis + 1; i < v->rank; i++) after *= v->dims[i];
  void *tdata = NULL;
  if (after != 1) {
    /* [before, axis, after] -> [before, after, axis]: the reduced axis last. */
    int64_t d3[3] = {before, len, after};
    int perm[3] = {0, 2, 1};
    COV_RETURN_IF_ERROR(graph_transpose_data(x->g, n, v->data, v->dtype, 3, d3, perm, &tdata));
  }
  cov_tensor t = {.dtype = v->dtype,
                  .rank = 2,
                  .shape = {before * after, len},
                  .data = tdata ? tdata : v->data},
             norm = {0}, y = {0};
  cov_status st = graph_call_codelet(x, n, p == 1 ? "reduce_l1" : "reduce_l2", NULL, 0, &t, 1,
                                     &norm, 1);
  free(tdata);
  if (!st) {
    cov_tensor nv = norm;
    nv.rank = 4;
    nv.shape[0] = 1, nv.shape[1] = before, nv.shape[2] = 1, nv.shape[3] = after;
    cov_tensor ab[2] = {graph_view_as(v, 4, (int64_t[]){1, before, len, after}), nv};
    st = graph_call_codelet(x, n, "div", NULL, 0, ab, 2, &y, 1);
  }
  cov_tensor_release(&norm);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_lp_norm(const graph_node *n, const char **names, int max) {
  int64_t p = 2;
  const graph_attr *a = graph_attr_find(n, "p");
  if (a && a->type == GA_INT) p = a->i;
  int c = graph_lower_single(p == 1 ? "reduce_l1" : "reduce_l2", names, max);
  if (c < max) names[c++] = "div";
  return c;
}
