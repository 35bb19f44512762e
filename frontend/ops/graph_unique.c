/* frontend/ops/graph_unique.c: Unique (opset 11), a layout operator whose
 * output size depends on the data (graph_opdef.dynamic).
 *
 * The items compared are the input's elements (no axis: flattened) or its
 * slices along `axis`, compared element by element (integers exactly,
 * floats as doubles). A stable merge sort of the items' indices groups
 * equal items, each group's first index being its first occurrence; with
 * sorted=1 the groups come out in ascending order, with sorted=0 in the
 * order they first occur. O(items log items) comparisons. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"

typedef struct items {
  const graph_value *v;
  int64_t outer, count, inner; /* the input as [outer, count, inner]; items along count */
} items;

static int cmp_elem(const graph_value *v, size_t i, size_t j) {
  if (cov_dtype_is_float(v->dtype)) {
    double a = graph_load_elem(v->data, v->dtype, i), b = graph_load_elem(v->data, v->dtype, j);
    return a < b ? -1 : a > b;
  }
  int64_t a = graph_load_int(v->data, v->dtype, i), b = graph_load_int(v->data, v->dtype, j);
  return a < b ? -1 : a > b;
}

static int cmp_items(const items *it, int64_t a, int64_t b) {
  for (int64_t o = 0; o < it->outer; o++)
    for (int64_t k = 0; k < it->inner; k++) {
      int c = cmp_elem(it->v, (size_t)((o * it->count + a) * it->inner + k),
                       (size_t)((o * it->count + b) * it->inner + k));
      if (c) return c;
    }
  return 0;
}

/* Stable bottom-up merge sort of idx[0..n) by the items they name. */
static void sort_items(const items *it, int64_t *idx, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = cmp_items(it, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
      while (i < mid) tmp[k++] = idx[i++];
      while (j < hi) tmp[k++] = idx[j++];
    }
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
  }
}

static cov_status unique_axis(const graph *g, const graph_node *n, const graph_value *x,
                              int *axis) {
  const graph_attr *a = graph_attr_find(n, "axis");
  *axis = -1;
  if (a && x->rank >= 0) COV_RETURN_IF_ERROR(graph_axis(g, n, a->i, x->rank, "axis", axis));
  return NULL;
}

cov_status graph_infer_unique(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  int axis;
  COV_RETURN_IF_ERROR(unique_axis(g, n, in[0], &axis));
  if (axis < 0 && in[0]->rank < 0 && graph_attr_find(n, "axis"))
    return graph_node_error(g, n, COV_INVALID_INPUT, "axis needs the input's rank");
  int64_t unknown = -1, items_n = axis < 0 ? graph_numel(in[0]) : in[0]->dims[axis];
  out[0]->dtype = in[0]->dtype;
  if (axis < 0) {
    graph_set_shape(out[0], 1, &unknown);
  } else {
    graph_copy_type(out[0], in[0]);
    out[0]->dims[axis] = -1;
  }
  for (int k = 1; k < n->n_out; k++) {
    if (!out[k]) continue;
    out[k]->dtype = COV_I64;
    graph_set_shape(out[k], 1, k == 2 ? &items_n : &unknown);
  }
  return NULL;
}

/* Groups the sorted items: grp[i] the group of item i, first[g] and cnt[g];
 * returns the number of groups. */
static int64_t group_items(const items *it, const int64_t *idx, int64_t *grp, int64_t *first,
                           int64_t *cnt) {
  int64_t u = 0;
  for (int64_t s = 0; s < it->count; s++) {
    if (s == 0 || cmp_items(it, idx[s - 1], idx[s]) != 0) {
      first[u] = idx[s];
      cnt[u++] = 0;
    }
    grp[idx[s]] = u - 1;
    cnt[u - 1]++;
  }
  return u;
}

static cov_status unique_out(graph_exec *x, const graph_node *n, const items *it, int axis,
                             const int64_t *order, const int64_t *pos, const int64_t *grp,
                             const int64_t *first, const int64_t *cnt, int64_t u,
                             graph_value *const *out) {
  const graph_value *v = it->v;
  int64_t dims[COV_MAX_RANK];
  int rank = axis < 0 ? 1 : v->rank;
  for (int d = 0; d < rank; d++) dims[d] = axis < 0 || d == axis ? u : v->dims[d];
  COV_RETURN_IF_ERROR(graph_dynamic_alloc(x->g, n, out[0], rank, dims));
  size_t es = cov_dtype_size(v->dtype), row = (size_t)it->inner * es;
  for (int64_t o = 0; o < it->outer; o++)
    for (int64_t k = 0; k < u; k++)
      memcpy((unsigned char *)out[0]->data + ((size_t)(o * u + k)) * row,
             (const unsigned char *)v->data + ((size_t)(o * it->count + first[order[k]])) * row,
             row);
  for (int k = 1; k < n->n_out; k++) {
    if (!out[k]) continue;
    int64_t len = k == 2 ? it->count : u;
    COV_RETURN_IF_ERROR(graph_dynamic_alloc(x->g, n, out[k], 1, &len));
    int64_t *o = out[k]->data;
    for (int64_t i = 0; i < len; i++)
      o[i] = k == 1 ? first[order[i]] : k == 2 ? pos[grp[i]] : cnt[order[i]];
  }
  return NULL;
}

cov_status graph_exec_unique(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int axis;
  int64_t sorted = 1;
  COV_RETURN_IF_ERROR(unique_axis(x->g, n, in[0], &axis));
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "sorted", 1, &sorted));
  const graph_value *v = in[0];
  items it = {.v = v, .outer = 1, .count = graph_numel(v), .inner = 1};
  if (axis >= 0) {
    it.count = v->dims[axis];
    for (int d = 0; d < v->rank; d++) {
      if (d < axis) it.outer *= v->dims[d];
      if (d > axis) it.inner *= v->dims[d];
    }
  }
  size_t m = (size_t)it.count + 1;
  if ((uint64_t)m * 7 * sizeof(int64_t) > graph_memory_limit(x->g))
    return graph_node_error(x->g, n, COV_OUT_OF_RANGE,
                            "%lld items need %llu bytes of work space, more than the memory "
                            "limit of %llu bytes (--max-memory)",
                            (long long)it.count, (unsigned long long)(m * 7 * sizeof(int64_t)),
                            (unsigned long long)graph_memory_limit(x->g));
  int64_t *buf = malloc(7 * m * sizeof *buf);
  if (!buf) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  int64_t *idx = buf, *tmp = buf + m, *grp = buf + 2 * m, *first = buf + 3 * m,
          *cnt = buf + 4 * m, *order = buf + 5 * m, *pos = buf + 6 * m;
  for (int64_t i = 0; i < it.count; i++) idx[i] = i;
  sort_items(&it, idx, tmp, it.count);
  int64_t u = group_items(&it, idx, grp, first, cnt);
  /* order[k]: the group output k shows; pos[g]: where group g goes */
  for (int64_t k = 0; k < u; k++) order[k] = k;
  if (!sorted) {
    for (int64_t i = 0; i < it.count; i++) tmp[i] = -1;
    for (int64_t g = 0; g < u; g++) tmp[first[g]] = g;
    int64_t k = 0;
    for (int64_t i = 0; i < it.count; i++)
      if (tmp[i] >= 0) order[k++] = tmp[i];
  }
  for (int64_t k = 0; k < u; k++) pos[order[k]] = k;
  cov_status st = unique_out(x, n, &it, axis, order, pos, grp, first, cnt, u, out);
  free(buf);
  return st;
}
