/* frontend/passes/graph_scalefold.c: a per-output-channel constant Mul or
 * Add after a Conv, MatMul or Gemm folded into that node's parameters.
 *
 * A layer scale (ConvNeXt's gamma, CaiT's and ViT variants' LayerScale:
 * y = conv(x) * g[c]) or a constant per-channel offset after a linear map
 * is part of the map: when the Mul or Add reads the node's only use (the
 * output is no graph output) and its other input is a constant that is 1
 * on every axis but the output-channel axis, it disappears into the
 * weights and bias:
 *   Mul: W'[k][...] = W[k][...] * g[k]    b'[k] = b[k] * g[k]
 *   Add: b'[k] = b[k] + a[k]              (Conv only; a bias is made)
 * computed in double and rounded once to the weights' dtype, as
 * BatchNormalization folding does (graph_bnfold.c). The output-channel
 * axis is axis 1 of a Conv's output (NCHW: a [C,1,1] constant), the last
 * axis of a MatMul's or Gemm's (a [C] constant on a channels-last or
 * row-major result); the constant must not widen the output by
 * broadcasting (its rank at most the output's). A MatMul folds only with
 * a constant 2-D B (scaled by column), a Gemm only with a constant B and a
 * constant C of one value per column or none. Every target sees the
 * folded node: one launch and one pass over the activation fewer.
 *
 * A scale is not folded where it would cost the weights precision in
 * f16, the narrowest float the targets keep weights in (the GPU kernels'
 * default operands), while the scale itself stays f32 in the Mul: rounding
 * a row of weights (an output channel's) to f16 errs by at most 2^-11 of
 * its largest magnitude m while m is normal (at least 2^-14), by up to
 * 2^-25 / m below, where the subnormals' absolute spacing takes over, and
 * without bound past 65504. The fold must leave that bound no larger for
 * every channel: ConvNeXt's initial layer scale of 1e-6 takes rows of
 * about 0.04 to 4e-8, f16's smallest subnormal, and stays a Mul. */
#include <math.h>
#include <string.h>

#include "frontend/graph.h"

static bool is_const(const graph_value *v) {
  return v && v->data && v->kind != GV_INPUT && !v->seq && graph_shape_known(v) && cov_dtype_is_float(v->dtype);
}

/* Whether constant c, broadcast against the rank-r output y, is one value
 * per index of y's axis `axis` (or one value in all): all its other dims 1,
 * its rank at most r. */
static bool per_channel(const graph_value *c, const graph_value *y, int axis) {
  if (!is_const(c) || !graph_shape_known(y) || c->rank > y->rank) return false;
  int64_t k = y->dims[axis];
  if (k <= 0) return false;
  for (int d = 0; d < c->rank; d++) {
    int yd = d + y->rank - c->rank;
    if (c->dims[d] != 1 && (yd != axis || c->dims[d] != k)) return false;
  }
  int64_t n = graph_numel(c);
  return n == 1 || n == k;
}

/* A fresh constant like `like` named NAME/suffix, its data allocated. */
static graph_value *new_const(graph *g, const graph_node *at, const graph_value *like, int rank,
                              const int64_t *dims, const char *suffix) {
  graph_value *v = graph_add_value(g, cov_arena_printf(g->arena, "%s/%s", at->name, suffix));
  if (!v) return NULL;
  v->dtype = like->dtype;
  graph_set_shape(v, rank, dims);
  v->kind = GV_CONSTANT;
  v->data = cov_arena_alloc(g->arena, (size_t)graph_numel(v) * cov_dtype_size(v->dtype));
  return v->data ? v : NULL;
}

/* The bound on rounding to f16 a row of weights whose largest magnitude is
 * m, relative to m: half an f16 ulp where m is normal, the subnormals'
 * half spacing over m below, none for a zero row, infinite past f16's
 * largest value. */
static double f16_row_error(double m) {
  if (m == 0) return 0;
  if (!(m <= 65504.0)) return INFINITY; /* NaN too */
  return m >= 0x1p-14 ? 0x1p-11 : 0x1p-25 / m;
}

/* Whether w's output channels scaled by f (one value or k; element e in
 * channel (e / inner) % k) keep each channel's f16 rounding bound at most
 * what it was unscaled. */
static bool keeps_f16_precision(const graph_value *w, const graph_value *f, int64_t k, int64_t inner) {
  int64_t outer = graph_numel(w) / (k * inner), nf = graph_numel(f);
  for (int64_t c = 0; c < k; c++) {
    double m = 0;
    for (int64_t j = 0; j < outer; j++)
      for (int64_t i = 0; i < inner; i++)
        m = fmax(m, fabs(graph_load_elem(w->data, w->dtype, (size_t)((j * k + c) * inner + i))));
    double s = fabs(graph_load_elem(f->data, f->dtype, (size_t)(nf == 1 ? 0 : c)));
    if (f16_row_error(m * s) > f16_row_error(m)) return false;
  }
  return true;
}

/* w with element e multiplied by f[(e / inner) % k] (f one value or k). */
static graph_value *scaled(graph *g, const graph_node *at, const graph_value *w, const graph_value *f,
                           int64_t k, int64_t inner, const char *suffix) {
  graph_value *v = new_const(g, at, w, w->rank, w->dims, suffix);
  if (!v) return NULL;
  int64_t nf = graph_numel(f), n = graph_numel(w);
  for (int64_t e = 0; e < n; e++) {
    int64_t c = nf == 1 ? 0 : (e / inner) % k;
    graph_store_elem(v->data, v->dtype, (size_t)e,
                     graph_load_elem(w->data, w->dtype, (size_t)e) *
                         graph_load_elem(f->data, f->dtype, (size_t)c));
  }
  return v;
}

/* Conv's bias plus the per-channel offset a (one value or k). */
static graph_value *offset_bias(graph *g, const graph_node *at, const graph_value *w, const graph_value *b,
                                const graph_value *a, int64_t k) {
  graph_value *v = new_const(g, at, w, 1, &k, "scalefolded_b");
  if (!v) return NULL;
  int64_t na = graph_numel(a);
  for (int64_t c = 0; c < k; c++)
    graph_store_elem(v->data, v->dtype, (size_t)c,
                     (b ? graph_load_elem(b->data, b->dtype, (size_t)c) : 0.0) +
                         graph_load_elem(a->data, a->dtype, (size_t)(na == 1 ? 0 : c)));
  return v;
}

/* The node's output moved to `op`'s, `op` gone, parameter slots rewritten. */
static cov_status rewire(graph *g, graph_node *n, graph_node *op, graph_value *const *params, int first,
                         int n_in) {
  graph_value **in = cov_arena_array(g->arena, (size_t)n_in, sizeof *in);
  if (!in) return graph_node_error(g, op, COV_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < n_in; i++) in[i] = i < first ? n->in[i] : params[i - first];
  n->in = in;
  n->n_in = n_in;
  n->out[0]->n_uses = 0; /* orphaned: dropped by graph_compact */
  n->out[0] = op->out[0];
  n->out[0]->producer = n;
  op->dead = true;
  return NULL;
}

/* Conv n followed by op (Mul or Add by constant f, per output channel). */
static cov_status fold_conv(graph *g, graph_node *n, graph_node *op, const graph_value *f, bool mul) {
  const graph_value *w = n->in[1], *b = n->n_in > 2 ? n->in[2] : NULL;
  if (!is_const(w) || w->rank < 3 || (b && (!is_const(b) || graph_numel(b) != w->dims[0])) ||
      !per_channel(f, n->out[0], 1) || n->out[0]->dims[1] != w->dims[0])
    return NULL;
  int64_t k = w->dims[0];
  if (mul && !keeps_f16_precision(w, f, k, graph_numel(w) / k)) return NULL;
  graph_value *p[2] = {(graph_value *)w, NULL};
  if (mul) {
    p[0] = scaled(g, op, w, f, k, graph_numel(w) / k, "scalefolded_w");
    p[1] = b ? scaled(g, op, b, f, k, 1, "scalefolded_b") : NULL;
  } else {
    p[1] = offset_bias(g, op, w, b, f, k);
  }
  if (!p[0] || (!p[1] && (b || !mul))) return graph_node_error(g, op, COV_OUT_OF_MEMORY, "out of memory");
  return rewire(g, n, op, p, 1, p[1] ? 3 : 2);
}

/* MatMul n (constant 2-D B) or Gemm n (constant B, C absent or one value
 * per column) followed by a Mul by f, one value per output column. */
static cov_status fold_matmul(graph *g, graph_node *n, graph_node *op, const graph_value *f) {
  bool gemm = !strcmp(n->op_type, "Gemm");
  const graph_value *y = n->out[0], *b = n->in[1], *c = gemm && n->n_in > 2 ? n->in[2] : NULL;
  int64_t trans_b = 0;
  if (gemm) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transB", 0, &trans_b));
  if (!is_const(b) || b->rank != 2 || !graph_shape_known(y) || y->rank < 1 || !per_channel(f, y, y->rank - 1))
    return NULL;
  int64_t k = y->dims[y->rank - 1];
  if (b->dims[trans_b ? 0 : 1] != k) return NULL;
  if (c && (!is_const(c) || graph_numel(c) != k || c->dims[c->rank - 1] != k)) return NULL;
  int64_t inner = trans_b ? b->dims[1] : 1;
  if (!keeps_f16_precision(b, f, k, inner)) return NULL;
  graph_value *p[2] = {scaled(g, op, b, f, k, inner, "scalefolded_w"), NULL};
  if (c) p[1] = scaled(g, op, c, f, k, 1, "scalefolded_b");
  if (!p[0] || (c && !p[1])) return graph_node_error(g, op, COV_OUT_OF_MEMORY, "out of memory");
  return rewire(g, n, op, p, 1, c ? 3 : 2);
}

/* Whether x is read by op alone and is no graph output. */
static bool only_reader(const graph *g, const graph_value *x) {
  if (!x || x->n_uses != 1) return false;
  for (size_t j = 0; j < g->n_outputs; j++)
    if (g->outputs[j] == x) return false;
  return true;
}

static cov_status fold_at(graph *g, graph_node *op) {
  bool mul = !strcmp(op->op_type, "Mul");
  if ((!mul && strcmp(op->op_type, "Add") != 0) || op->n_in != 2 || op->n_out != 1) return NULL;
  for (int i = 0; i < 2; i++) {
    graph_value *x = op->in[i], *f = op->in[1 - i];
    graph_node *n = x ? x->producer : NULL;
    if (!n || n->dead || !is_const(f) || !only_reader(g, x) || n->n_out != 1 || !graph_shape_known(x) ||
        !graph_shape_known(op->out[0]) || op->out[0]->rank != x->rank || op->out[0]->dtype != x->dtype ||
        !cov_dtype_is_float(x->dtype))
      continue;
    if (!strcmp(n->op_type, "Conv") && n->domain[0] == '\0') return fold_conv(g, n, op, f, mul);
    if (mul && (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm")) && n->domain[0] == '\0')
      return fold_matmul(g, n, op, f);
  }
  return NULL;
}

cov_status graph_fold_channel_scale(graph *g) {
  graph_recount(g);
  cov_status errs = NULL;
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *op = g->nodes[i];
    if (op->dead) continue;
    errs = cov_status_join(errs, fold_at(g, op));
  }
  graph_recount(g);
  return errs;
}
