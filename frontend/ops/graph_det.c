/* frontend/ops/graph_det.c: Det, lowered onto the det codelet
 * (codelets/linalg.cdl) over a [batch, M, M] view of the input's trailing
 * square matrices (a free reshape). */
#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

static cov_status det_check(const graph *g, const graph_node *n, const graph_value *x) {
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (x->rank < 0) return NULL;
  if (x->rank < 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected [..., M, M]",
                            x->name, x->rank);
  int64_t a = x->dims[x->rank - 2], b = x->dims[x->rank - 1];
  if (a >= 0 && b >= 0 && a != b)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' ends in %lld x %lld matrices; Det takes square ones",
                            x->name, (long long)a, (long long)b);
  return NULL;
}

cov_status graph_infer_det(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  COV_RETURN_IF_ERROR(det_check(g, n, in[0]));
  out[0]->dtype = in[0]->dtype;
  graph_set_shape(out[0], in[0]->rank < 0 ? -1 : in[0]->rank - 2, in[0]->dims);
  return NULL;
}

cov_status graph_exec_det(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  COV_RETURN_IF_ERROR(det_check(x->g, n, in[0]));
  const graph_value *v = in[0];
  int64_t m = v->dims[v->rank - 1], d3[3] = {graph_numel(out[0]), m, m};
  cov_tensor t = graph_view_as(v, 3, d3), y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "det", NULL, 0, &t, 1, &y, 1));
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_det(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("det", names, max);
}
