/* frontend/ops/graph_loss.c: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (their forward value, as inference graphs and the
 * ONNX functions that expand into them use it).
 *
 * The frontend gathers, per sample and position, the input at the target
 * class and that class's weight (0 where the target is ignore_index): data
 * movement by a data-dependent index, which codelets cannot express. The
 * arithmetic is the nll_none / nll_sum / nll_mean codelets (norm.cdl);
 * SoftmaxCrossEntropyLoss first takes log_softmax over the class axis. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

enum { R_NONE, R_SUM, R_MEAN };

typedef struct loss_params {
  int reduction;
  bool has_ignore;
  int64_t ignore;
} loss_params;

static cov_status loss_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                 loss_params *p) {
  const graph_value *x = in[0], *t = in[1], *w = n->n_in > 2 ? in[2] : NULL;
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (t->dtype != COV_I64 && t->dtype != COV_I32)
    return graph_node_error(g, n, COV_INVALID_INPUT, "target '%s' must be int32 or int64, not %s",
                            t->name, cov_dtype_name(t->dtype));
  if (w && (w->dtype != x->dtype || (w->rank >= 0 && w->rank != 1)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "weight '%s' must be a 1-D %s tensor", w->name,
                            cov_dtype_name(x->dtype));
  const char *red;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "reduction", "mean", &red));
  static const char *const names[] = {"none", "sum", "mean"};
  p->reduction = -1;
  for (int i = 0; i < 3; i++)
    if (strcmp(red, names[i]) == 0) p->reduction = i;
  if (p->reduction < 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "reduction '%s' is not none, sum or mean",
                            red);
  p->has_ignore = graph_attr_find(n, "ignore_index") != NULL;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "ignore_index", 0, &p->ignore));
  if (x->rank < 0 || t->rank < 0) return NULL;
  if (x->rank < 2 || t->rank != x->rank - 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input must be [N, C, d...] and target [N, d...] (got ranks %d and %d)",
                            x->rank, t->rank);
  for (int i = 0; i < t->rank; i++) {
    int64_t a = x->dims[i ? i + 1 : 0], b = t->dims[i];
    if (a >= 0 && b >= 0 && a != b)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "target '%s' does not match the input's shape", t->name);
  }
  return NULL;
}

cov_status graph_infer_loss(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  loss_params p;
  COV_RETURN_IF_ERROR(loss_params_of(g, n, in, &p));
  out[0]->dtype = in[0]->dtype;
  if (p.reduction == R_NONE)
    graph_set_shape(out[0], in[1]->rank, in[1]->dims);
  else
    graph_set_shape(out[0], 0, NULL);
  if (n->n_out > 1 && out[1]) graph_copy_type(out[1], in[0]);
  return NULL;
}

/* g[m] = x[n, t, d] and w[m] = weight[t] (1 without weights; both 0 where
 * t is ignored), m running over (n, d). */
static cov_status gather_targets(graph_exec *x, const graph_node *n, const loss_params *p,
                                 const graph_value *xv, const void *xdata, const graph_value *t,
                                 const graph_value *wv, void *gdata, void *wdata) {
  int64_t N = xv->dims[0], C = xv->dims[1], D = 1;
  for (int i = 2; i < xv->rank; i++) D *= xv->dims[i];
  cov_dtype dt = xv->dtype;
  for (int64_t s = 0; s < N; s++)
    for (int64_t d = 0; d < D; d++) {
      size_t m = (size_t)(s * D + d);
      int64_t c =
          t->dtype == COV_I64 ? ((const int64_t *)t->data)[m] : ((const int32_t *)t->data)[m];
      if (p->has_ignore && c == p->ignore) {
        graph_store_elem(gdata, dt, m, 0);
        graph_store_elem(wdata, dt, m, 0);
        continue;
      }
      if (c < 0 || c >= C)
        return graph_node_error(x->g, n, COV_INVALID_INPUT,
                                "target %lld is out of range for %lld classes", (long long)c,
                                (long long)C);
      graph_store_elem(gdata, dt, m, graph_load_elem(xdata, dt, (size_t)((s * C + c) * D + d)));
      graph_store_elem(wdata, dt, m, wv ? graph_load_elem(wv->data, dt, (size_t)c) : 1.0);
    }
  return NULL;
}

/* log_softmax over axis 1 of [N, C, D]: moved last, one call, moved back. */
static cov_status log_softmax_c(graph_exec *x, const graph_node *n, const graph_value *v,
                                void **out) {
  int64_t N = v->dims[0], C = v->dims[1], D = graph_numel(v) / (N * C != 0 ? N * C : 1);
  int64_t d3[3] = {N, C, D}, t3[3] = {N, D, C};
  int perm[3] = {0, 2, 1};
  void *tdata = NULL;
  COV_RETURN_IF_ERROR(graph_transpose_data(x->g, n, v->data, v->dtype, 3, d3, perm, &tdata));
  cov_tensor t = {.dtype = v->dtype, .rank = 2, .shape = {N * D, C}, .data = tdata}, y;
  cov_status st = graph_call_codelet(x, n, "log_softmax", NULL, 0, &t, 1, &y, 1);
  free(tdata);
  COV_RETURN_IF_ERROR(st);
  st = graph_transpose_data(x->g, n, y.data, y.dtype, 3, t3, perm, out);
  cov_tensor_release(&y);
  return st;
}

static const char *const k_nll[] = {"nll_none", "nll_sum", "nll_mean"};

cov_status graph_exec_loss(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  loss_params p;
  COV_RETURN_IF_ERROR(loss_params_of(x->g, n, in, &p));
  const graph_value *xv = in[0], *wv = n->n_in > 2 ? in[2] : NULL;
  bool sce = strcmp(n->op_type, "SoftmaxCrossEntropyLoss") == 0;
  void *logp = NULL;
  if (sce) COV_RETURN_IF_ERROR(log_softmax_c(x, n, xv, &logp));
  int64_t m = graph_numel(in[1]);
  size_t es = cov_dtype_size(xv->dtype);
  void *gd = malloc((size_t)(m > 0 ? m : 1) * es), *wd = malloc((size_t)(m > 0 ? m : 1) * es);
  cov_status st = NULL;
  if (!gd || !wd) st = graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) st = gather_targets(x, n, &p, xv, sce ? logp : xv->data, in[1], wv, gd, wd);
  cov_tensor y = {0};
  if (!st) {
    cov_tensor t[2] = {{.dtype = xv->dtype, .rank = 1, .shape = {m}, .data = gd},
                       {.dtype = xv->dtype, .rank = 1, .shape = {m}, .data = wd}};
    st = graph_call_codelet(x, n, k_nll[p.reduction], NULL, 0, t, 2, &y, 1);
  }
  free(gd);
  free(wd);
  if (!st) st = graph_lower_adopt(x, n, &y, out[0]);
  if (!st && sce && n->n_out > 1 && out[1]) {
    out[1]->data = logp;
    logp = NULL;
  }
  free(logp);
  return st;
}

int graph_codelets_loss(const graph_node *n, const char **names, int max) {
  const graph_attr *a = graph_attr_find(n, "reduction");
  const char *red = a && a->type == GA_STRING && a->s ? a->s : "mean";
  int k = 0;
  if (strcmp(n->op_type, "SoftmaxCrossEntropyLoss") == 0 && k < max) names[k++] = "log_softmax";
  const char *nm = strcmp(red, "none") == 0  ? k_nll[0]
                   : strcmp(red, "sum") == 0 ? k_nll[1]
                                             : k_nll[2];
  if (k < max) names[k++] = nm;
  return k;
}
