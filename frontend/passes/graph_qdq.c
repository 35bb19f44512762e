/* frontend/passes/graph_qdq.c: QDQ graphs become integer layers.
 *
 * A QDQ model (onnxruntime's quantize_static, QuantFormat.QDQ) writes each
 * quantized operator in float between DequantizeLinear and QuantizeLinear:
 *     Q(Conv(DQ(x), DQ(w), DQ(b)))   Q(Gemm(DQ(a), DQ(w), DQ(c)))   Q(MatMul(DQ(a), DQ(w)))
 * onnxruntime executes these as QLinearConv / QGemm / QLinearMatMul (its QDQ
 * fusions), i.e. with an i32 accumulator and one requantisation; this pass
 * does the same rewrite, so that they become covenant's integer layers and
 * the results are onnxruntime's bit for bit. Likewise a data-movement or
 * max operator between a DQ and a Q with the same scale and zero point
 * (MaxPool, Flatten, Reshape, Transpose, Squeeze, Unsqueeze) runs on the
 * quantized values directly (exact: dequantisation is monotonic and Q(DQ(v))
 * = v).
 *
 * It runs right after reading, before shape inference, because folding
 * would turn DQ(constant weights) into float constants. Only patterns whose
 * parameters are initializers are rewritten (per-tensor scales and zero
 * points for activations; per-tensor or per-output-channel for weights; the
 * bias an i32 DQ with zero point 0); anything else stays float, computed as
 * the graph states it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/op_table.h"
#include "frontend/graph.h"

static bool is_op(const graph_node *n, const char *op) {
  return n && !n->dead && strcmp(n->op_type, op) == 0 &&
         (!*n->domain || strcmp(n->domain, "ai.onnx") == 0);
}

static const graph_node *producer_op(const graph_value *v, const char *op) {
  return v && is_op(v->producer, op) ? v->producer : NULL;
}

static bool is_const(const graph_value *v) { return v && v->data && graph_numel(v) >= 0; }

static bool is_q8(const graph_value *v) { return v->dtype == COV_I8 || v->dtype == COV_U8; }

/* A DQ/Q node's scale and zero point: constants, per tensor. */
static bool per_tensor_params(const graph_node *q) {
  if (q->n_in < 3 || !is_const(q->in[1]) || !is_const(q->in[2])) return false;
  return graph_numel(q->in[1]) == 1 && graph_numel(q->in[2]) == 1 && q->in[1]->dtype == COV_F32 &&
         is_q8(q->in[2]);
}

/* The one node reading v, if v is read exactly once and is no graph output
 * (cons: each value's last reader, by value id, built once). */
static graph_node *only_consumer(const graph *g, graph_node *const *cons, const graph_value *v) {
  if (v->n_uses != 1) return NULL;
  for (size_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return NULL;
  return cons[v->id];
}

/* Weights DQ: constant quantized data, scale and zero point, per tensor or
 * per slice along `want_axis` of the weights. */
static bool weight_params(const graph *g, const graph_node *dq, int want_axis) {
  if (dq->n_in < 3 || !is_const(dq->in[0]) || !is_const(dq->in[1]) || !is_const(dq->in[2]))
    return false;
  const graph_value *w = dq->in[0], *s = dq->in[1], *z = dq->in[2];
  if (!is_q8(w) || z->dtype != w->dtype || s->dtype != COV_F32) return false;
  if (graph_numel(s) == 1 && graph_numel(z) == 1) return true;
  int64_t axis = 1;
  if (graph_attr_int(g, dq, "axis", 1, &axis)) return false; /* a bad attribute: left as it is */
  if (axis < 0) axis += w->rank;
  return axis == want_axis && s->rank == 1 && z->rank == 1 && s->dims[0] == w->dims[axis] &&
         z->dims[0] == w->dims[axis];
}

/* Bias DQ: constant i32 with zero point 0 (or none); returns the i32 data. */
static graph_value *int_bias(const graph_node *dq) {
  if (!dq || !is_const(dq->in[0]) || dq->in[0]->dtype != COV_I32) return NULL;
  const graph_value *z = dq->n_in > 2 ? dq->in[2] : NULL;
  if (z) {
    if (!is_const(z)) return NULL;
    for (int64_t i = 0; i < graph_numel(z); i++)
      if (graph_load_elem(z->data, z->dtype, (size_t)i) != 0) return NULL;
  }
  return dq->in[0];
}

static bool same_params(const graph_node *a, const graph_node *b) {
  for (int k = 1; k < 3; k++) {
    const graph_value *x = a->in[k], *y = b->in[k];
    if (x == y) continue;
    if (x->dtype != y->dtype || graph_numel(x) != 1 || graph_numel(y) != 1 ||
        memcmp(x->data, y->data, cov_dtype_size(x->dtype)) != 0)
      return false;
  }
  return true;
}

static cov_status oom(const graph *g, const graph_node *n) {
  return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory rewriting a QDQ pattern");
}

/* Turns n (Conv, Gemm or MatMul, between DQs and a Q) into its integer
 * operator; q dies, n takes its output. */
static cov_status rewrite(graph *g, graph_node *n, graph_node *q) {
  const graph_node *dx = producer_op(n->in[0], "DequantizeLinear");
  const graph_node *dw = producer_op(n->in[1], "DequantizeLinear");
  if (!dx || !dw || !dx->in[0] || !per_tensor_params(dx) || !per_tensor_params(q)) return NULL;
  bool conv = strcmp(n->op_type, "Conv") == 0, gemm = strcmp(n->op_type, "Gemm") == 0;
  int64_t ta = 0, tb = 0;
  float beta = 1.0f;
  if (gemm) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transA", 0, &ta));
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transB", 0, &tb));
    COV_RETURN_IF_ERROR(graph_attr_float(g, n, "beta", 1.0f, &beta));
    if (beta != 1.0f) return NULL;
  }
  /* per output channel: Conv's weights along 0, B's columns (1, or 0 when transposed) */
  int axis = conv ? 0 : (tb ? 0 : 1);
  if (!weight_params(g, dw, axis)) return NULL;
  if (!conv && !gemm && dw->in[0]->rank != 2) return NULL;
  graph_value *bias = NULL;
  if (n->n_in > 2 && n->in[2]) {
    bias = int_bias(producer_op(n->in[2], "DequantizeLinear"));
    if (!bias) return NULL;
  }
  graph_value **in = cov_arena_array(g->arena, 9, sizeof *in);
  if (!in) return oom(g, n);
  in[0] = dx->in[0];
  in[1] = dx->in[1];
  in[2] = dx->in[2];
  in[3] = dw->in[0];
  in[4] = dw->in[1];
  in[5] = dw->in[2];
  if (gemm) { /* QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp */
    in[6] = bias;
    in[7] = q->in[1];
    in[8] = q->in[2];
    n->op_type = "QGemm";
    n->domain = "com.microsoft";
  } else {
    in[6] = q->in[1];
    in[7] = q->in[2];
    in[8] = bias;
    n->op_type = conv ? "QLinearConv" : "QLinearMatMul";
  }
  n->n_in = gemm || bias ? 9 : 8;
  n->in = in;
  n->def = graph_opdef_find_domain(n->domain, n->op_type);
  n->out[0] = q->out[0];
  q->dead = true;
  if (!n->def) return graph_node_error(g, n, COV_INTERNAL, "no operator %s", n->op_type);
  return NULL;
}

/* The clamp [lo, hi] of a Relu or a Clip with constant bounds; false for
 * anything else. */
static bool act_bounds(const graph *g, const graph_node *n, double *lo, double *hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (is_op(n, "Relu")) {
    *lo = 0;
    return true;
  }
  if (!is_op(n, "Clip")) return false;
  if (n->opset < 11) {
    float a, b;
    if (graph_attr_float(g, n, "min", -INFINITY, &a) || graph_attr_float(g, n, "max", INFINITY, &b))
      return false; /* a bad attribute: left to the operator to report */
    *lo = a;
    *hi = b;
    return true;
  }
  for (int k = 1; k < 3 && k < n->n_in; k++) {
    const graph_value *v = n->in[k];
    if (!v) continue;
    if (!is_const(v) || graph_numel(v) != 1 || v->dtype != COV_F32) return false;
    *(k == 1 ? lo : hi) = graph_load_elem(v->data, v->dtype, 0);
  }
  return true;
}

/* QuantizeLinear's value of x in f32 as the codelet computes it, unsaturated. */
static double q_of(double x, float s, double zp) {
  if (isinf(x)) return x;
  return common_round_even((double)((float)x / s)) + zp;
}

/* Relu or Clip between an integer-fusable op and its QuantizeLinear is
 * dropped when it cannot change a quantized value: each bound, quantized,
 * lies at or beyond the saturation limit on its side (a Relu before a Q
 * whose zero point is the type's minimum, onnxruntime's ReluQuantFusion; a
 * Clip whose range covers the quantized range). Exact, so results stay
 * bit-exact; the op before the Q then becomes an integer layer. */
static void drop_redundant_activations(graph *g, graph_node *const *cons) {
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *a = g->nodes[i];
    double lo, hi;
    if (a->dead || a->n_out != 1 || !a->out[0] || !a->in[0] || !act_bounds(g, a, &lo, &hi)) continue;
    const graph_node *p = a->in[0]->producer;
    if (!(is_op(p, "Conv") || is_op(p, "Gemm") || is_op(p, "MatMul")) ||
        only_consumer(g, cons, a->in[0]) != a)
      continue;
    graph_node *q = only_consumer(g, cons, a->out[0]);
    if (!is_op(q, "QuantizeLinear") || q->in[0] != a->out[0] || !per_tensor_params(q)) continue;
    float s = (float)graph_load_elem(q->in[1]->data, COV_F32, 0);
    double zp = graph_load_elem(q->in[2]->data, q->in[2]->dtype, 0);
    double qmin = q->in[2]->dtype == COV_I8 ? -128 : 0, qmax = q->in[2]->dtype == COV_I8 ? 127 : 255;
    if (!(s > 0) || !(q_of(lo, s, zp) <= qmin) || !(q_of(hi, s, zp) >= qmax)) continue;
    q->in[0] = a->in[0];
    a->dead = true;
  }
}

cov_status graph_fuse_qdq(graph *g) {
  graph_recount(g);
  {
    graph_node **c0 = calloc(g->n_values ? g->n_values : 1, sizeof *c0);
    if (!c0) return graph_node_error(g, NULL, COV_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < g->n_nodes; i++)
      for (int j = 0; !g->nodes[i]->dead && j < g->nodes[i]->n_in; j++)
        if (g->nodes[i]->in[j]) c0[g->nodes[i]->in[j]->id] = g->nodes[i];
    drop_redundant_activations(g, c0);
    free(c0);
    graph_recount(g);
  }
  /* Rewrites only kill Q nodes and hand their outputs to the operator
   * before them, so each value's reader found here stays right. */
  graph_node **cons = calloc(g->n_values ? g->n_values : 1, sizeof *cons);
  if (!cons) return graph_node_error(g, NULL, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < g->n_nodes; i++)
    for (int j = 0; !g->nodes[i]->dead && j < g->nodes[i]->n_in; j++)
      if (g->nodes[i]->in[j]) cons[g->nodes[i]->in[j]->id] = g->nodes[i];
  cov_status st = NULL;
  static const char *const direct[] = {"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
                                       "Unsqueeze"};
  for (size_t i = 0; i < g->n_nodes && !st; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead || n->n_out < 1 || !n->out[0] || (*n->domain && strcmp(n->domain, "ai.onnx")))
      continue;
    bool compute = is_op(n, "Conv") || is_op(n, "Gemm") || is_op(n, "MatMul");
    bool move = false;
    for (size_t k = 0; k < sizeof direct / sizeof *direct; k++) move |= is_op(n, direct[k]);
    if (!compute && !move) continue;
    if (move && n->n_out > 1) continue; /* MaxPool's Indices */
    graph_node *q = only_consumer(g, cons, n->out[0]);
    if (!q || !is_op(q, "QuantizeLinear") || q->in[0] != n->out[0]) continue;
    if (compute) {
      st = rewrite(g, n, q);
      continue;
    }
    const graph_node *dq = producer_op(n->in[0], "DequantizeLinear");
    if (!dq || !dq->in[0] || !per_tensor_params(dq) || !per_tensor_params(q) ||
        !same_params(dq, q))
      continue;
    n->in[0] = dq->in[0];
    n->out[0] = q->out[0];
    q->dead = true;
  }
  free(cons);
  graph_recount(g);
  return st;
}
