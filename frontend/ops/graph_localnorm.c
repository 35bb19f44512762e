/* frontend/ops/graph_localnorm.c: LRN and MeanVarianceNormalization, lowered
 * onto the `lrn` and `mvn` codelets (codelets/norm.cdl).
 *
 * LRN normalises each element by the squares of its neighbours across
 * channels: x is viewed as [N, C, spatial] (a free reshape). MVN normalises
 * over a set of axes (default 0, 2, 3): those axes are moved last by a
 * transpose (layout work, skipped when they already are last), the codelet
 * runs over the [kept, normalised] view, and the result is transposed
 * back. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

/* ---- LRN ----------------------------------------------------------------- */

typedef struct lrn_params {
  int64_t size;
  float alpha, beta, bias;
} lrn_params;

static cov_status lrn_params_of(const graph *g, const graph_node *n, const graph_value *x,
                                lrn_params *p) {
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (!graph_attr_find(n, "size"))
    return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'size' is required");
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "size", 1, &p->size));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "alpha", 0.0001f, &p->alpha));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "beta", 0.75f, &p->beta));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "bias", 1.0f, &p->bias));
  if (p->size < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "size %lld must be positive",
                            (long long)p->size);
  if (x->rank >= 0 && x->rank < 3)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has rank %d; expected [N, C, D1, ...] (rank >= 3)",
                            x->name, x->rank);
  if (x->rank >= 0 && x->dims[1] >= 0 && p->size > 2 * x->dims[1] + 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "size %lld is wider than twice the %lld channels of '%s'",
                            (long long)p->size, (long long)x->dims[1], x->name);
  return NULL;
}

cov_status graph_infer_lrn(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  lrn_params p;
  COV_RETURN_IF_ERROR(lrn_params_of(g, n, in[0], &p));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_lrn(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  lrn_params p;
  COV_RETURN_IF_ERROR(lrn_params_of(x->g, n, in[0], &p));
  const graph_value *v = in[0];
  int64_t sp = 1;
  for (int i = 2; i < v->rank; i++) sp *= v->dims[i];
  int64_t d3[3] = {v->dims[0], v->dims[1], sp};
  cov_attr a[4] = {graph_lower_attr_i("size", p.size), graph_lower_attr_f("alpha", p.alpha),
                   graph_lower_attr_f("beta", p.beta), graph_lower_attr_f("bias", p.bias)};
  cov_tensor t = graph_view_as(v, 3, d3), y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "lrn", a, 4, &t, 1, &y, 1));
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_lrn(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("lrn", names, max);
}

/* ---- MeanVarianceNormalization ---------------------------------------------- */

/* Which axes are normalised (attribute axes, default 0, 2, 3). */
static cov_status mvn_axes(const graph *g, const graph_node *n, const graph_value *x,
                           bool norm[COV_MAX_RANK]) {
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  const int64_t *axes = NULL;
  size_t na = 0;
  static const int64_t k_default[] = {0, 2, 3};
  if (graph_attr_find(n, "axes")) {
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "axes", &axes, &na));
    if (na == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "axes is empty");
  } else {
    axes = k_default;
    na = 3;
  }
  for (int i = 0; i < COV_MAX_RANK; i++) norm[i] = false;
  if (x->rank < 0) return NULL;
  if (na > (size_t)x->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%zu axes for input '%s' of rank %d", na,
                            x->name, x->rank);
  for (size_t i = 0; i < na; i++) {
    int a;
    COV_RETURN_IF_ERROR(graph_axis(g, n, axes[i], x->rank, "axis", &a));
    if (norm[a]) return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d is given twice", a);
    norm[a] = true;
  }
  return NULL;
}

cov_status graph_infer_mvn(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  bool norm[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(mvn_axes(g, n, in[0], norm));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_mvn(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  bool norm[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(mvn_axes(x->g, n, in[0], norm));
  const graph_value *v = in[0];
  int r = v->rank, perm[COV_MAX_RANK], inv[COV_MAX_RANK], k = 0;
  int64_t kept = 1, red = 1, tdims[COV_MAX_RANK];
  for (int i = 0; i < r; i++)
    if (!norm[i]) perm[k++] = i, kept *= v->dims[i];
  for (int i = 0; i < r; i++)
    if (norm[i]) perm[k++] = i, red *= v->dims[i];
  bool in_order = true;
  for (int i = 0; i < r; i++) {
    in_order &= perm[i] == i;
    inv[perm[i]] = i;
    tdims[i] = v->dims[perm[i]];
  }
  void *tdata = NULL;
  if (!in_order)
    COV_RETURN_IF_ERROR(graph_transpose_data(x->g, n, v->data, v->dtype, r, v->dims, perm, &tdata));
  cov_tensor t = {.dtype = v->dtype, .rank = 2, .shape = {kept, red},
                  .data = tdata ? tdata : v->data},
             y;
  cov_status st = graph_call_codelet(x, n, "mvn", NULL, 0, &t, 1, &y, 1);
  free(tdata);
  COV_RETURN_IF_ERROR(st);
  if (in_order) return graph_lower_adopt(x, n, &y, out[0]);
  void *back = NULL;
  st = graph_transpose_data(x->g, n, y.data, y.dtype, r, tdims, inv, &back);
  cov_tensor_release(&y);
  COV_RETURN_IF_ERROR(st);
  out[0]->data = back;
  return NULL;
}

int graph_codelets_mvn(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("mvn", names, max);
}
