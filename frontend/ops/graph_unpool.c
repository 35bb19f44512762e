/* frontend/ops/graph_unpool.c: MaxUnpool, data movement run in the frontend:
 * each input element is written at its index (MaxPool's Indices: a flat
 * index into the whole output tensor) of a zero-filled output; no element
 * is computed. Each spatial dim of the unpooled tensor is
 * (in - 1) * stride - pad_begin - pad_end + kernel, and the indices refer
 * to that tensor; output_shape, when given, may make the output larger: the
 * unpooled tensor then sits at its origin, zeros around it (as the ONNX
 * reference and its test data do). Every index is checked before anything
 * is written. */
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"

/* The largest kernel or stride per axis. */
#define UNPOOL_MAX_WINDOW ((int64_t)1 << 20)

/* d: the unpooled dims; o: the output's (output_shape, else d). */
static cov_status unpool_dims(const graph *g, const graph_node *n, graph_value *const *in,
                              int64_t *d, int64_t *o, bool *known) {
  const graph_value *x = in[0], *idx = in[1];
  *known = false;
  if (x->dtype == COV_DTYPE_INVALID || x->dtype == COV_BOOL)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has dtype %s; MaxUnpool takes numbers",
                            x->name, cov_dtype_name(x->dtype));
  if (idx->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "indices '%s' must be int64, not %s",
                            idx->name, cov_dtype_name(idx->dtype));
  if (x->rank < 0) return NULL;
  int sp = x->rank - 2;
  if (sp < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected >= 3",
                            x->name, x->rank);
  if (idx->rank >= 0 && (idx->rank != x->rank || memcmp(idx->dims, x->dims, (size_t)x->rank * 8)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "indices '%s' must have the shape of '%s'",
                            idx->name, x->name);
  const int64_t *k = NULL, *s = NULL, *p = NULL;
  size_t nk = 0, ns = 0, np = 0;
  if (!graph_attr_find(n, "kernel_shape"))
    return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'kernel_shape' is required");
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "kernel_shape", &k, &nk));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "strides", &s, &ns));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "pads", &p, &np));
  if (nk != (size_t)sp || (ns && ns != (size_t)sp) || (np && np != 2 * (size_t)sp))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "kernel_shape, strides and pads must have %d, %d and %d values", sp,
                            sp, 2 * sp);
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  for (int i = 0; i < sp; i++) {
    int64_t st = ns ? s[i] : 1, pb = np ? p[i] : 0, pe = np ? p[sp + i] : 0;
    if (k[i] < 1 || k[i] > UNPOOL_MAX_WINDOW || st < 1 || st > UNPOOL_MAX_WINDOW || pb < 0 ||
        pe < 0 || pb >= k[i] || pe >= k[i])
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "axis %d: kernel %lld, stride %lld and pads %lld, %lld must be "
                              "positive (pads >= 0 and below the kernel, each at most 2^20)",
                              i, (long long)k[i], (long long)st, (long long)pb, (long long)pe);
    d[2 + i] = x->dims[2 + i] < 0 ? -1 : (x->dims[2 + i] - 1) * st - pb - pe + k[i];
    if (x->dims[2 + i] >= 0 && d[2 + i] < 1)
      return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d: the unpooled dim is %lld", i,
                              (long long)d[2 + i]);
  }
  memcpy(o, d, (size_t)x->rank * sizeof *d);
  if (n->n_in > 2 && in[2]) {
    int64_t os[COV_MAX_RANK];
    int r;
    bool k2;
    COV_RETURN_IF_ERROR(graph_read_shape_input(g, n, in[2], os, &r, &k2));
    if (!k2) return NULL;
    if (r != x->rank)
      return graph_node_error(g, n, COV_INVALID_INPUT, "output_shape has %d values for rank %d",
                              r, x->rank);
    for (int i = 0; i < r; i++)
      if (os[i] < 1 || (i < 2 && x->dims[i] >= 0 && os[i] != x->dims[i]) ||
          (i >= 2 && d[i] >= 0 && os[i] < d[i]))
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "output_shape dim %d is %lld; expected %s%lld", i, (long long)os[i],
                                i < 2 ? "" : "at least ", (long long)d[i]);
    memcpy(o, os, (size_t)r * sizeof *o);
  }
  *known = true;
  return NULL;
}

cov_status graph_infer_max_unpool(const graph *g, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  int64_t d[COV_MAX_RANK], o[COV_MAX_RANK];
  bool known;
  COV_RETURN_IF_ERROR(unpool_dims(g, n, in, d, o, &known));
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  if (!known)
    for (int i = 2; i < in[0]->rank; i++) o[i] = -1;
  graph_set_shape(out[0], in[0]->rank, o);
  return NULL;
}

cov_status graph_exec_max_unpool(graph_exec *x, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  int64_t d[COV_MAX_RANK], o[COV_MAX_RANK];
  bool known;
  COV_RETURN_IF_ERROR(unpool_dims(x->g, n, in, d, o, &known));
  int r = in[0]->rank;
  int64_t total = 1, cnt = graph_numel(in[0]);
  for (int i = 0; i < r; i++) total *= d[i]; /* at most the output's elements */
  const int64_t *idx = in[1]->data;
  for (int64_t i = 0; i < cnt; i++)
    if (idx[i] < 0 || idx[i] >= total)
      return graph_node_error(x->g, n, COV_INVALID_INPUT,
                              "index %lld (element %lld of '%s') is outside the %lld elements of "
                              "the unpooled tensor",
                              (long long)idx[i], (long long)i, in[1]->name, (long long)total);
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  size_t es = cov_dtype_size(in[0]->dtype);
  const unsigned char *src = in[0]->data;
  unsigned char *dst = out[0]->data;
  for (int64_t i = 0; i < cnt; i++) {
    /* the flat index in d's shape, then the same coordinates in o's */
    int64_t rem = idx[i], off = 0, stride = 1;
    for (int a = r - 1; a >= 0; a--) {
      off += (rem % d[a]) * stride;
      rem /= d[a];
      stride *= o[a];
    }
    memcpy(dst + (size_t)off * es, src + (size_t)i * es, es);
  }
  return NULL;
}
