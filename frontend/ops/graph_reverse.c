/* frontend/ops/graph_reverse.c: ReverseSequence, data movement run in the
 * frontend. Along the batch axis, each batch entry b reverses its first
 * sequence_lens[b] elements along the time axis and keeps the rest; no
 * element is computed. Every length is checked against the time axis before
 * anything is written. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"

typedef struct rev_params {
  int batch_axis, time_axis;
} rev_params;

static cov_status rev_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                rev_params *p) {
  int64_t b, t;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "batch_axis", 1, &b));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "time_axis", 0, &t));
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "batch_axis %lld and time_axis %lld must be 0 and 1 in some order",
                            (long long)b, (long long)t);
  p->batch_axis = (int)b;
  p->time_axis = (int)t;
  const graph_value *x = in[0], *lens = in[1];
  if (x->dtype == COV_DTYPE_INVALID)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has no dtype", x->name);
  if (lens->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' must be int64, not %s", lens->name,
                            cov_dtype_name(lens->dtype));
  if (x->rank >= 0 && x->rank < 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected >= 2",
                            x->name, x->rank);
  if (lens->rank >= 0 && lens->rank != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' has rank %d; expected 1",
                            lens->name, lens->rank);
  if (x->rank >= 2 && lens->rank == 1 && x->dims[p->batch_axis] >= 0 && lens->dims[0] >= 0 &&
      lens->dims[0] != x->dims[p->batch_axis])
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "'%s' has %lld lengths for a batch of %lld (axis %d of '%s')",
                            lens->name, (long long)lens->dims[0],
                            (long long)x->dims[p->batch_axis], p->batch_axis, x->name);
  if (lens->data && x->rank >= 2 && x->dims[p->time_axis] >= 0) {
    int64_t nl = graph_numel(lens), tmax = x->dims[p->time_axis];
    for (int64_t i = 0; i < nl; i++) {
      int64_t l = ((const int64_t *)lens->data)[i];
      if (l < 0 || l > tmax)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "sequence length %lld (element %lld of '%s') is outside 0..%lld",
                                (long long)l, (long long)i, lens->name, (long long)tmax);
    }
  }
  return NULL;
}

cov_status graph_infer_reverse_sequence(const graph *g, const graph_node *n,
                                        graph_value *const *in, graph_value *const *out) {
  rev_params p = {0};
  COV_RETURN_IF_ERROR(rev_params_of(g, n, in, &p));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_reverse_sequence(graph_exec *x, const graph_node *n,
                                       graph_value *const *in, graph_value *const *out) {
  rev_params p = {0};
  COV_RETURN_IF_ERROR(rev_params_of(x->g, n, in, &p));
  const graph_value *v = in[0];
  const int64_t *lens = in[1]->data;
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  size_t es = cov_dtype_size(v->dtype);
  int64_t inner = 1;
  for (int i = 2; i < v->rank; i++) inner *= v->dims[i];
  int64_t d0 = v->dims[0], d1 = v->dims[1];
  size_t row = (size_t)inner * es;
  const unsigned char *src = v->data;
  unsigned char *dst = out[0]->data;
  /* [d0, d1, inner]: one row of `inner` elements per (i0, i1). */
  for (int64_t i0 = 0; i0 < d0; i0++)
    for (int64_t i1 = 0; i1 < d1; i1++) {
      int64_t b = p.batch_axis == 0 ? i0 : i1, t = p.time_axis == 0 ? i0 : i1;
      int64_t ts = t < lens[b] ? lens[b] - 1 - t : t;
      int64_t s0 = p.time_axis == 0 ? ts : i0, s1 = p.time_axis == 0 ? i1 : ts;
      if (row) memcpy(dst + (size_t)(i0 * d1 + i1) * row, src + (size_t)(s0 * d1 + s1) * row, row);
    }
  return NULL;
}
