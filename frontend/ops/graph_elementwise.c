/* frontend/ops/graph_elementwise.c: the elementwise operators beyond plain
 * arithmetic: unary math and parametric activations (codelets/math.cdl),
 * comparisons, logic, Mod and PRelu (codelets/compare.cdl), Where, and the
 * variadic Sum and Mean.
 *
 * Bool tensors are one byte of 0/1, as u8: comparisons of bools run their
 * codelet on a u8 view (type parameters admit numbers only). Greater and
 * GreaterOrEqual are less / less_equal with the operands swapped. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

/* ---- unary math and parametric activations ----------------------------- */

enum { IN_FLOAT, IN_NUMERIC, IN_BOOL, IN_UNSIGNED };

typedef struct uattr {
  const char *onnx, *codelet; /* attribute names */
  float def;
  bool is_int;
} uattr;

typedef struct uop {
  const char *op, *codelet;
  int in_kind;
  bool out_bool;
  uattr attrs[3];
} uop;

static const uop k_unary[] = {
    {"Acos", "acos", IN_FLOAT, false, {{0}}},
    {"Acosh", "acosh", IN_FLOAT, false, {{0}}},
    {"Asin", "asin", IN_FLOAT, false, {{0}}},
    {"Asinh", "asinh", IN_FLOAT, false, {{0}}},
    {"Atan", "atan", IN_FLOAT, false, {{0}}},
    {"Atanh", "atanh", IN_FLOAT, false, {{0}}},
    {"Ceil", "ceil", IN_FLOAT, false, {{0}}},
    {"Celu", "celu", IN_FLOAT, false, {{"alpha", "alpha", 1.0f, false}}},
    {"Cos", "cos", IN_FLOAT, false, {{0}}},
    {"Cosh", "cosh", IN_FLOAT, false, {{0}}},
    {"Elu", "elu", IN_FLOAT, false, {{"alpha", "alpha", 1.0f, false}}},
    {"Floor", "floor", IN_FLOAT, false, {{0}}},
    {"HardSigmoid",
     "hard_sigmoid",
     IN_FLOAT,
     false,
     {{"alpha", "alpha", 0.2f, false}, {"beta", "beta", 0.5f, false}}},
    {"HardSwish", "hard_swish", IN_FLOAT, false, {{0}}},
    {"IsInf",
     "is_inf",
     IN_FLOAT,
     true,
     {{"detect_positive", "positive", 1, true}, {"detect_negative", "negative", 1, true}}},
    {"IsNaN", "is_nan", IN_FLOAT, true, {{0}}},
    {"Log", "log", IN_FLOAT, false, {{0}}},
    {"Not", "logical_not", IN_BOOL, true, {{0}}},
    {"Reciprocal", "reciprocal", IN_FLOAT, false, {{0}}},
    {"Round", "round", IN_FLOAT, false, {{0}}},
    {"Selu",
     "selu",
     IN_FLOAT,
     false,
     {{"alpha", "alpha", 1.67326319217681884765625f, false},
      {"gamma", "gamma", 1.05070102214813232421875f, false}}},
    {"Shrink",
     "shrink",
     IN_NUMERIC,
     false,
     {{"lambd", "lambd", 0.5f, false}, {"bias", "bias", 0.0f, false}}},
    {"Sign", "sign", IN_NUMERIC, false, {{0}}},
    {"Sin", "sin", IN_FLOAT, false, {{0}}},
    {"Sinh", "sinh", IN_FLOAT, false, {{0}}},
    {"Softplus", "softplus", IN_FLOAT, false, {{0}}},
    {"Softsign", "softsign", IN_FLOAT, false, {{0}}},
    {"Tan", "tan", IN_FLOAT, false, {{0}}},
    {"ThresholdedRelu", "thresholded_relu", IN_FLOAT, false, {{"alpha", "alpha", 1.0f, false}}},
};

static const uop *find_unary(const char *op) {
  for (size_t i = 0; i < sizeof k_unary / sizeof *k_unary; i++)
    if (strcmp(k_unary[i].op, op) == 0) return &k_unary[i];
  return NULL;
}

static cov_status check_kind(const graph *g, const graph_node *n, const graph_value *v, int kind) {
  if (kind == IN_FLOAT) return graph_check_float(g, n, v);
  if (kind == IN_NUMERIC) return graph_check_numeric(g, n, v);
  if (kind == IN_UNSIGNED) {
    if (v->dtype == COV_U8 || v->dtype == COV_U16 || v->dtype == COV_U32 || v->dtype == COV_U64)
      return NULL;
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has dtype %s; %s takes u8, u16, u32 or u64", v->name,
                            cov_dtype_name(v->dtype), n->op_type);
  }
  if (v->dtype != COV_BOOL)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has dtype %s; %s takes bool",
                            v->name, cov_dtype_name(v->dtype), n->op_type);
  return NULL;
}

/* The codelet attributes of u's ONNX attributes (3 at most, plus Shrink's
 * negated lambda). */
static cov_status unary_attrs(const graph *g, const graph_node *n, const uop *u, cov_attr *a,
                              size_t *na) {
  *na = 0;
  for (int i = 0; i < 3 && u->attrs[i].onnx; i++) {
    const uattr *d = &u->attrs[i];
    if (d->is_int) {
      int64_t v;
      COV_RETURN_IF_ERROR(graph_attr_int(g, n, d->onnx, (int64_t)d->def, &v));
      a[(*na)++] = graph_lower_attr_i(d->codelet, v != 0);
    } else {
      float v;
      COV_RETURN_IF_ERROR(graph_attr_float(g, n, d->onnx, d->def, &v));
      a[(*na)++] = graph_lower_attr_f(d->codelet, v);
      if (strcmp(u->op, "Celu") == 0 && !(v != 0))
        return graph_node_error(g, n, COV_INVALID_INPUT, "alpha %g must not be 0 (x / alpha)",
                                (double)v);
      if (strcmp(u->op, "Shrink") == 0 && strcmp(d->onnx, "lambd") == 0) {
        if (v < 0)
          return graph_node_error(g, n, COV_INVALID_INPUT, "lambd %g must not be negative",
                                  (double)v);
        a[(*na)++] = graph_lower_attr_f("nlambd", -(double)v);
      }
    }
  }
  return NULL;
}

cov_status graph_infer_unary_ext(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  const uop *u = find_unary(n->op_type);
  if (!u) return graph_node_error(g, n, COV_INTERNAL, "no unary rule for %s", n->op_type);
  COV_RETURN_IF_ERROR(check_kind(g, n, in[0], u->in_kind));
  cov_attr a[4];
  size_t na;
  COV_RETURN_IF_ERROR(unary_attrs(g, n, u, a, &na));
  graph_copy_type(out[0], in[0]);
  if (u->out_bool) out[0]->dtype = COV_BOOL;
  return NULL;
}

cov_status graph_exec_unary_ext(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  const uop *u = find_unary(n->op_type);
  cov_attr a[4];
  size_t na;
  COV_RETURN_IF_ERROR(unary_attrs(x->g, n, u, a, &na));
  return graph_lower_unary(x, n, u->codelet, a, na, in[0], out[0]);
}

int graph_codelets_unary_ext(const graph_node *n, const char **names, int max) {
  const uop *u = find_unary(n->op_type);
  return u ? graph_lower_single(u->codelet, names, max) : 0;
}

/* ---- comparisons, logic, Mod, PRelu ------------------------------------ */

typedef struct bop {
  const char *op, *codelet;
  int in_kind;
  bool out_bool, swap;
} bop;

static const bop k_binary[] = {
    {"And", "logical_and", IN_BOOL, true, false},
    {"BitShift", "shift_left", IN_UNSIGNED, false, false}, /* or shift_right: direction */
    {"Equal", "equal", -1, true, false}, /* numbers or bool */
    {"Greater", "less", IN_NUMERIC, true, true},
    {"GreaterOrEqual", "less_equal", IN_NUMERIC, true, true},
    {"Less", "less", IN_NUMERIC, true, false},
    {"LessOrEqual", "less_equal", IN_NUMERIC, true, false},
    {"Mod", "mod", IN_NUMERIC, false, false},
    {"Or", "logical_or", IN_BOOL, true, false},
    {"PRelu", "prelu", IN_FLOAT, false, false},
    {"Xor", "logical_xor", IN_BOOL, true, false},
};

static const bop *find_binary(const char *op) {
  for (size_t i = 0; i < sizeof k_binary / sizeof *k_binary; i++)
    if (strcmp(k_binary[i].op, op) == 0) return &k_binary[i];
  return NULL;
}

static cov_status binary_codelet_of(const graph *g, const graph_node *n, const bop *b,
                                    const char **name) {
  *name = b->codelet;
  if (strcmp(b->op, "Mod") == 0) {
    int64_t fmod;
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "fmod", 0, &fmod));
    if (fmod != 0 && fmod != 1)
      return graph_node_error(g, n, COV_INVALID_INPUT, "fmod %lld is not 0 or 1", (long long)fmod);
    if (fmod) *name = "fmod";
  }
  if (strcmp(b->op, "BitShift") == 0) {
    const char *dir;
    if (!graph_attr_find(n, "direction"))
      return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'direction' is required");
    COV_RETURN_IF_ERROR(graph_attr_string(g, n, "direction", "", &dir));
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "direction '%s' is not LEFT or RIGHT", dir);
    if (strcmp(dir, "RIGHT") == 0) *name = "shift_right";
  }
  return NULL;
}

cov_status graph_infer_binary_ext(const graph *g, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  const bop *b = find_binary(n->op_type);
  if (!b) return graph_node_error(g, n, COV_INTERNAL, "no binary rule for %s", n->op_type);
  if (b->in_kind >= 0) COV_RETURN_IF_ERROR(check_kind(g, n, in[0], b->in_kind));
  if (in[0]->dtype == COV_DTYPE_INVALID)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has no dtype", in[0]->name);
  if (in[1]->dtype != in[0]->dtype)
    return graph_node_error(
        g, n, COV_INVALID_INPUT, "inputs '%s' (%s) and '%s' (%s) differ in dtype", in[0]->name,
        cov_dtype_name(in[0]->dtype), in[1]->name, cov_dtype_name(in[1]->dtype));
  const char *name;
  COV_RETURN_IF_ERROR(binary_codelet_of(g, n, b, &name));
  if (strcmp(b->op, "Mod") == 0 && strcmp(name, "mod") == 0 && cov_dtype_is_float(in[0]->dtype))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "Mod of floating-point inputs needs fmod=1 (the ONNX rule)");
  int r;
  int64_t d[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(graph_broadcast(g, n, in[0], in[1], &r, d));
  out[0]->dtype = b->out_bool ? COV_BOOL : in[0]->dtype;
  graph_set_shape(out[0], r, d);
  return NULL;
}

/* bool as u8 (same bytes): the comparison codelets' type parameter admits
 * numbers only. */
static graph_value as_u8(const graph_value *v) {
  graph_value t = *v;
  if (t.dtype == COV_BOOL) t.dtype = COV_U8;
  return t;
}

cov_status graph_exec_binary_ext(graph_exec *x, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  const bop *b = find_binary(n->op_type);
  const char *name;
  COV_RETURN_IF_ERROR(binary_codelet_of(x->g, n, b, &name));
  graph_value a0 = *in[0], a1 = *in[1];
  if (b->in_kind != IN_BOOL) a0 = as_u8(in[0]), a1 = as_u8(in[1]);
  cov_tensor y;
  COV_RETURN_IF_ERROR(graph_lower_binary(x, n, name, b->swap ? &a1 : &a0, b->swap ? &a0 : &a1,
                                   out[0]->rank, out[0]->dims, &y));
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_binary_ext(const graph_node *n, const char **names, int max) {
  const bop *b = find_binary(n->op_type);
  if (!b) return 0;
  const char *name = b->codelet;
  const graph_attr *a = graph_attr_find(n, "fmod");
  if (strcmp(b->op, "Mod") == 0 && a && a->type == GA_INT && a->i) name = "fmod";
  const graph_attr *d = graph_attr_find(n, "direction");
  if (strcmp(b->op, "BitShift") == 0 && d && d->type == GA_STRING && d->s &&
      strcmp(d->s, "RIGHT") == 0)
    name = "shift_right";
  return graph_lower_single(name, names, max);
}

/* ---- Where -------------------------------------------------------------- */

cov_status graph_infer_where(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  COV_RETURN_IF_ERROR(check_kind(g, n, in[0], IN_BOOL));
  if (in[1]->dtype != in[2]->dtype || in[1]->dtype == COV_DTYPE_INVALID)
    return graph_node_error(
        g, n, COV_INVALID_INPUT, "inputs '%s' (%s) and '%s' (%s) differ in dtype", in[1]->name,
        cov_dtype_name(in[1]->dtype), in[2]->name, cov_dtype_name(in[2]->dtype));
  graph_value t = {.name = in[1]->name};
  int r;
  int64_t d[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(graph_broadcast(g, n, in[1], in[2], &r, d));
  graph_set_shape(&t, r, d);
  COV_RETURN_IF_ERROR(graph_broadcast(g, n, in[0], &t, &r, d));
  out[0]->dtype = in[1]->dtype;
  graph_set_shape(out[0], r, d);
  return NULL;
}

/* The operands as rank-8 views broadcasting to the output (axes of extent
 * 1 dropped, neighbours of equal broadcast merged, as graph_lower_binary
 * does for two; at most COV_MAX_RANK groups). */
enum { WHERE_RANK = 8 };
static void where_views(graph_value *const *in, int r, const int64_t *odims, int64_t (*v)[WHERE_RANK]) {
  int64_t g[3][COV_MAX_RANK];
  int kind[3][COV_MAX_RANK], k = 0;
  for (int i = 0; i < r; i++) {
    if (odims[i] == 1) continue;
    int64_t d[3];
    int same = k > 0;
    for (int o = 0; o < 3; o++) {
      int io = i - (r - in[o]->rank);
      d[o] = io >= 0 ? in[o]->dims[io] : 1;
      same = same && kind[o][k - 1] == (d[o] != 1);
    }
    for (int o = 0; o < 3; o++) {
      if (same) g[o][k - 1] *= d[o];
      else g[o][k] = d[o], kind[o][k] = d[o] != 1;
    }
    k += !same;
  }
  for (int o = 0; o < 3; o++)
    for (int i = 0; i < WHERE_RANK; i++) v[o][i] = i < WHERE_RANK - k ? 1 : g[o][i - (WHERE_RANK - k)];
}

/* A Where with a run-time operand that broadcasts: one where_b8 call on
 * the model's values as they are (an expanded copy made inside the node
 * would be no value a layer group can name). */
static cov_status where_broadcast(graph_exec *x, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  _Static_assert(COV_MAX_RANK <= WHERE_RANK, "where_b8 takes every rank");
  int64_t v[3][WHERE_RANK];
  where_views(in, out[0]->rank, out[0]->dims, v);
  cov_tensor t[3], y = {0};
  for (int i = 0; i < 3; i++) {
    graph_value gv = *in[i];
    if (gv.dtype == COV_BOOL && i > 0) gv.dtype = COV_U8;
    t[i] = graph_view_as(&gv, WHERE_RANK, v[i]);
  }
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "where_b8", NULL, 0, t, 3, &y, 1));
  if (y.dtype == COV_U8 && out[0]->dtype == COV_BOOL) y.dtype = COV_BOOL;
  return graph_lower_adopt(x, n, &y, out[0]);
}

/* A run-time operand that broadcasts: where_broadcast. Otherwise each
 * operand expanded to the output's shape (a copy, when its shape
 * differs), then one flat select. An operand expanded from a model
 * constant (a scalar fill value) is a constant of the call
 * (graph_lower_call_const), so a group description keeps it. */
cov_status graph_exec_where(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int64_t l = graph_numel(out[0]);
  int runtime_broadcast = 0;
  for (int i = 0; i < 3; i++)
    runtime_broadcast |= (graph_numel(in[i]) != l || in[i]->rank != out[0]->rank) && !x->g->values[in[i]->id]->data;
  if (runtime_broadcast) return where_broadcast(x, n, in, out);
  void *own[3] = {NULL, NULL, NULL};
  cov_tensor t[3];
  cov_status st = NULL;
  unsigned const_mask = 0;
  for (int i = 0; i < 3 && !st; i++) {
    graph_value v = *in[i];
    if (v.dtype == COV_BOOL && i > 0) v.dtype = COV_U8;
    if (graph_numel(&v) != l || v.rank != out[0]->rank)
      st = graph_expand_to(x->g, n, &v, out[0]->rank, out[0]->dims, &own[i]);
    t[i] = graph_view_as(&v, 1, &l);
    if (own[i]) t[i].data = own[i];
    if (own[i] && x->g->values[in[i]->id]->data) const_mask |= 1u << i;
  }
  cov_tensor y = {0};
  if (!st) st = graph_lower_call_const(x, n, "where", NULL, 0, t, 3, &y, const_mask);
  for (int i = 0; i < 3; i++) free(own[i]);
  COV_RETURN_IF_ERROR(st);
  if (y.dtype == COV_U8 && out[0]->dtype == COV_BOOL) y.dtype = COV_BOOL;
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_where(const graph_node *n, const char **names, int max) {
  (void)n;
  static const char *const l[] = {"where", "where_b8"};
  for (int i = 0; i < 2 && i < max; i++) names[i] = l[i];
  return max < 2 ? max : 2;
}

/* ---- Sum, Mean ---------------------------------------------------------- */

cov_status graph_infer_sum(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  /* Max/Min's rule (same dtype, broadcast shapes); Mean also needs floats */
  if (strcmp(n->op_type, "Mean") == 0) COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  return graph_infer_variadic(g, n, in, out);
}

/* Pairwise adds with broadcasting, then (Mean) a division by the count. */
cov_status graph_exec_sum(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  graph_value acc = *in[0];
  void *owned = NULL;
  for (int i = 1; i < n->n_in; i++) {
    int r;
    int64_t d[COV_MAX_RANK];
    cov_status st = graph_broadcast(x->g, n, &acc, in[i], &r, d);
    cov_tensor y = {0};
    if (!st) st = graph_lower_binary(x, n, "add", &acc, in[i], r, d, &y);
    free(owned);
    COV_RETURN_IF_ERROR(st);
    owned = y.data;
    acc.data = y.data;
    graph_set_shape(&acc, r, d);
  }
  if (strcmp(n->op_type, "Mean") == 0) {
    unsigned char cnt[8];
    graph_store_elem(cnt, acc.dtype, 0, (double)n->n_in);
    graph_value c = {.name = "count", .dtype = acc.dtype, .rank = 0, .data = cnt};
    cov_tensor y = {0};
    cov_status st = graph_lower_binary(x, n, "div", &acc, &c, acc.rank, acc.dims, &y);
    free(owned);
    COV_RETURN_IF_ERROR(st);
    owned = y.data;
  }
  if (!owned) {
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
    memcpy(out[0]->data, in[0]->data, (size_t)graph_numel(out[0]) * cov_dtype_size(out[0]->dtype));
    return NULL;
  }
  out[0]->data = owned;
  return NULL;
}

int graph_codelets_sum(const graph_node *n, const char **names, int max) {
  int k = 0;
  for (int i = 1; i < n->n_in && k < max; i++) names[k++] = "add";
  if (strcmp(n->op_type, "Mean") == 0 && k < max) names[k++] = "div";
  return k;
}
