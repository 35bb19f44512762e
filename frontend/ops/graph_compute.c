/* frontend/ops/graph_compute.c: elementwise, activation, normalization and
 * reduction operations, lowered onto the codelets of codelets/README.md.
 *
 * Binary ops: the codelets are rank 4 with per-axis broadcasting, so the
 * output shape is collapsed first (adjacent axes along which both operands
 * broadcast the same way merge into one); only when more than four groups
 * remain are the operands expanded to the full shape (a copy, done here as
 * layout work). Unary ops run on the flattened tensor. Softmax and
 * LayerNormalization run on [rows, normalized] views, with a transpose when
 * Softmax's axis is not the last. Reductions are in graph_reduce.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"


/* ---- shared helpers --------------------------------------------------- */

cov_status graph_check_float(const graph *g, const graph_node *n, const graph_value *v) {
  if (cov_dtype_is_float(v->dtype)) return NULL;
  return graph_node_error(g, n, COV_INVALID_INPUT,
                          "input '%s' has dtype %s; %s takes f32, f16, bf16 or f64", v->name,
                          cov_dtype_name(v->dtype), n->op_type);
}

cov_status graph_check_numeric(const graph *g, const graph_node *n, const graph_value *v) {
  if (v->dtype != COV_BOOL && v->dtype != COV_DTYPE_INVALID) return NULL;
  return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has dtype %s; %s takes numbers",
                          v->name, cov_dtype_name(v->dtype), n->op_type);
}

cov_status graph_lower_adopt(graph_exec *x, const graph_node *n, cov_tensor *y, graph_value *out) {
  int64_t got = cov_tensor_numel(y), want = graph_numel(out);
  if (y->dtype != out->dtype || got != want) {
    char buf[128];
    cov_status st = graph_node_error(
        x->g, n, COV_INTERNAL, "the codelets produced %s with %lld elements, but output '%s' is %s",
        cov_dtype_name(y->dtype), (long long)got, out->name, graph_type_str(out, buf, sizeof buf));
    cov_tensor_release(y);
    return st;
  }
  out->data = y->data;
  y->data = NULL;
  return NULL;
}

cov_status graph_lower_call_const(graph_exec *x, const graph_node *n, const char *name,
                                  const cov_attr *attrs, size_t n_attrs, const cov_tensor *in,
                                  size_t n_in, cov_tensor *out, unsigned const_mask) {
  unsigned saved = x->const_inputs;
  x->const_inputs = const_mask;
  cov_status st = graph_call_codelet(x, n, name, attrs, n_attrs, in, n_in, out, 1);
  x->const_inputs = saved;
  return st;
}

/* A converted copy of v (f32 for the int Pow path, param dtypes for BN). */
cov_status graph_lower_cast_copy(const graph *g, const graph_node *n, const graph_value *v, cov_dtype to,
                            graph_value *tmp) {
  *tmp = *v;
  tmp->dtype = to;
  int64_t numel = graph_numel(v);
  if (numel < 0) return graph_node_error(g, n, COV_INTERNAL, "cast of an unknown shape");
  tmp->data = malloc(numel > 0 ? (size_t)numel * cov_dtype_size(to) : 1);
  if (!tmp->data) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0; i < numel; i++)
    graph_store_elem(tmp->data, to, (size_t)i, graph_load_elem(v->data, v->dtype, (size_t)i));
  return NULL;
}

int graph_lower_single(const char *name, const char **names, int max) {
  if (max < 1) return 0;
  names[0] = name;
  return 1;
}

/* ---- binary elementwise ----------------------------------------------- */

static const char *binary_codelet(const char *op) {
  static const char *const map[][2] = {{"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"},
                                       {"Div", "div"}, {"Pow", "pow"}, {"Max", "max"},
                                       {"Min", "min"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (strcmp(map[i][0], op) == 0) return map[i][1];
  return NULL;
}

/* y = codelet(a, b) broadcast to odims (which the caller inferred). */
cov_status graph_lower_binary(graph_exec *x, const graph_node *n, const char *codelet,
                             const graph_value *a, const graph_value *b, int r,
                             const int64_t *odims, cov_tensor *y) {
  int64_t ga[COV_MAX_RANK], gb[COV_MAX_RANK];
  int kind_a[COV_MAX_RANK], kind_b[COV_MAX_RANK], k = 0;
  for (int i = 0; i < r; i++) {
    if (odims[i] == 1) continue;
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    int ka = da != 1, kb = db != 1;
    if (k > 0 && kind_a[k - 1] == ka && kind_b[k - 1] == kb) {
      ga[k - 1] *= da;
      gb[k - 1] *= db;
    } else {
      ga[k] = da;
      gb[k] = db;
      kind_a[k] = ka;
      kind_b[k] = kb;
      k++;
    }
  }
  int64_t a4[4] = {1, 1, 1, 1}, b4[4] = {1, 1, 1, 1};
  void *ea = NULL, *eb = NULL;
  if (k <= 4) {
    for (int i = 0; i < k; i++) {
      a4[4 - k + i] = ga[i];
      b4[4 - k + i] = gb[i];
    }
  } else {
    /* Too many alternating broadcast groups for a rank-4 codelet. */
    COV_RETURN_IF_ERROR(graph_expand_to(x->g, n, a, r, odims, &ea));
    cov_status st = graph_expand_to(x->g, n, b, r, odims, &eb);
    if (st) {
      free(ea);
      return st;
    }
    int64_t total = 1;
    for (int i = 0; i < r; i++) total *= odims[i];
    a4[3] = b4[3] = total;
  }
  cov_tensor t[2] = {graph_view_as(a, 4, a4), graph_view_as(b, 4, b4)};
  if (ea) t[0].data = ea;
  if (eb) t[1].data = eb;
  cov_status st = graph_call_codelet(x, n, codelet, NULL, 0, t, 2, y, 1);
  free(ea);
  free(eb);
  return st;
}

cov_status graph_infer_binary(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  if (in[1]->dtype != in[0]->dtype)
    return graph_node_error(
        g, n, COV_INVALID_INPUT, "inputs '%s' (%s) and '%s' (%s) differ in dtype", in[0]->name,
        cov_dtype_name(in[0]->dtype), in[1]->name, cov_dtype_name(in[1]->dtype));
  int r;
  int64_t d[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(graph_broadcast(g, n, in[0], in[1], &r, d));
  out[0]->dtype = in[0]->dtype;
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_binary(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  cov_tensor y;
  COV_RETURN_IF_ERROR(
      graph_lower_binary(x, n, binary_codelet(n->op_type), in[0], in[1], out[0]->rank, out[0]->dims, &y));
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_binary(const graph_node *n, const char **names, int max) {
  return graph_lower_single(binary_codelet(n->op_type), names, max);
}

/* Pow: from opset 12 the exponent may have another dtype than the base. A
 * float base takes the exponent converted to its dtype; an integer base is
 * computed in f32 and converted back, as onnx's reference does (numpy
 * computes in floating point and casts). */
cov_status graph_infer_pow(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[1]));
  if (n->opset < 12 && in[1]->dtype != in[0]->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "base and exponent must have the same dtype before opset 12");
  int r;
  int64_t d[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(graph_broadcast(g, n, in[0], in[1], &r, d));
  out[0]->dtype = in[0]->dtype;
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_pow(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  cov_dtype work = cov_dtype_is_float(in[0]->dtype) ? in[0]->dtype : COV_F32;
  graph_value base = *in[0], expo = *in[1];
  graph_value tb = {0}, te = {0};
  cov_status st = NULL;
  if (base.dtype != work) {
    st = graph_lower_cast_copy(x->g, n, in[0], work, &tb);
    base = tb;
  }
  if (!st && expo.dtype != work) {
    st = graph_lower_cast_copy(x->g, n, in[1], work, &te);
    expo = te;
  }
  cov_tensor y = {0};
  if (!st) st = graph_lower_binary(x, n, "pow", &base, &expo, out[0]->rank, out[0]->dims, &y);
  free(tb.data);
  free(te.data);
  COV_RETURN_IF_ERROR(st);
  if (work != out[0]->dtype) {
    graph_value yv = {.name = out[0]->name, .dtype = work, .rank = y.rank, .data = y.data};
    memcpy(yv.dims, y.shape, sizeof y.shape);
    graph_value conv;
    st = graph_lower_cast_copy(x->g, n, &yv, out[0]->dtype, &conv);
    cov_tensor_release(&y);
    COV_RETURN_IF_ERROR(st);
    out[0]->data = conv.data;
    return NULL;
  }
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_pow(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("pow", names, max);
}

/* Max and Min take one or more inputs, reduced pairwise with broadcasting. */
cov_status graph_infer_variadic(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  graph_value acc = *in[0];
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  for (int i = 1; i < n->n_in; i++) {
    if (!in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d is empty", i);
    if (in[i]->dtype != in[0]->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "inputs differ in dtype");
    int r;
    int64_t d[COV_MAX_RANK];
    COV_RETURN_IF_ERROR(graph_broadcast(g, n, &acc, in[i], &r, d));
    graph_set_shape(&acc, r, d);
  }
  graph_copy_type(out[0], &acc);
  return NULL;
}

cov_status graph_exec_variadic(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  if (n->n_in == 1) {
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
    memcpy(out[0]->data, in[0]->data, (size_t)graph_numel(out[0]) * cov_dtype_size(out[0]->dtype));
    return NULL;
  }
  graph_value acc = *in[0];
  void *owned = NULL;
  for (int i = 1; i < n->n_in; i++) {
    int r;
    int64_t d[COV_MAX_RANK];
    cov_status st = graph_broadcast(x->g, n, &acc, in[i], &r, d);
    cov_tensor y = {0};
    if (!st) st = graph_lower_binary(x, n, binary_codelet(n->op_type), &acc, in[i], r, d, &y);
    free(owned);
    COV_RETURN_IF_ERROR(st);
    owned = y.data;
    acc.data = y.data;
    graph_set_shape(&acc, r, d);
  }
  out[0]->data = owned;
  return NULL;
}

int graph_codelets_variadic(const graph_node *n, const char **names, int max) {
  int k = 0;
  for (int i = 1; i < n->n_in && k < max; i++) names[k++] = binary_codelet(n->op_type);
  return k;
}

/* ---- unary elementwise ------------------------------------------------ */

static const char *unary_codelet(const char *op) {
  static const char *const map[][2] = {{"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},
                                       {"Erf", "erf"},   {"Sqrt", "sqrt"},       {"Exp", "exp"},
                                       {"Abs", "abs"},   {"Neg", "neg"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (strcmp(map[i][0], op) == 0) return map[i][1];
  return NULL;
}

static bool float_only(const char *op) {
  return strcmp(op, "Relu") != 0 && strcmp(op, "Abs") != 0 && strcmp(op, "Neg") != 0;
}

/* y = codelet(x) on the flattened tensor. */
cov_status graph_lower_unary(graph_exec *x, const graph_node *n, const char *codelet,
                            const cov_attr *attrs, size_t na, const graph_value *v,
                            graph_value *out) {
  int64_t l = graph_numel(v);
  cov_tensor t = graph_view_as(v, 1, &l), y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, codelet, attrs, na, &t, 1, &y, 1));
  return graph_lower_adopt(x, n, &y, out);
}

cov_status graph_infer_unary(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  if (float_only(n->op_type))
    COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  else
    COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_unary(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  return graph_lower_unary(x, n, unary_codelet(n->op_type), NULL, 0, in[0], out[0]);
}

int graph_codelets_unary(const graph_node *n, const char **names, int max) {
  return graph_lower_single(unary_codelet(n->op_type), names, max);
}

/* Clip: min/max attributes before opset 11, optional scalar inputs after. */
static cov_status clip_bounds(const graph *g, const graph_node *n, graph_value *const *in,
                              double *lo, double *hi, bool *known) {
  *lo = -INFINITY;
  *hi = INFINITY;
  *known = true;
  if (n->opset < 11) {
    float f;
    if (graph_attr_find(n, "min")) {
      COV_RETURN_IF_ERROR(graph_attr_float(g, n, "min", 0, &f));
      *lo = f;
    }
    if (graph_attr_find(n, "max")) {
      COV_RETURN_IF_ERROR(graph_attr_float(g, n, "max", 0, &f));
      *hi = f;
    }
    return NULL;
  }
  for (int i = 1; i < n->n_in && i < 3; i++) {
    if (!in[i]) continue;
    if (in[i]->dtype != in[0]->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must have the input's dtype %s",
                              i == 1 ? "min" : "max", in[i]->name, cov_dtype_name(in[0]->dtype));
    if (in[i]->rank > 1 || (in[i]->rank == 1 && in[i]->dims[0] > 1))
      return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be a scalar",
                              i == 1 ? "min" : "max", in[i]->name);
    if (!in[i]->data) {
      *known = false;
      continue;
    }
    if (graph_numel(in[i]) == 1) /* an empty tensor means "no bound" */
      COV_RETURN_IF_ERROR(graph_read_scalar(g, n, in[i], i == 1 ? "min" : "max", i == 1 ? lo : hi));
  }
  return NULL;
}

cov_status graph_infer_clip(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  double lo, hi;
  bool known;
  COV_RETURN_IF_ERROR(clip_bounds(g, n, in, &lo, &hi, &known));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_clip(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  double lo, hi;
  bool known;
  COV_RETURN_IF_ERROR(clip_bounds(x->g, n, in, &lo, &hi, &known));
  cov_attr a[2] = {graph_lower_attr_f("lo", lo), graph_lower_attr_f("hi", hi)};
  return graph_lower_unary(x, n, "clip", a, 2, in[0], out[0]);
}

int graph_codelets_clip(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("clip", names, max);
}

cov_status graph_infer_leaky_relu(const graph *g, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  float alpha;
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "alpha", 0.01f, &alpha));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_leaky_relu(graph_exec *x, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  float alpha;
  COV_RETURN_IF_ERROR(graph_attr_float(x->g, n, "alpha", 0.01f, &alpha));
  cov_attr a = graph_lower_attr_f("alpha", alpha);
  return graph_lower_unary(x, n, "leaky_relu", &a, 1, in[0], out[0]);
}

int graph_codelets_leaky_relu(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("leaky_relu", names, max);
}

static cov_status gelu_codelet(const graph *g, const graph_node *n, const char **name) {
  const char *approx;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "approximate", "none", &approx));
  if (strcmp(approx, "none") == 0)
    *name = "gelu";
  else if (strcmp(approx, "tanh") == 0)
    *name = "gelu_tanh";
  else
    return graph_node_error(g, n, COV_INVALID_INPUT, "approximate '%s' is not 'none' or 'tanh'",
                            approx);
  return NULL;
}

cov_status graph_infer_gelu(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  const char *name;
  if (n->opset < 20)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "Gelu is an opset 20 operator (the model has %d)", n->opset);
  COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  COV_RETURN_IF_ERROR(gelu_codelet(g, n, &name));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_gelu(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  const char *name = NULL; /* set on success (gcc -O3 cannot see it) */
  COV_RETURN_IF_ERROR(gelu_codelet(x->g, n, &name));
  return graph_lower_unary(x, n, name, NULL, 0, in[0], out[0]);
}

int graph_codelets_gelu(const graph_node *n, const char **names, int max) {
  const graph_attr *a = graph_attr_find(n, "approximate");
  return graph_lower_single(
      a && a->type == GA_STRING && a->s && strcmp(a->s, "tanh") == 0 ? "gelu_tanh" : "gelu", names,
      max);
}

/* ---- Softmax, LogSoftmax, Hardmax -------------------------------------- */

static const char *softmax_codelet(const char *op) {
  if (strcmp(op, "LogSoftmax") == 0) return "log_softmax";
  if (strcmp(op, "Hardmax") == 0) return "hardmax";
  return "softmax";
}

static cov_status softmax_axis(const graph *g, const graph_node *n, const graph_value *v, int *ax) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", n->opset >= 13 ? -1 : 1, &axis));
  if (v->rank == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "input is a scalar");
  return graph_axis(g, n, axis, v->rank, "axis", ax);
}

cov_status graph_infer_softmax(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  graph_copy_type(out[0], in[0]);
  if (in[0]->rank < 0) return NULL;
  int ax;
  return softmax_axis(g, n, in[0], &ax);
}

cov_status graph_exec_softmax(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  const graph_value *v = in[0];
  int ax, r = v->rank;
  COV_RETURN_IF_ERROR(softmax_axis(x->g, n, v, &ax));
  int64_t rows = 1, cols = 1;
  if (n->opset < 13 || ax == r - 1) {
    /* Before opset 13 Softmax flattens to 2-D at the axis; from 13 it works
     * along one axis, which is the same thing when the axis is last. */
    for (int i = 0; i < r; i++) *(i < ax ? &rows : &cols) *= v->dims[i];
    int64_t d[2] = {rows, cols};
    cov_tensor t = graph_view_as(v, 2, d), y;
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, softmax_codelet(n->op_type), NULL, 0, &t, 1, &y, 1));
    return graph_lower_adopt(x, n, &y, out[0]);
  }
  /* Move the axis last, softmax the rows, move it back. */
  int perm[COV_MAX_RANK], inv[COV_MAX_RANK];
  int64_t td[COV_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    if (i != ax) perm[k++] = i;
  perm[r - 1] = ax;
  for (int i = 0; i < r; i++) {
    inv[perm[i]] = i;
    td[i] = v->dims[perm[i]];
  }
  void *tdata;
  COV_RETURN_IF_ERROR(graph_transpose_data(x->g, n, v->data, v->dtype, r, v->dims, perm, &tdata));
  cols = v->dims[ax];
  rows = graph_numel(v) / (cols ? cols : 1);
  int64_t d[2] = {rows, cols};
  cov_tensor t = {.dtype = v->dtype, .rank = 2, .shape = {rows, cols}, .data = tdata}, y;
  (void)d;
  cov_status st = graph_call_codelet(x, n, softmax_codelet(n->op_type), NULL, 0, &t, 1, &y, 1);
  free(tdata);
  COV_RETURN_IF_ERROR(st);
  st = graph_transpose_data(x->g, n, y.data, y.dtype, r, td, inv, &out[0]->data);
  cov_tensor_release(&y);
  return st;
}

int graph_codelets_softmax(const graph_node *n, const char **names, int max) {
  return graph_lower_single(softmax_codelet(n->op_type), names, max);
}

/* ---- LayerNormalization ----------------------------------------------- */

typedef struct ln_params {
  int axis;
  float eps;
  int64_t rows, cols;
} ln_params;

static cov_status ln_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                               ln_params *p) {
  const graph_value *xv = in[0];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, xv));
  if (n->opset < 17)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "LayerNormalization is an opset 17 operator (the model has %d)",
                            n->opset);
  int64_t axis, stash;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", -1, &axis));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "epsilon", 1e-5f, &p->eps));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "stash_type", 1, &stash));
  if (stash != 1)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "stash_type %lld is not supported (only 1, float)", (long long)stash);
  if (xv->rank < 1) return graph_node_error(g, n, COV_INVALID_INPUT, "input is a scalar");
  COV_RETURN_IF_ERROR(graph_axis(g, n, axis, xv->rank, "axis", &p->axis));
  p->rows = p->cols = 1;
  for (int i = 0; i < xv->rank; i++) {
    int64_t d = xv->dims[i];
    int64_t *t = i < p->axis ? &p->rows : &p->cols;
    *t = (d < 0 || *t < 0) ? -1 : *t * d;
  }
  /* Scale and bias must broadcast to the normalized shape x.shape[axis:]. */
  graph_value norm = {.name = xv->name, .dtype = xv->dtype, .rank = xv->rank - p->axis};
  for (int i = 0; i < norm.rank; i++) norm.dims[i] = xv->dims[p->axis + i];
  for (int i = 1; i < n->n_in && i < 3; i++) {
    const graph_value *s = in[i];
    if (!s) continue;
    if (s->dtype != xv->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' is %s but the input is %s", s->name,
                              cov_dtype_name(s->dtype), cov_dtype_name(xv->dtype));
    int r;
    int64_t d[COV_MAX_RANK];
    COV_RETURN_IF_ERROR(graph_broadcast(g, n, &norm, s, &r, d));
    if (r != norm.rank)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "'%s' has more dims than the normalized axes", s->name);
    for (int k = 0; k < r; k++)
      if (norm.dims[k] >= 0 && d[k] != norm.dims[k])
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "'%s' does not broadcast to the normalized shape", s->name);
  }
  return NULL;
}

cov_status graph_infer_layernorm(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  graph_copy_type(out[0], in[0]);
  if (in[0]->rank < 0) {
    for (int i = 1; i < n->n_out; i++)
      if (out[i]) {
        out[i]->dtype = COV_F32;
        graph_set_shape(out[i], -1, NULL);
      }
    return NULL;
  }
  ln_params p;
  COV_RETURN_IF_ERROR(ln_params_of(g, n, in, &p));
  for (int i = 1; i < n->n_out; i++) {
    if (!out[i]) continue;
    out[i]->dtype = COV_F32;
    int64_t d[COV_MAX_RANK];
    for (int k = 0; k < in[0]->rank; k++) d[k] = k < p.axis ? in[0]->dims[k] : 1;
    graph_set_shape(out[i], in[0]->rank, d);
  }
  return NULL;
}

/* A [cols] operand for the codelet: the tensor itself when it already has
 * cols elements, else broadcast (or, for an absent bias, zeros). */
static cov_status ln_operand(graph_exec *x, const graph_node *n, const graph_value *s,
                             const graph_value *xv, int axis, int64_t cols, cov_tensor *t,
                             void **owned) {
  *owned = NULL;
  if (s && graph_numel(s) == cols) {
    *t = graph_view_as(s, 1, &cols);
    return NULL;
  }
  if (!s) {
    *owned = calloc(cols > 0 ? (size_t)cols : 1, cov_dtype_size(xv->dtype));
    if (!*owned) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  } else {
    COV_RETURN_IF_ERROR(graph_expand_to(x->g, n, s, xv->rank - axis, xv->dims + axis, owned));
  }
  *t = (cov_tensor){.dtype = xv->dtype, .rank = 1, .shape = {cols}, .data = *owned};
  return NULL;
}

/* Mean and 1/sqrt(var + eps) of each row, in f32, through the codelets:
 * global_avgpool (mean), sub, mul, global_avgpool (variance), add, sqrt,
 * div. Only run when the model asks for those outputs. */
static cov_status ln_stats(graph_exec *x, const graph_node *n, const graph_value *xv,
                           const ln_params *p, graph_value *mean_out, graph_value *inv_out) {
  graph_value xf = *xv;
  graph_value cast = {0};
  if (xv->dtype != COV_F32) {
    COV_RETURN_IF_ERROR(graph_lower_cast_copy(x->g, n, xv, COV_F32, &cast));
    xf = cast;
  }
  int64_t rows = p->rows, cols = p->cols;
  cov_tensor mean = {0}, diff = {0}, sq = {0}, var = {0}, ve = {0}, sd = {0}, inv = {0};
  float eps = p->eps, one = 1.0f;
  int64_t pool_in[4] = {1, rows, 1, cols};
  cov_tensor t = graph_view_as(&xf, 4, pool_in);
  cov_status st = graph_call_codelet(x, n, "global_avgpool", NULL, 0, &t, 1, &mean, 1);
  if (!st) {
    cov_tensor a = graph_view_as(&xf, 4, (int64_t[]){1, 1, rows, cols});
    cov_tensor b = mean;
    b.rank = 4;
    b.shape[0] = 1, b.shape[1] = 1, b.shape[2] = rows, b.shape[3] = 1;
    cov_tensor ab[2] = {a, b};
    st = graph_call_codelet(x, n, "sub", NULL, 0, ab, 2, &diff, 1);
  }
  if (!st) {
    cov_tensor dd[2] = {diff, diff};
    st = graph_call_codelet(x, n, "mul", NULL, 0, dd, 2, &sq, 1);
  }
  if (!st) {
    cov_tensor q = sq;
    q.rank = 4;
    q.shape[0] = 1, q.shape[1] = rows, q.shape[2] = 1, q.shape[3] = cols;
    st = graph_call_codelet(x, n, "global_avgpool", NULL, 0, &q, 1, &var, 1);
  }
  if (!st) {
    cov_tensor v = var, e = {.dtype = COV_F32, .rank = 4, .shape = {1, 1, 1, 1}, .data = &eps};
    v.rank = 4;
    v.shape[0] = 1, v.shape[1] = 1, v.shape[2] = 1, v.shape[3] = rows;
    cov_tensor ve2[2] = {v, e};
    st = graph_call_codelet(x, n, "add", NULL, 0, ve2, 2, &ve, 1);
  }
  if (!st) {
    cov_tensor v = ve;
    v.rank = 1;
    v.shape[0] = rows;
    st = graph_call_codelet(x, n, "sqrt", NULL, 0, &v, 1, &sd, 1);
  }
  if (!st && inv_out) {
    cov_tensor o = {.dtype = COV_F32, .rank = 4, .shape = {1, 1, 1, 1}, .data = &one}, s = sd;
    s.rank = 4;
    s.shape[0] = 1, s.shape[1] = 1, s.shape[2] = 1, s.shape[3] = rows;
    cov_tensor os[2] = {o, s};
    st = graph_call_codelet(x, n, "div", NULL, 0, os, 2, &inv, 1);
    if (!st) st = graph_lower_adopt(x, n, &inv, inv_out);
  }
  if (!st && mean_out) st = graph_lower_adopt(x, n, &mean, mean_out);
  free(cast.data);
  cov_tensor_release(&mean);
  cov_tensor_release(&diff);
  cov_tensor_release(&sq);
  cov_tensor_release(&var);
  cov_tensor_release(&ve);
  cov_tensor_release(&sd);
  cov_tensor_release(&inv);
  return st;
}

cov_status graph_exec_layernorm(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  ln_params p;
  COV_RETURN_IF_ERROR(ln_params_of(x->g, n, in, &p));
  const graph_value *xv = in[0];
  cov_tensor ops[3];
  void *own_s = NULL, *own_b = NULL;
  int64_t d[2] = {p.rows, p.cols};
  ops[0] = graph_view_as(xv, 2, d);
  cov_status st = ln_operand(x, n, in[1], xv, p.axis, p.cols, &ops[1], &own_s);
  if (!st) st = ln_operand(x, n, n->n_in > 2 ? in[2] : NULL, xv, p.axis, p.cols, &ops[2], &own_b);
  cov_tensor y = {0};
  cov_attr a = graph_lower_attr_f("epsilon", p.eps);
  if (!st) st = graph_call_codelet(x, n, "layernorm", &a, 1, ops, 3, &y, 1);
  free(own_s);
  free(own_b);
  COV_RETURN_IF_ERROR(st);
  COV_RETURN_IF_ERROR(graph_lower_adopt(x, n, &y, out[0]));
  graph_value *mean = n->n_out > 1 ? out[1] : NULL, *inv = n->n_out > 2 ? out[2] : NULL;
  if (mean || inv) return ln_stats(x, n, xv, &p, mean, inv);
  return NULL;
}

int graph_codelets_layernorm(const graph_node *n, const char **names, int max) {
  static const char *const stats[] = {"global_avgpool", "sub", "mul", "global_avgpool", "add",
                                      "sqrt",           "div"};
  int k = graph_lower_single("layernorm", names, max);
  bool want = (n->n_out > 1 && n->out[1]) || (n->n_out > 2 && n->out[2]);
  for (size_t i = 0; want && i < sizeof stats / sizeof *stats && k < max; i++) {
    if (i == 6 && !(n->n_out > 2 && n->out[2])) break;
    names[k++] = stats[i];
  }
  return k;
}

