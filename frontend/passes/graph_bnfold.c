/* frontend/passes/graph_bnfold.c: BatchNormalization folded into the Conv before it.
 *
 * In inference mode BatchNormalization is a per-channel affine map, so when it
 * reads a Conv's output (and nothing else does) and every parameter is a
 * constant, it disappears into the Conv's weights and bias:
 *   s = scale / sqrt(var + epsilon)
 *   W'[k] = W[k] * s[k]          b'[k] = (b[k] - mean[k]) * s[k] + beta[k]
 * computed in double and rounded once to the weights' dtype. This rewrites
 * parameters at compile time (like constant folding); the model's compute
 * still runs through the conv2d codelet. */
#include <math.h>
#include <string.h>

#include "frontend/graph.h"

static bool is_const(const graph_value *v) { return v && v->data && graph_shape_known(v); }

static cov_status fold_one(graph *g, graph_node *conv, graph_node *bn, bool *done) {
  *done = false;
  graph_value *w = conv->in[1], *b = conv->n_in > 2 ? conv->in[2] : NULL;
  if (!is_const(w) || (b && !is_const(b))) return NULL;
  for (int i = 1; i < 5; i++)
    if (!is_const(bn->in[i]) || !cov_dtype_is_float(bn->in[i]->dtype)) return NULL;
  for (int i = 1; i < bn->n_out; i++)
    if (bn->out[i]) return NULL;
  int64_t training = 0; /* training mode normalizes with the batch's statistics */
  if (bn->opset >= 14) COV_RETURN_IF_ERROR(graph_attr_int(g, bn, "training_mode", 0, &training));
  if (training) return NULL;
  int64_t k = w->dims[0];
  if (w->rank < 3 || k <= 0 || !cov_dtype_is_float(w->dtype)) return NULL;
  for (int i = 1; i < 5; i++)
    if (graph_numel(bn->in[i]) != k) return NULL;
  if (b && graph_numel(b) != k) return NULL;
  float eps;
  COV_RETURN_IF_ERROR(graph_attr_float(g, bn, "epsilon", 1e-5f, &eps));
  int64_t per = graph_numel(w) / k;
  size_t es = cov_dtype_size(w->dtype);
  graph_value *nw = graph_add_value(g, cov_arena_printf(g->arena, "%s/bnfolded_w", bn->name));
  graph_value *nb = graph_add_value(g, cov_arena_printf(g->arena, "%s/bnfolded_b", bn->name));
  if (!nw || !nb) return graph_node_error(g, bn, COV_OUT_OF_MEMORY, "out of memory");
  graph_copy_type(nw, w);
  nb->dtype = w->dtype;
  graph_set_shape(nb, 1, &k);
  nw->kind = nb->kind = GV_CONSTANT;
  nw->data = cov_arena_alloc(g->arena, (size_t)graph_numel(w) * es);
  nb->data = cov_arena_alloc(g->arena, (size_t)k * es);
  if (!nw->data || !nb->data) return graph_node_error(g, bn, COV_OUT_OF_MEMORY, "out of memory");
  const graph_value *scale = bn->in[1], *beta = bn->in[2], *mean = bn->in[3], *var = bn->in[4];
  for (int64_t c = 0; c < k; c++) {
    double s = graph_load_elem(scale->data, scale->dtype, (size_t)c) /
               sqrt(graph_load_elem(var->data, var->dtype, (size_t)c) + (double)eps);
    for (int64_t j = 0; j < per; j++) {
      size_t at = (size_t)(c * per + j);
      graph_store_elem(nw->data, w->dtype, at, graph_load_elem(w->data, w->dtype, at) * s);
    }
    double bias = b ? graph_load_elem(b->data, b->dtype, (size_t)c) : 0.0;
    graph_store_elem(nb->data, w->dtype, (size_t)c,
                     (bias - graph_load_elem(mean->data, mean->dtype, (size_t)c)) * s +
                         graph_load_elem(beta->data, beta->dtype, (size_t)c));
  }
  graph_value **in = cov_arena_array(g->arena, 3, sizeof *in);
  if (!in) return graph_node_error(g, bn, COV_OUT_OF_MEMORY, "out of memory");
  in[0] = conv->in[0];
  in[1] = nw;
  in[2] = nb;
  conv->in = in;
  conv->n_in = 3;
  conv->out[0]->n_uses = 0; /* orphaned: dropped by graph_compact */
  conv->out[0] = bn->out[0];
  conv->out[0]->producer = conv;
  nw->n_uses = nb->n_uses = 1;
  bn->dead = true;
  *done = true;
  return NULL;
}

cov_status graph_fold_batchnorm(graph *g) {
  graph_recount(g);
  cov_status errs = NULL;
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *bn = g->nodes[i];
    if (bn->dead || strcmp(bn->op_type, "BatchNormalization") != 0) continue;
    graph_value *x = bn->in[0];
    graph_node *conv = x ? x->producer : NULL;
    if (!conv || conv->dead || strcmp(conv->op_type, "Conv") != 0 || x->n_uses != 1) continue;
    bool is_out = false;
    for (size_t j = 0; j < g->n_outputs; j++) is_out |= g->outputs[j] == x;
    if (is_out) continue;
    bool done;
    errs = cov_status_join(errs, fold_one(g, conv, bn, &done));
  }
  graph_recount(g);
  return errs;
}
