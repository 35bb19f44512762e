/* frontend/ops/graph_dynamic.c: operators whose output size depends on the
 * data: NonZero, Compress, Unique. They select elements, so they run in the
 * frontend (layout); their shape rules leave the data-dependent dims
 * unknown and the kernels set them (graph_opdef.dynamic). Every output is
 * bounded by its input's size and by GRAPH_MAX_DYNAMIC_ELEMS, checked
 * before it is allocated (graph_control.h). */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"

/* Sets v's shape and allocates it, within GRAPH_MAX_DYNAMIC_ELEMS. */
cov_status graph_dynamic_alloc(const graph *g, const graph_node *n, graph_value *v, int rank,
                               const int64_t *dims) {
  int64_t numel = 1;
  for (int d = 0; d < rank; d++) numel *= dims[d]; /* each dim is below the input's size */
  if (numel > GRAPH_MAX_DYNAMIC_ELEMS)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "output '%s' would hold %lld elements, more than the limit of %lld "
                            "for an output whose size depends on the data",
                            v->name, (long long)numel, (long long)GRAPH_MAX_DYNAMIC_ELEMS);
  graph_set_shape(v, rank, dims);
  return graph_alloc_data(g, n, v);
}

static bool elem_nonzero(const graph_value *v, size_t i) {
  if (cov_dtype_is_float(v->dtype)) return graph_load_elem(v->data, v->dtype, i) != 0;
  return graph_load_int(v->data, v->dtype, i) != 0;
}

/* ---- NonZero ---------------------------------------------------------- */

cov_status graph_infer_nonzero(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  (void)g, (void)n;
  out[0]->dtype = COV_I64;
  int64_t dims[2] = {in[0]->rank > 0 ? in[0]->rank : 1, -1};
  graph_set_shape(out[0], in[0]->rank < 0 ? -1 : 2, in[0]->rank < 0 ? NULL : dims);
  return NULL;
}

cov_status graph_exec_nonzero(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  const graph_value *v = in[0];
  int64_t numel = graph_numel(v), count = 0;
  bool all = x->bound; /* bound mode: every element (graph_run_io.bound) */
  for (int64_t i = 0; i < numel; i++) count += all || elem_nonzero(v, (size_t)i);
  int r = v->rank > 0 ? v->rank : 1;
  int64_t dims[2] = {r, count};
  COV_RETURN_IF_ERROR(graph_dynamic_alloc(x->g, n, out[0], 2, dims));
  int64_t *o = out[0]->data, k = 0;
  for (int64_t i = 0; i < numel; i++) {
    if (!all && !elem_nonzero(v, (size_t)i)) continue;
    int64_t rest = i;
    for (int d = v->rank - 1; d >= 0; d--) {
      o[d * count + k] = rest % v->dims[d];
      rest /= v->dims[d];
    }
    if (v->rank == 0) o[k] = 0;
    k++;
  }
  return NULL;
}

/* ---- Compress --------------------------------------------------------- */

/* axis (-1: none, the input flattened) and how many entries of the
 * condition count (those within the compressed length). */
static cov_status compress_axis(const graph *g, const graph_node *n, graph_value *const *in,
                                int *axis, int64_t *len) {
  const graph_attr *a = graph_attr_find(n, "axis");
  *axis = -1;
  if (a) COV_RETURN_IF_ERROR(graph_axis(g, n, a->i, in[0]->rank, "axis", axis));
  if (in[1]->rank >= 0 && in[1]->rank != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "condition must be 1-D (it has rank %d)",
                            in[1]->rank);
  if (in[1]->dtype != COV_BOOL)
    return graph_node_error(g, n, COV_INVALID_INPUT, "condition must be bool, not %s",
                            cov_dtype_name(in[1]->dtype));
  *len = *axis < 0 ? graph_numel(in[0]) : in[0]->dims[*axis];
  if (*len >= 0 && in[1]->rank == 1 && in[1]->dims[0] > *len)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "condition has %lld entries, more than the %lld it selects among",
                            (long long)in[1]->dims[0], (long long)*len);
  return NULL;
}

cov_status graph_infer_compress(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  int axis;
  int64_t len;
  if (in[0]->rank < 0) {
    out[0]->dtype = in[0]->dtype;
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  COV_RETURN_IF_ERROR(compress_axis(g, n, in, &axis, &len));
  graph_copy_type(out[0], in[0]);
  if (axis < 0) {
    int64_t d = -1;
    graph_set_shape(out[0], 1, &d);
  } else {
    out[0]->dims[axis] = -1;
  }
  return NULL;
}

cov_status graph_exec_compress(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  int axis;
  int64_t len = 0;
  COV_RETURN_IF_ERROR(compress_axis(x->g, n, in, &axis, &len));
  const uint8_t *c = in[1]->data;
  int64_t nc = in[1]->dims[0], count = 0;
  bool all = x->bound; /* bound mode: every slice (graph_run_io.bound) */
  for (int64_t i = 0; i < nc; i++) count += all || c[i] != 0;
  const graph_value *v = in[0];
  int64_t dims[COV_MAX_RANK], outer = 1, inner = 1;
  int rank = axis < 0 ? 1 : v->rank;
  if (axis < 0) {
    dims[0] = count;
  } else {
    for (int d = 0; d < v->rank; d++) {
      dims[d] = d == axis ? count : v->dims[d];
      if (d < axis) outer *= v->dims[d];
      if (d > axis) inner *= v->dims[d];
    }
  }
  COV_RETURN_IF_ERROR(graph_dynamic_alloc(x->g, n, out[0], rank, dims));
  size_t row = (size_t)inner * cov_dtype_size(v->dtype);
  unsigned char *o = out[0]->data;
  const unsigned char *src = v->data;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t i = 0; i < nc; i++)
      if (all || c[i]) {
        memcpy(o, src + ((size_t)a * (size_t)len + (size_t)i) * row, row);
        o += row;
      }
  return NULL;
}
