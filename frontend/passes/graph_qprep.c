/* frontend/passes/graph_qprep.c: quantized operators prepared at compile time into
 * integer layers whose every operand is a model value or a constant.
 *
 * graph_quant.c lowers QLinearConv, QLinearMatMul and QGemm at run time,
 * deriving their shifted weights, zero-point biases, multipliers and
 * padded/shifted inputs inside the node. A backend that compiles a layer
 * group as one program (npu-sim: the mapper's epilogue) can only take
 * operands that are model values or constants, so this pass derives them
 * once, after inference, as constants of two internal operators:
 *
 *   IntegerConv   (x i8, w' i8, bias i32 [K] or [K, P, Q], m f32 [K],
 *                  zp f32 [K], y_zp)   conv2d_acc -> bias_add(_chw) -> requant_*
 *   IntegerMatMul (a i8 [M, K], b' i8 [K, N], bias i32 [N], m f32 [N],
 *                  zp f32 [N], y_zp)   matmul_acc -> bias_add_2d -> requant_2d_*
 *
 * (y_zp only carries the output dtype; bias, m and zp may be absent.) The
 * arithmetic is graph_quant.c's, term for term: w' = w - wz, bias = B -
 * xz * sum w', m = (x_scale * w_scale) / y_scale in f32. One difference:
 * convolution padding. graph_quant.c pads x with its zero point xz (the
 * padded taps then add (xz - xz) w' = 0); here x is read unpadded (an
 * array's loads pad with 0) and the taps that fall in the padding are left
 * out of the zero point's share instead: bias[k, p, q] = B[k] - xz *
 * (sum of w'[k] over the taps inside the image at (p, q)). Both are the
 * same i32 sums.
 *
 * u8 activations first move to i8 (x - 128 with zero point zp - 128): an
 * int8 array multiplies i8, and every operator reading them here is
 * invariant under that shift (QLinearConv/MatMul/QGemm and
 * DequantizeLinear see x - zp; MaxPool and layout move values;
 * QuantizeLinear's saturate(r + zp) - 128 = saturate_i8(r + zp - 128)), so
 * results stay bit-exact. The rewrite is all or nothing: when a u8 value
 * reaches a graph output or another operator, nothing changes. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"

static bool is_op(const graph_node *n, const char *op) { return strcmp(n->op_type, op) == 0; }
static bool is_const(const graph_value *v) { return v && v->data && graph_numel(v) >= 0; }
static const graph_value *in_at(const graph_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }
static double elem(const graph_value *v, int64_t i) {
  return graph_load_elem(v->data, v->dtype, graph_numel(v) == 1 ? 0 : (size_t)i);
}

static cov_status oom(const graph *g, const graph_node *n) {
  return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory preparing an integer layer");
}

/* A new constant of dtype t and shape dims. */
static graph_value *new_const(graph *g, const graph_node *n, const char *what, cov_dtype t,
                              int rank, const int64_t *dims) {
  graph_value *v = graph_add_value(g, cov_arena_printf(g->arena, "%s/%s", n->name, what));
  if (!v) return NULL;
  v->kind = GV_CONSTANT;
  v->dtype = t;
  graph_set_shape(v, rank, dims);
  int64_t numel = graph_numel(v);
  v->data = cov_arena_alloc(g->arena, (size_t)(numel ? numel : 1) * cov_dtype_size(t));
  if (v->data) memset(v->data, 0, (size_t)(numel ? numel : 1) * cov_dtype_size(t));
  return v->data ? v : NULL;
}

/* ---- u8 activations to i8 -------------------------------------------- */

/* Where a node reads an activation and where that activation's zero point
 * is (-1: the slot does not take a quantized activation). */
static int zp_slot_of_input(const graph_node *n, int j) {
  if (is_op(n, "QLinearConv") || is_op(n, "DequantizeLinear")) return j == 0 ? 2 : -1;
  if (is_op(n, "QLinearMatMul") || is_op(n, "QGemm")) return j == 0 ? 2 : j == 3 ? 5 : -1;
  return -1;
}
static int zp_slot_of_output(const graph_node *n) {
  if (is_op(n, "QuantizeLinear")) return 2;
  if (is_op(n, "QLinearConv") || is_op(n, "QLinearMatMul")) return 7;
  if (is_op(n, "QGemm")) return 8;
  return -1;
}
static bool moves_values(const graph_node *n) {
  static const char *const ops[] = {"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
                                    "Unsqueeze"};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
    if (is_op(n, ops[k])) return n->n_out == 1; /* not MaxPool's Indices */
  return false;
}

/* n's zero point at slot s replaced by an i8 one, zp - 128 (-128 when absent). */
static cov_status shift_zp(graph *g, graph_node *n, int s) {
  const graph_value *zp = in_at(n, s);
  if (zp && (!is_const(zp) || zp->dtype != COV_U8))
    return graph_node_error(g, n, COV_INTERNAL, "zero point of a u8 activation is not a u8 constant");
  int64_t one = 1;
  graph_value *nz = zp ? new_const(g, n, "zp_i8", COV_I8, zp->rank, zp->dims)
                       : new_const(g, n, "zp_i8", COV_I8, 0, &one);
  if (!nz) return oom(g, n);
  for (int64_t i = 0; i < graph_numel(nz); i++)
    ((int8_t *)nz->data)[i] = (int8_t)((zp ? (int64_t)elem(zp, i) : 0) - 128);
  if (s >= n->n_in) {
    graph_value **in = cov_arena_array(g->arena, (size_t)s + 1, sizeof *in);
    if (!in) return oom(g, n);
    memcpy(in, n->in, (size_t)n->n_in * sizeof *in);
    for (int j = n->n_in; j <= s; j++) in[j] = NULL;
    n->in = in;
    n->n_in = s + 1;
  }
  n->in[s] = nz;
  return NULL;
}

/* u8[] has a flag per value that existed when it was made; shift_zp adds
 * values (the shifted zero points, constants: never u8 activations). */
static bool u8_at(const bool *u8, size_t nv, const graph_value *v) {
  return v && (size_t)v->id < nv && u8[v->id];
}

static cov_status to_i8_domain(graph *g) {
  size_t nv = g->n_values ? g->n_values : 1;
  bool *u8 = calloc(nv, sizeof *u8);
  if (!u8) return oom(g, NULL);
  bool any = false, ok = true;
  for (size_t i = 0; i < g->n_nodes; i++) { /* in order: producers first */
    const graph_node *n = g->nodes[i];
    const graph_value *o = n->n_out ? n->out[0] : NULL;
    if (n->dead || !o || o->dtype != COV_U8 || o->kind != GV_ACTIVATION) continue;
    bool src = zp_slot_of_output(n) >= 0 || (moves_values(n) && u8_at(u8, nv, n->in[0]));
    if (src) u8[o->id] = any = true;
  }
  for (size_t i = 0; any && i < g->n_outputs; i++) ok &= !u8_at(u8, nv, g->outputs[i]);
  for (size_t i = 0; any && ok && i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    for (int j = 0; !n->dead && j < n->n_in; j++)
      if (u8_at(u8, nv, n->in[j]) && zp_slot_of_input(n, j) < 0 && !(moves_values(n) && j == 0))
        ok = false;
  }
  cov_status st = NULL;
  for (size_t i = 0; any && ok && i < g->n_nodes && !st; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->n_in && !st; j++)
      if (u8_at(u8, nv, n->in[j]) && zp_slot_of_input(n, j) >= 0)
        st = shift_zp(g, n, zp_slot_of_input(n, j));
    if (!st && n->n_out && u8_at(u8, nv, n->out[0]) && zp_slot_of_output(n) >= 0)
      st = shift_zp(g, n, zp_slot_of_output(n));
  }
  for (size_t v = 0; any && ok && !st && v < g->n_values && v < nv; v++)
    if (u8[v]) g->values[v]->dtype = COV_I8;
  free(u8);
  return st;
}

/* ---- the internal operators -------------------------------------------- */

/* Output dtype: the requantised one (carried by y_zp), else i32. */
static cov_dtype int_out_dtype(const graph_node *n) {
  const graph_value *yz = in_at(n, 5);
  return yz ? yz->dtype : COV_I32;
}

static cov_status infer_int_conv(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  cov_attr a[9];
  int64_t od[4];
  int sp;
  COV_RETURN_IF_ERROR(graph_conv_geometry(g, n, in[0], in[1], a, od, &sp));
  out[0]->dtype = int_out_dtype(n);
  graph_set_shape(out[0], 4, od);
  return NULL;
}

static cov_status infer_int_matmul(const graph *g, const graph_node *n, graph_value *const *in,
                                   graph_value *const *out) {
  if (in[0]->rank != 2 || in[1]->rank != 2 || in[0]->dims[1] != in[1]->dims[0])
    return graph_node_error(g, n, COV_INTERNAL, "integer matmul operands are not [M, K] x [K, N]");
  int64_t d[2] = {in[0]->dims[0], in[1]->dims[1]};
  out[0]->dtype = int_out_dtype(n);
  graph_set_shape(out[0], 2, d);
  return NULL;
}

static const char *requant_name(cov_dtype t, bool nchw) {
  if (nchw) return t == COV_I8 ? "requant_i8" : "requant_u8";
  return t == COV_I8 ? "requant_2d_i8" : "requant_2d_u8";
}

/* y (the product) -> + bias -> requantised, then adopted by out. */
static cov_status finish(graph_exec *x, const graph_node *n, graph_value *const *in, cov_tensor *y,
                         bool nchw, graph_value *out) {
  cov_status st = NULL;
  if (in_at(n, 2)) {
    const char *bn = nchw ? (in[2]->rank == 3 ? "bias_add_chw" : "bias_add") : "bias_add_2d";
    cov_tensor bin[2] = {*y, graph_view(in[2])}, yb;
    st = graph_call_codelet(x, n, bn, NULL, 0, bin, 2, &yb, 1);
    cov_tensor_release(y);
    if (st) return st;
    *y = yb;
  }
  if (in_at(n, 3)) {
    cov_tensor rin[3] = {*y, graph_view(in[3]), graph_view(in[4])}, yr;
    st = graph_call_codelet(x, n, requant_name(int_out_dtype(n), nchw), NULL, 0, rin, 3, &yr, 1);
    cov_tensor_release(y);
    if (st) return st;
    *y = yr;
  }
  return graph_lower_adopt(x, n, y, out);
}

static cov_status exec_int_conv(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  cov_attr a[9];
  int64_t od[4];
  int sp;
  COV_RETURN_IF_ERROR(graph_conv_geometry(x->g, n, in[0], in[1], a, od, &sp));
  cov_tensor cin[2] = {graph_view(in[0]), graph_view(in[1])}, y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "conv2d_acc", a, 9, cin, 2, &y, 1));
  return finish(x, n, in, &y, true, out[0]);
}

static cov_status exec_int_matmul(graph_exec *x, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  cov_tensor cin[2] = {graph_view(in[0]), graph_view(in[1])}, y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "matmul_acc", NULL, 0, cin, 2, &y, 1));
  return finish(x, n, in, &y, false, out[0]);
}

static int codelets_int(const graph_node *n, const char **names, int max, bool conv) {
  int k = 0;
  if (k < max) names[k++] = conv ? "conv2d_acc" : "matmul_acc";
  if (in_at(n, 2) && k < max)
    names[k++] = conv ? (n->in[2]->rank == 3 ? "bias_add_chw" : "bias_add") : "bias_add_2d";
  if (in_at(n, 3) && k < max) names[k++] = requant_name(int_out_dtype(n), conv);
  return k;
}
static int codelets_int_conv(const graph_node *n, const char **names, int max) {
  return codelets_int(n, names, max, true);
}
static int codelets_int_matmul(const graph_node *n, const char **names, int max) {
  return codelets_int(n, names, max, false);
}

static const int k_versions[] = {1, 0};
static const graph_opdef k_int_conv = {"IntegerConv", 2, 6, 1, 1, false, infer_int_conv,
                                       exec_int_conv, codelets_int_conv, k_versions, false};
static const graph_opdef k_int_matmul = {"IntegerMatMul", 2, 6, 1, 1, false, infer_int_matmul,
                                         exec_int_matmul, codelets_int_matmul, k_versions, false};

/* ---- preparing the nodes ------------------------------------------------ */

/* The quantisation parameters of a prepared node. */
typedef struct qparams {
  const graph_value *x, *xz, *w, *wz, *bias; /* x: the activation; w: the constant operand */
  const graph_value *xs, *ws, *ys, *yz;      /* NULL without requantisation */
  float alpha;
} qparams;

static bool params_ok(const qparams *q, int64_t channels) {
  if (!q->x || q->x->dtype != COV_I8 || !is_const(q->w) || (q->xz && (!is_const(q->xz) || graph_numel(q->xz) != 1)))
    return false;
  if (q->wz && (!is_const(q->wz) || (graph_numel(q->wz) != 1 && graph_numel(q->wz) != channels)))
    return false;
  if (q->bias && (!is_const(q->bias) || q->bias->dtype != COV_I32 || graph_numel(q->bias) != channels))
    return false;
  if (!q->ys) return true;
  return is_const(q->xs) && is_const(q->ws) && is_const(q->ys) && is_const(q->yz) &&
         graph_numel(q->xs) == 1 && graph_numel(q->ys) == 1 && graph_numel(q->yz) == 1 &&
         (graph_numel(q->ws) == 1 || graph_numel(q->ws) == channels) &&
         (q->yz->dtype == COV_I8 || q->yz->dtype == COV_U8);
}

/* m and zp (f32, per channel) as graph_quant.c's requantize computes them. */
static cov_status requant_consts(graph *g, graph_node *n, const qparams *q, int64_t C,
                                 graph_value **m, graph_value **z) {
  *m = new_const(g, n, "requant_m", COV_F32, 1, &C);
  *z = new_const(g, n, "requant_zp", COV_F32, 1, &C);
  if (!*m || !*z) return oom(g, n);
  float si = q->alpha * (float)elem(q->xs, 0), so = (float)elem(q->ys, 0);
  for (int64_t c = 0; c < C; c++) {
    float t = si * (float)elem(q->ws, c);
    ((float *)(*m)->data)[c] = t / so;
    ((float *)(*z)->data)[c] = (float)elem(q->yz, 0);
  }
  return NULL;
}

/* Gives n its prepared inputs and the internal operator. */
static cov_status install(graph *g, graph_node *n, const graph_opdef *def, graph_value *x,
                          graph_value *w, graph_value *bias, graph_value *m, graph_value *z,
                          const graph_value *yz) {
  graph_value **in = cov_arena_array(g->arena, 6, sizeof *in);
  if (!in) return oom(g, n);
  in[0] = x;
  in[1] = w;
  in[2] = bias;
  in[3] = m;
  in[4] = z;
  in[5] = (graph_value *)yz;
  n->in = in;
  n->n_in = 6;
  n->def = def;
  n->op_type = def->op_type;
  n->domain = "";
  return NULL;
}

/* w' = w - wz per output channel (row k of `rows` elements); false when a
 * value leaves i8 (graph_quant.c then centres in i32 at run time). */
static bool shifted_weights(const qparams *q, int64_t K, int64_t per, int8_t *out) {
  for (int64_t k = 0; k < K; k++) {
    int64_t wz = q->wz ? (int64_t)elem(q->wz, k) : 0;
    for (int64_t i = 0; i < per; i++) {
      int64_t v = (int64_t)graph_load_elem(q->w->data, q->w->dtype, (size_t)(k * per + i)) - wz;
      if (v < -128 || v > 127) return false;
      out[k * per + i] = (int8_t)v;
    }
  }
  return true;
}

/* bias[k] = B[k] - xz * (sum of w'[k]); with padding and xz != 0, per output
 * position: only the taps inside the image (see the top). */
static cov_status conv_bias(graph *g, graph_node *n, const qparams *q, const int8_t *wp,
                            const cov_attr *a, const int64_t *od, graph_value **bias) {
  int64_t K = q->w->dims[0], CG = q->w->dims[1], R = q->w->dims[2], S = q->w->dims[3];
  int64_t H = q->x->dims[2], W = q->x->dims[3], P = od[2], Q = od[3];
  int64_t xz = q->xz ? (int64_t)elem(q->xz, 0) : 0;
  bool padded = a[2].i || a[3].i || a[4].i || a[5].i;
  *bias = NULL;
  if (xz == 0 && !q->bias) return NULL; /* nothing to add */
  int64_t dims[3] = {K, P, Q};
  graph_value *b = padded && xz ? new_const(g, n, "bias_map", COV_I32, 3, dims)
                                : new_const(g, n, "bias", COV_I32, 1, &K);
  int64_t *tap = malloc((size_t)(R * S) * sizeof *tap);
  if (!b || !tap) {
    free(tap);
    return oom(g, n);
  }
  int32_t *out = b->data;
  for (int64_t k = 0; k < K; k++) {
    int64_t bk = q->bias ? (int64_t)elem(q->bias, k) : 0;
    for (int64_t t = 0; t < R * S; t++) {
      tap[t] = 0;
      for (int64_t c = 0; c < CG; c++) tap[t] += wp[(k * CG + c) * R * S + t];
    }
    for (int64_t p = 0; p < (b->rank == 3 ? P : 1); p++)
      for (int64_t x = 0; x < (b->rank == 3 ? Q : 1); x++) {
        int64_t sum = 0;
        for (int64_t r = 0; r < R; r++)
          for (int64_t s = 0; s < S; s++) {
            int64_t ih = p * a[0].i + r * a[6].i - a[2].i, iw = x * a[1].i + s * a[7].i - a[3].i;
            if (b->rank == 1 || (ih >= 0 && ih < H && iw >= 0 && iw < W)) sum += tap[r * S + s];
          }
        /* i32 wraps, as the array's adder */
        out[(k * (b->rank == 3 ? P : 1) + p) * (b->rank == 3 ? Q : 1) + x] =
            (int32_t)(uint32_t)(uint64_t)(bk - xz * sum);
      }
  }
  free(tap);
  *bias = b;
  return NULL;
}

static cov_status prep_qconv(graph *g, graph_node *n) {
  qparams q = {.alpha = 1.0f};
  if (is_op(n, "QLinearConv")) {
    q = (qparams){n->in[0], n->in[2], n->in[3], n->in[5], in_at(n, 8),
                  n->in[1], n->in[4], n->in[6], in_at(n, 7), 1.0f};
    if (!q.yz) return NULL;
  } else {
    q = (qparams){n->in[0], in_at(n, 2), n->in[1], in_at(n, 3), NULL, NULL, NULL, NULL, NULL, 1.0f};
  }
  const graph_value *y = n->out[0];
  if (!q.x || !q.w || q.x->rank != 4 || q.w->rank != 4 || !graph_shape_known(q.x) ||
      !graph_shape_known(q.w) || !graph_shape_known(y) || y->rank != 4)
    return NULL;
  int64_t K = q.w->dims[0], per = K ? graph_numel(q.w) / K : 0;
  if (K <= 0 || !params_ok(&q, K)) return NULL;
  cov_attr a[9];
  int64_t od[4];
  int sp;
  COV_RETURN_IF_ERROR(graph_conv_geometry(g, n, q.x, q.w, a, od, &sp));
  if (sp != 2) return NULL;
  int8_t *wp = malloc((size_t)(K * per));
  if (!wp) return oom(g, n);
  if (!shifted_weights(&q, K, per, wp)) {
    free(wp);
    return NULL;
  }
  graph_value *w8 = new_const(g, n, "w_i8", COV_I8, 4, q.w->dims), *bias = NULL;
  cov_status st = w8 ? conv_bias(g, n, &q, wp, a, od, &bias) : oom(g, n);
  if (w8) memcpy(w8->data, wp, (size_t)(K * per));
  free(wp);
  COV_RETURN_IF_ERROR(st);
  graph_value *m = NULL, *z = NULL;
  if (q.ys) COV_RETURN_IF_ERROR(requant_consts(g, n, &q, K, &m, &z));
  return install(g, n, &k_int_conv, n->in[0], w8, bias, m, z, q.ys ? q.yz : NULL);
}

static cov_status prep_qmm(graph *g, graph_node *n) {
  bool gemm = is_op(n, "QGemm");
  int64_t ta = 0, tb = 0;
  float alpha = 1.0f;
  qparams q;
  if (is_op(n, "MatMulInteger")) {
    q = (qparams){n->in[0], in_at(n, 2), n->in[1], in_at(n, 3), NULL, NULL, NULL, NULL, NULL, 1.0f};
  } else {
    if (gemm) {
      COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transA", 0, &ta));
      COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transB", 0, &tb));
      COV_RETURN_IF_ERROR(graph_attr_float(g, n, "alpha", 1.0f, &alpha));
    }
    int ys = gemm ? 7 : 6, yz = gemm ? 8 : 7;
    q = (qparams){n->in[0], n->in[2], n->in[3], n->in[5], gemm ? in_at(n, 6) : NULL,
                  n->in[1], n->in[4], in_at(n, ys), in_at(n, yz), alpha};
    if (!q.ys || !q.yz || ta || alpha != 1.0f) return NULL;
  }
  const graph_value *y = n->out[0];
  if (!q.x || !q.w || q.x->rank != 2 || q.w->rank != 2 || !graph_shape_known(q.x) ||
      !graph_shape_known(q.w) || !graph_shape_known(y) || y->rank != 2)
    return NULL;
  int64_t K = q.x->dims[1], N = tb ? q.w->dims[0] : q.w->dims[1];
  if ((tb ? q.w->dims[1] : q.w->dims[0]) != K || N <= 0 || K <= 0 || !params_ok(&q, N)) return NULL;
  int64_t kd[2] = {K, N};
  graph_value *b8 = new_const(g, n, "b_i8", COV_I8, 2, kd);
  if (!b8) return oom(g, n);
  int8_t *bp = b8->data;
  int64_t xz = q.xz ? (int64_t)elem(q.xz, 0) : 0;
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < N; c++) {
      int64_t v = (int64_t)graph_load_elem(q.w->data, q.w->dtype, (size_t)(tb ? c * K + k : k * N + c));
      v -= q.wz ? (int64_t)elem(q.wz, c) : 0;
      if (v < -128 || v > 127) return NULL;
      bp[k * N + c] = (int8_t)v;
    }
  graph_value *bias = NULL;
  if (xz || q.bias) {
    if (!(bias = new_const(g, n, "bias", COV_I32, 1, &N))) return oom(g, n);
    for (int64_t c = 0; c < N; c++) {
      int64_t sum = 0;
      for (int64_t k = 0; k < K; k++) sum += bp[k * N + c];
      int64_t cb = q.bias ? (int64_t)elem(q.bias, c) : 0;
      ((int32_t *)bias->data)[c] = (int32_t)(uint32_t)(uint64_t)(cb - xz * sum);
    }
  }
  graph_value *m = NULL, *z = NULL;
  if (q.ys) COV_RETURN_IF_ERROR(requant_consts(g, n, &q, N, &m, &z));
  return install(g, n, &k_int_matmul, n->in[0], b8, bias, m, z, q.ys ? q.yz : NULL);
}

cov_status graph_prepare_quant(graph *g) {
  COV_RETURN_IF_ERROR(to_i8_domain(g));
  cov_status st = NULL;
  for (size_t i = 0; i < g->n_nodes && !st; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead || n->n_out != 1 || !n->out[0]) continue;
    if (is_op(n, "QLinearConv") || is_op(n, "ConvInteger")) st = prep_qconv(g, n);
    else if (is_op(n, "QLinearMatMul") || is_op(n, "QGemm") || is_op(n, "MatMulInteger"))
      st = prep_qmm(g, n);
  }
  graph_recount(g);
  return st;
}
