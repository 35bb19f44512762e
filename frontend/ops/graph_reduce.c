/* frontend/ops/graph_reduce.c: the reductions (ReduceMean, ReduceSum, ReduceMax,
 * ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
 * ReduceSumSquare) and ArgMax / ArgMin, lowered onto codelets/reduce.cdl
 * (ReduceMean onto global_avgpool). The reduced axes are moved last by a
 * transpose (layout work, skipped when they already are) and merged, so
 * every reduction is one call over a [kept, reduced] view. Axes come as an
 * attribute, or as an input from opset 18 (ReduceSum: 13), which must then
 * be a constant. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

#define MAX_LIST 64

static const char *const k_reduce[][2] = {
    {"ReduceL1", "reduce_l1"},          {"ReduceL2", "reduce_l2"},
    {"ReduceLogSum", "reduce_log_sum"}, {"ReduceLogSumExp", "reduce_log_sum_exp"},
    {"ReduceMax", "reduce_max"},        {"ReduceMean", "global_avgpool"},
    {"ReduceMin", "reduce_min"},        {"ReduceProd", "reduce_prod"},
    {"ReduceSum", "reduce_sum"},        {"ReduceSumSquare", "reduce_sum_square"},
};

static const char *reduce_codelet(const char *op) {
  for (size_t i = 0; i < sizeof k_reduce / sizeof *k_reduce; i++)
    if (strcmp(k_reduce[i][0], op) == 0) return k_reduce[i][1];
  return "reduce_sum";
}

static bool reduce_float_only(const char *op) {
  return strcmp(op, "ReduceL2") == 0 || strcmp(op, "ReduceLogSum") == 0 ||
         strcmp(op, "ReduceLogSumExp") == 0;
}

typedef struct reduce_params {
  bool reduce[COV_MAX_RANK];
  bool noop, keepdims, known;
} reduce_params;

static cov_status reduce_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                   reduce_params *p) {
  int64_t keep = 1, noop = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "keepdims", 1, &keep));
  p->keepdims = keep != 0;
  p->known = true;
  p->noop = false;
  int64_t axes[MAX_LIST];
  size_t na = 0;
  if (n->opset >= (strcmp(n->op_type, "ReduceSum") == 0 ? 13 : 18)) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "noop_with_empty_axes", 0, &noop));
    /* Ignoring it would silently reduce every axis. */
    if (graph_attr_find(n, "axes"))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "takes 'axes' as an input from opset %d, not as an attribute",
                              strcmp(n->op_type, "ReduceSum") == 0 ? 13 : 18);
    if (n->n_in > 1 && in[1]) {
      if (!in[1]->data) {
        p->known = false;
        return NULL;
      }
      COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[1], "axes", axes, MAX_LIST, &na));
    }
  } else {
    if (n->n_in > 1)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "takes 'axes' as an attribute before opset %d, not as an input",
                              strcmp(n->op_type, "ReduceSum") == 0 ? 13 : 18);
    const int64_t *a;
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "axes", &a, &na));
    if (na > MAX_LIST) return graph_node_error(g, n, COV_OUT_OF_RANGE, "too many axes");
    if (na) memcpy(axes, a, na * sizeof *a);
  }
  int r = in[0]->rank;
  for (int i = 0; i < COV_MAX_RANK; i++) p->reduce[i] = na == 0 && !noop;
  if (na == 0) {
    p->noop = noop != 0;
    return NULL;
  }
  for (size_t i = 0; i < na; i++) {
    int a;
    COV_RETURN_IF_ERROR(graph_axis(g, n, axes[i], r, "axis", &a));
    if (p->reduce[a]) return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d is given twice", a);
    p->reduce[a] = true;
  }
  return NULL;
}

cov_status graph_infer_reduce(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  if (reduce_float_only(n->op_type)) COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  reduce_params p;
  COV_RETURN_IF_ERROR(reduce_params_of(g, n, in, &p));
  if (!p.known) {
    graph_set_shape(out[0], p.keepdims ? in[0]->rank : -1, NULL);
    return NULL;
  }
  if (p.noop) {
    graph_copy_type(out[0], in[0]);
    return NULL;
  }
  int64_t d[COV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < in[0]->rank; i++) {
    if (!p.reduce[i])
      d[k++] = in[0]->dims[i];
    else if (p.keepdims)
      d[k++] = 1;
  }
  graph_set_shape(out[0], k, d);
  return NULL;
}

cov_status graph_exec_reduce(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  reduce_params p;
  COV_RETURN_IF_ERROR(reduce_params_of(x->g, n, in, &p));
  const graph_value *v = in[0];
  int r = v->rank;
  if (p.noop) {
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
    memcpy(out[0]->data, v->data, (size_t)graph_numel(v) * cov_dtype_size(v->dtype));
    return NULL;
  }
  int perm[COV_MAX_RANK], k = 0;
  int64_t kept = 1, red = 1;
  for (int i = 0; i < r; i++)
    if (!p.reduce[i]) perm[k++] = i, kept *= v->dims[i];
  for (int i = 0; i < r; i++)
    if (p.reduce[i]) perm[k++] = i, red *= v->dims[i];
  bool in_order = true;
  for (int i = 0; i < r; i++) in_order &= perm[i] == i;
  void *tdata = NULL;
  if (!in_order)
    COV_RETURN_IF_ERROR(graph_transpose_data(x->g, n, v->data, v->dtype, r, v->dims, perm, &tdata));
  const char *name = reduce_codelet(n->op_type);
  bool mean = strcmp(name, "global_avgpool") == 0;
  cov_tensor t = {.dtype = v->dtype,
                  .rank = mean ? 4 : 2,
                  .shape = {mean ? 1 : kept, mean ? kept : red, 1, red},
                  .data = tdata ? tdata : v->data},
             y;
  cov_status st = graph_call_codelet(x, n, name, NULL, 0, &t, 1, &y, 1);
  free(tdata);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_reduce(const graph_node *n, const char **names, int max) {
  return graph_lower_single(reduce_codelet(n->op_type), names, max);
}

/* ---- ArgMax, ArgMin ------------------------------------------------------ */

typedef struct arg_params {
  int axis;
  bool keepdims;
  int64_t last;
} arg_params;

static cov_status arg_params_of(const graph *g, const graph_node *n, const graph_value *v,
                                arg_params *p) {
  int64_t axis, keep;
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, v));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "keepdims", 1, &keep));
  p->last = 0;
  if (n->opset >= 12) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "select_last_index", 0, &p->last));
  if (p->last != 0 && p->last != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "select_last_index %lld is not 0 or 1",
                            (long long)p->last);
  p->keepdims = keep != 0;
  if (v->rank < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected >= 1",
                            v->name, v->rank);
  return graph_axis(g, n, axis, v->rank, "axis", &p->axis);
}

cov_status graph_infer_argmax(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  out[0]->dtype = COV_I64;
  if (in[0]->rank < 0) {
    COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  arg_params p;
  COV_RETURN_IF_ERROR(arg_params_of(g, n, in[0], &p));
  if (in[0]->dims[p.axis] == 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d of '%s' is empty", p.axis,
                            in[0]->name);
  int64_t d[COV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < in[0]->rank; i++) {
    if (i != p.axis)
      d[k++] = in[0]->dims[i];
    else if (p.keepdims)
      d[k++] = 1;
  }
  graph_set_shape(out[0], k, d);
  return NULL;
}

/* One call over the [before, axis, after] view: no data moves. */
cov_status graph_exec_argmax(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  arg_params p;
  const graph_value *v = in[0];
  COV_RETURN_IF_ERROR(arg_params_of(x->g, n, v, &p));
  int64_t d[3] = {1, v->dims[p.axis], 1};
  for (int i = 0; i < v->rank; i++)
    if (i != p.axis) d[i < p.axis ? 0 : 2] *= v->dims[i];
  graph_value u = *v;
  if (u.dtype == COV_BOOL) u.dtype = COV_U8;
  cov_tensor t = graph_view_as(&u, 3, d), y;
  cov_attr a = graph_lower_attr_i("last", p.last);
  COV_RETURN_IF_ERROR(graph_call_codelet(
      x, n, strcmp(n->op_type, "ArgMin") == 0 ? "argmin" : "argmax", &a, 1, &t, 1, &y, 1));
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_argmax(const graph_node *n, const char **names, int max) {
  return graph_lower_single(strcmp(n->op_type, "ArgMin") == 0 ? "argmin" : "argmax", names, max);
}

/* ---- CumSum --------------------------------------------------------------- */

static cov_status cumsum_axis(const graph *g, const graph_node *n, graph_value *const *in, int *ax,
                              bool *known) {
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  if (in[1]->dtype != COV_I64 && in[1]->dtype != COV_I32)
    return graph_node_error(g, n, COV_INVALID_INPUT, "axis '%s' must be int32 or int64",
                            in[1]->name);
  if (in[1]->rank > 1 || (in[1]->rank == 1 && in[1]->dims[0] != 1))
    return graph_node_error(g, n, COV_INVALID_INPUT, "axis '%s' must be a scalar", in[1]->name);
  *known = in[1]->data != NULL && in[0]->rank >= 0;
  if (!*known) return NULL;
  if (in[0]->rank < 1) return graph_node_error(g, n, COV_INVALID_INPUT, "input is a scalar");
  int64_t a =
      in[1]->dtype == COV_I64 ? *(const int64_t *)in[1]->data : *(const int32_t *)in[1]->data;
  return graph_axis(g, n, a, in[0]->rank, "axis", ax);
}

cov_status graph_infer_cumsum(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  int ax;
  bool known;
  COV_RETURN_IF_ERROR(cumsum_axis(g, n, in, &ax, &known));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_cumsum(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int ax;
  bool known = false; /* set on success (gcc -O3 cannot see it) */
  COV_RETURN_IF_ERROR(cumsum_axis(x->g, n, in, &ax, &known));
  if (!known) return graph_node_error(x->g, n, COV_INVALID_INPUT, "the axis is not known");
  int64_t excl, rev;
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "exclusive", 0, &excl));
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "reverse", 0, &rev));
  const graph_value *v = in[0];
  int64_t d[3] = {1, v->dims[ax], 1};
  for (int i = 0; i < v->rank; i++)
    if (i != ax) d[i < ax ? 0 : 2] *= v->dims[i];
  cov_tensor t = graph_view_as(v, 3, d), y;
  cov_attr a[2] = {graph_lower_attr_i("exclusive", excl), graph_lower_attr_i("reverse", rev)};
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "cumsum", a, 2, &t, 1, &y, 1));
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_cumsum(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("cumsum", names, max);
}
