/* frontend/ops/graph_lower.h: helpers for lowering compute operations onto
 * codelet calls (graph_compute.c, graph_conv.c, graph_pool.c,
 * graph_matmul.c). */
#ifndef COV_FRONTEND_GRAPH_LOWER_H
#define COV_FRONTEND_GRAPH_LOWER_H

#include "frontend/graph.h"

static inline cov_attr graph_lower_attr_i(const char *name, int64_t v) {
  cov_attr a = {.name = name, .is_float = 0, .i = v, .f = 0};
  return a;
}

static inline cov_attr graph_lower_attr_f(const char *name, double v) {
  cov_attr a = {.name = name, .is_float = 1, .i = 0, .f = v};
  return a;
}

/* Moves a codelet's output into `out` after checking that its dtype and
 * element count are what shape inference promised (a mismatch is a bug in
 * covenant, reported rather than trusted). Releases *y on failure. */
cov_status graph_lower_adopt(graph_exec *x, const graph_node *n, cov_tensor *y, graph_value *out);

/* graph_call_codelet for a call whose inputs named by const_mask (bit k:
 * input k) the node computed from model constants alone: a layer group
 * then describes them as constants instead of refusing them as values made
 * inside the node. The caller guarantees that no run-time value reaches
 * them. */
cov_status graph_lower_call_const(graph_exec *x, const graph_node *n, const char *name,
                                  const cov_attr *attrs, size_t n_attrs, const cov_tensor *in,
                                  size_t n_in, cov_tensor *out, unsigned const_mask);

/* A converted copy of v into tmp (tmp->data malloc'd, the caller frees). */
cov_status graph_lower_cast_copy(const graph *g, const graph_node *n, const graph_value *v, cov_dtype to,
                           graph_value *tmp);
/* names[0] = name; returns 1 (0 when max < 1): a one-codelet binding. */
int graph_lower_single(const char *name, const char **names, int max);
/* y = codelet(a, b) with numpy broadcasting to odims (rank r, inferred by
 * the caller), through a rank-4 broadcasting binary codelet. */
cov_status graph_lower_binary(graph_exec *x, const graph_node *n, const char *codelet,
                        const graph_value *a, const graph_value *b, int r, const int64_t *odims,
                        cov_tensor *y);
/* out = codelet(v) on the flattened tensor, with attributes. */
cov_status graph_lower_unary(graph_exec *x, const graph_node *n, const char *codelet,
                       const cov_attr *attrs, size_t na, const graph_value *v, graph_value *out);

/* Dtype rules shared by the operators. */
cov_status graph_check_float(const graph *g, const graph_node *n, const graph_value *v);
cov_status graph_check_numeric(const graph *g, const graph_node *n, const graph_value *v);

/* Conv's geometry for QLinearConv/ConvInteger (graph_conv.c): conv2d's nine
 * attributes (a[0..8], as conv2d names them), the [N, M, P, Q] output dims
 * (-1 where unknown) and the spatial rank (1 or 2). */
cov_status graph_conv_geometry(const graph *g, const graph_node *n, const graph_value *x,
                               const graph_value *w, cov_attr a[9], int64_t out_dims[4], int *sp);

#endif
