/* frontend/ops/graph_quant.c: int8 quantized operators: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, QLinearConv, ConvInteger,
 * QLinearMatMul and MatMulInteger, lowered onto the codelets of
 * codelets/quant.cdl.
 *
 * Integer layers are written so that an int8 array computes them exactly:
 *   sum (x - xz) * (w - wz)  =  sum xs * w'  -  xzs * sum w'
 * where w' = w - wz (per output channel or column) and, for a u8 operand,
 * xs = x - 128 and xzs = xz - 128 (so xs is i8). When every w' fits in
 * i8 and the input's zero point is one number, the multiply-accumulates are
 * i8 x i8 -> i32 (conv2d_acc / matmul_acc) and the zero point's share is a
 * per-channel i32 bias (bias_add / bias_add_2d), added to ONNX's own i32
 * bias. Convolution padding must contribute (xz - xz) * w' = 0, so the
 * input is padded here with xzs before the codelet runs (the codelet's own
 * padding gives 0). Otherwise (a per-row zero point, w' outside i8) both
 * operands are centred in i32 (x - xz, w - wz) and the codelets run on i32:
 * exact, but not an int8 array's work.
 *
 * Requantisation (QLinearConv, QLinearMatMul, QGemm) is a requant_* codelet
 * (by output dtype and rank): y = saturate(round_half_even(f32(acc) * m) +
 * yz) with m = x_scale * w_scale / y_scale computed in f32 in that order,
 * which is what onnxruntime computes (bit-exact with its integer kernels).
 * The nodes graph_qprep.c prepares at load time (constant parameters, i8
 * activations, w' within i8, 2-D) do not come here: they make the same
 * codelet calls with operands derived once.
 *
 * DynamicQuantizeLinear's range is two global max reductions (of x and of
 * -x) through codelets; its scale and zero point are then scalar f32
 * arithmetic as ONNX states it.
 *
 * size: the quantized operators (QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul, QLinearAdd, ...) share their scale and zero-point rules and the integer kernels, which stay beside every operator that applies them
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/op_table.h"
#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

static bool is_q8(cov_dtype t) { return t == COV_I8 || t == COV_U8; }

/* A scale or zero point: per tensor (a scalar or one element) or, when
 * len > 0, per axis (a 1-D tensor of len elements). *per_axis says which. */
static cov_status check_param(const graph *g, const graph_node *n, const graph_value *v,
                              const char *what, int64_t len, const char *axis_word,
                              bool *per_axis) {
  *per_axis = false;
  if (v->rank < 0) return NULL;
  if (v->rank == 0 || (v->rank == 1 && v->dims[0] == 1)) return NULL;
  if (v->rank == 1 && len > 0 && (v->dims[0] == len || v->dims[0] < 0)) {
    *per_axis = true;
    return NULL;
  }
  if (len > 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "%s '%s' has shape %s; expected a scalar or a 1-D tensor of %lld "
                            "elements (%s)",
                            what, v->name, graph_type_str(v, (char[96]){0}, 96), (long long)len,
                            axis_word);
  return graph_node_error(g, n, COV_INVALID_INPUT,
                          "%s '%s' has shape %s; expected a scalar (per-tensor)", what, v->name,
                          graph_type_str(v, (char[96]){0}, 96));
}

static cov_status check_dtype(const graph *g, const graph_node *n, const graph_value *v,
                              const char *what, cov_dtype want) {
  if (v->dtype == want) return NULL;
  return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' is %s; expected %s", what, v->name,
                          cov_dtype_name(v->dtype), cov_dtype_name(want));
}

static cov_status check_q8(const graph *g, const graph_node *n, const graph_value *v,
                           const char *what) {
  if (is_q8(v->dtype)) return NULL;
  return graph_node_error(g, n, COV_UNSUPPORTED,
                          "%s '%s' is %s; covenant's quantized operators take i8 or u8", what,
                          v->name, cov_dtype_name(v->dtype));
}

/* A zero point must have its quantized operand's dtype. */
static cov_status check_zp(const graph *g, const graph_node *n, const graph_value *zp,
                           const graph_value *q) {
  if (!zp || zp->dtype == q->dtype) return NULL;
  return graph_node_error(g, n, COV_INVALID_INPUT,
                          "zero point '%s' is %s but '%s' is %s: a zero point has the dtype of "
                          "the tensor it belongs to",
                          zp->name, cov_dtype_name(zp->dtype), q->name, cov_dtype_name(q->dtype));
}

static const graph_value *opt_in(const graph_node *n, graph_value *const *in, int i) {
  return i < n->n_in ? in[i] : NULL;
}

/* Element k of a per-tensor (k ignored) or per-axis parameter. */
static double param_at(const graph_value *v, int64_t k) {
  return graph_load_elem(v->data, v->dtype, graph_numel(v) == 1 ? 0 : (size_t)k);
}

/* A zeroed tensor (the default zero point, biases). */
static cov_status alloc_zeros(const graph *g, const graph_node *n, cov_dtype t, int rank,
                              const int64_t *dims, cov_tensor *out) {
  cov_status st = cov_tensor_alloc(out, t, rank, dims);
  if (st) {
    cov_status_free(st);
    return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  }
  int64_t numel = cov_tensor_numel(out);
  if (numel > 0) memset(out->data, 0, (size_t)numel * cov_dtype_size(t));
  return NULL;
}

/* ---- QuantizeLinear / DequantizeLinear --------------------------------- */

/* Axis and the [outer, axis, inner] view of x for a scale s. */
static cov_status qdq_view(const graph *g, const graph_node *n, const graph_value *x,
                           const graph_value *s, const graph_value *zp, int64_t view[3]) {
  int64_t block = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "block_size", 0, &block));
  if (block != 0)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "blocked quantization (block_size %lld) is not supported",
                            (long long)block);
  int64_t axis_attr = 1;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 1, &axis_attr));
  bool per_axis = false, zp_axis = false;
  int axis = 0;
  int64_t len = -1;
  if (s->rank == 1 && s->dims[0] != 1) {
    if (n->opset < 13)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "scale '%s' must be a scalar before opset 13 (per-axis scales "
                              "came with opset 13; the model's is %d)",
                              s->name, n->opset);
    if (x->rank < 0) return NULL;
    COV_RETURN_IF_ERROR(graph_axis(g, n, axis_attr, x->rank, "axis", &axis));
    len = x->dims[axis];
  }
  COV_RETURN_IF_ERROR(check_param(g, n, s, "scale", len, "one per element along 'axis'",
                                  &per_axis));
  if (zp) {
    COV_RETURN_IF_ERROR(check_param(g, n, zp, "zero point", len, "one per element along 'axis'",
                                    &zp_axis));
    if (zp_axis != per_axis && zp->rank >= 0 && s->rank >= 0)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "zero point '%s' and scale '%s' must have the same shape", zp->name,
                              s->name);
  }
  view[0] = 1;
  view[1] = 1;
  view[2] = graph_numel(x);
  if (per_axis && x->rank >= 0) {
    for (int i = 0; i < axis; i++) view[0] *= x->dims[i];
    view[1] = x->dims[axis];
    view[2] = 1;
    for (int i = axis + 1; i < x->rank; i++) view[2] *= x->dims[i];
  }
  return NULL;
}

static cov_status quantize_out_dtype(const graph *g, const graph_node *n, const graph_value *zp,
                                     cov_dtype *out) {
  int64_t od = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "output_dtype", 0, &od));
  cov_dtype from_attr = od == 0 ? COV_DTYPE_INVALID : od == 2 ? COV_U8 : od == 3 ? COV_I8 : COV_DTYPE_INVALID;
  if (od != 0 && from_attr == COV_DTYPE_INVALID)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "output_dtype %lld is not supported (covenant quantizes to uint8 (2) "
                            "and int8 (3))",
                            (long long)od);
  if (zp) {
    COV_RETURN_IF_ERROR(check_q8(g, n, zp, "zero point"));
    if (from_attr != COV_DTYPE_INVALID && from_attr != zp->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "output_dtype says %s but the zero point '%s' is %s",
                              cov_dtype_name(from_attr), zp->name, cov_dtype_name(zp->dtype));
    *out = zp->dtype;
  } else {
    *out = from_attr != COV_DTYPE_INVALID ? from_attr : COV_U8;
  }
  return NULL;
}

cov_status graph_infer_quantize_linear(const graph *g, const graph_node *n, graph_value *const *in,
                                       graph_value *const *out) {
  const graph_value *x = in[0], *s = in[1], *zp = opt_in(n, in, 2);
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (x->dtype != COV_F32 && n->opset < 19)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' is %s; QuantizeLinear takes f32 before opset 19", x->name,
                            cov_dtype_name(x->dtype));
  if (s->dtype != x->dtype)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "scale '%s' is %s but the input '%s' is %s; covenant needs them alike",
                            s->name, cov_dtype_name(s->dtype), x->name, cov_dtype_name(x->dtype));
  cov_dtype t = COV_DTYPE_INVALID;
  COV_RETURN_IF_ERROR(quantize_out_dtype(g, n, zp, &t));
  int64_t view[3];
  COV_RETURN_IF_ERROR(qdq_view(g, n, x, s, zp, view));
  out[0]->dtype = t;
  graph_set_shape(out[0], x->rank, x->dims);
  return NULL;
}

/* QuantizeLinear and DequantizeLinear's one call: x viewed [outer, axis,
 * inner], the scale and zero point [axis] (a zero point of dtype zp_dtype,
 * zeros where the node has none) */
static cov_status exec_qdq(graph_exec *x, const graph_node *n, graph_value *const *in, graph_value *out,
                           const char *codelet, cov_dtype zp_dtype) {
  const graph_value *xv = in[0], *s = in[1], *zp = opt_in(n, in, 2);
  int64_t view[3];
  COV_RETURN_IF_ERROR(qdq_view(x->g, n, xv, s, zp, view));
  cov_tensor zt = {0};
  if (zp) zt = graph_view_as(zp, 1, &view[1]);
  else COV_RETURN_IF_ERROR(alloc_zeros(x->g, n, zp_dtype, 1, &view[1], &zt));
  cov_tensor args[3] = {graph_view_as(xv, 3, view), graph_view_as(s, 1, &view[1]), zt}, y;
  cov_status st = graph_call_codelet(x, n, codelet, NULL, 0, args, 3, &y, 1);
  if (!zp) cov_tensor_release(&zt);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out);
}

cov_status graph_exec_quantize_linear(graph_exec *x, const graph_node *n, graph_value *const *in,
                                      graph_value *const *out) {
  cov_dtype t = COV_DTYPE_INVALID;
  COV_RETURN_IF_ERROR(quantize_out_dtype(x->g, n, opt_in(n, in, 2), &t));
  return exec_qdq(x, n, in, out[0], "quantize", t);
}

int graph_codelets_quantize_linear(const graph_node *n, const char **names, int max) {
  (void)n;
  if (max < 1) return 0;
  names[0] = "quantize";
  return 1;
}

cov_status graph_infer_dequantize_linear(const graph *g, const graph_node *n,
                                         graph_value *const *in, graph_value *const *out) {
  const graph_value *x = in[0], *s = in[1], *zp = opt_in(n, in, 2);
  if (!is_q8(x->dtype) && x->dtype != COV_I32)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "input '%s' is %s; covenant dequantizes i8, u8 and i32", x->name,
                            cov_dtype_name(x->dtype));
  COV_RETURN_IF_ERROR(check_zp(g, n, zp, x));
  COV_RETURN_IF_ERROR(graph_check_float(g, n, s));
  if (s->dtype != COV_F32 && n->opset < 19)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "scale '%s' is %s; DequantizeLinear's scale is f32 before opset 19",
                            s->name, cov_dtype_name(s->dtype));
  int64_t view[3];
  COV_RETURN_IF_ERROR(qdq_view(g, n, x, s, zp, view));
  out[0]->dtype = s->dtype;
  graph_set_shape(out[0], x->rank, x->dims);
  return NULL;
}

cov_status graph_exec_dequantize_linear(graph_exec *x, const graph_node *n,
                                        graph_value *const *in, graph_value *const *out) {
  return exec_qdq(x, n, in, out[0], "dequantize", in[0]->dtype);
}

int graph_codelets_dequantize_linear(const graph_node *n, const char **names, int max) {
  (void)n;
  if (max < 1) return 0;
  names[0] = "dequantize";
  return 1;
}

/* ---- DynamicQuantizeLinear --------------------------------------------- */

cov_status graph_infer_dynamic_quantize_linear(const graph *g, const graph_node *n,
                                               graph_value *const *in, graph_value *const *out) {
  const graph_value *x = in[0];
  COV_RETURN_IF_ERROR(check_dtype(g, n, x, "input", COV_F32));
  out[0]->dtype = COV_U8;
  graph_set_shape(out[0], x->rank, x->dims);
  for (int i = 1; i < 3 && i < n->n_out; i++)
    if (out[i]) {
      out[i]->dtype = i == 1 ? COV_F32 : COV_U8;
      graph_set_shape(out[i], 0, NULL);
    }
  return NULL;
}

/* Largest element of a flat f32 tensor of L elements, through global_maxpool. */
static cov_status global_max(graph_exec *x, const graph_node *n, cov_tensor flat, int64_t L,
                             float *out) {
  int64_t d4[4] = {1, 1, 1, L};
  cov_tensor v = flat, y;
  v.rank = 4;
  memcpy(v.shape, d4, sizeof d4);
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "global_maxpool", NULL, 0, &v, 1, &y, 1));
  memcpy(out, y.data, sizeof *out);
  cov_tensor_release(&y);
  return NULL;
}

cov_status graph_exec_dynamic_quantize_linear(graph_exec *x, const graph_node *n,
                                              graph_value *const *in, graph_value *const *out) {
  const graph_value *xv = in[0];
  int64_t L = graph_numel(xv);
  if (L <= 0)
    return graph_node_error(x->g, n, COV_INVALID_INPUT,
                            "input '%s' is empty; its range defines the scale", xv->name);
  cov_tensor flat = graph_view_as(xv, 1, &L), neg;
  float mx, nmn;
  COV_RETURN_IF_ERROR(global_max(x, n, flat, L, &mx));
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "neg", NULL, 0, &flat, 1, &neg, 1));
  cov_status st = global_max(x, n, neg, L, &nmn);
  cov_tensor_release(&neg);
  COV_RETURN_IF_ERROR(st);
  /* ONNX: the range always includes 0; f32 arithmetic as the standard
   * writes it (qmin 0, qmax 255). */
  float lo = -nmn < 0.0f ? -nmn : 0.0f, hi = mx > 0.0f ? mx : 0.0f;
  float scale = (hi - lo) / 255.0f;
  float zpf = 0.0f - lo / scale;
  zpf = zpf < 0.0f ? 0.0f : zpf > 255.0f ? 255.0f : zpf;
  uint8_t zp = (uint8_t)common_round_even(zpf);
  int64_t one = 1, view[3] = {1, 1, L};
  cov_tensor st1, zt1;
  COV_RETURN_IF_ERROR(alloc_zeros(x->g, n, COV_F32, 1, &one, &st1));
  st = alloc_zeros(x->g, n, COV_U8, 1, &one, &zt1);
  if (st) {
    cov_tensor_release(&st1);
    return st;
  }
  memcpy(st1.data, &scale, 4);
  memcpy(zt1.data, &zp, 1);
  cov_tensor args[3] = {graph_view_as(xv, 3, view), st1, zt1}, y;
  st = graph_call_codelet(x, n, "quantize", NULL, 0, args, 3, &y, 1);
  cov_tensor_release(&st1);
  cov_tensor_release(&zt1);
  COV_RETURN_IF_ERROR(st);
  COV_RETURN_IF_ERROR(graph_lower_adopt(x, n, &y, out[0]));
  for (int i = 1; i < 3 && i < n->n_out; i++) {
    if (!out[i]) continue;
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[i]));
    if (i == 1) memcpy(out[i]->data, &scale, 4);
    else memcpy(out[i]->data, &zp, 1);
  }
  return NULL;
}

int graph_codelets_dynamic_quantize_linear(const graph_node *n, const char **names, int max) {
  (void)n;
  const char *k[] = {"global_maxpool", "neg", "global_maxpool", "quantize"};
  int c = 0;
  for (; c < 4 && c < max; c++) names[c] = k[c];
  return c;
}

/* ---- integer convolution (QLinearConv, ConvInteger) ------------------- */

typedef struct qconv_io {
  const graph_value *x, *xz, *w, *wz, *bias;
} qconv_io;

static cov_status qconv_io_of(const graph_node *n, graph_value *const *in, qconv_io *q) {
  memset(q, 0, sizeof *q);
  if (strcmp(n->op_type, "QLinearConv") == 0) {
    q->x = in[0];
    q->xz = in[2];
    q->w = in[3];
    q->wz = in[5];
    q->bias = opt_in(n, in, 8);
  } else {
    q->x = in[0];
    q->w = in[1];
    q->xz = opt_in(n, in, 2);
    q->wz = opt_in(n, in, 3);
  }
  return NULL;
}

/* The requantisation operands of QLinearConv and QLinearMatMul (inputs 1,
 * 4, 6 and 7 of both): f32 scales and an i8/u8 output zero point, each one
 * value per tensor except the second operand's scale, which may also hold
 * n2 values (`per2` says what they are per). */
static cov_status check_qlinear_scales(const graph *g, const graph_node *n, graph_value *const *in,
                                       const char *s1, const char *s2, int64_t n2, const char *per2) {
  const graph_value *as = in[1], *bs = in[4], *ys = in[6], *yz = in[7];
  bool pa;
  COV_RETURN_IF_ERROR(check_dtype(g, n, as, s1, COV_F32));
  COV_RETURN_IF_ERROR(check_dtype(g, n, bs, s2, COV_F32));
  COV_RETURN_IF_ERROR(check_dtype(g, n, ys, "output scale", COV_F32));
  COV_RETURN_IF_ERROR(check_q8(g, n, yz, "output zero point"));
  COV_RETURN_IF_ERROR(check_param(g, n, as, s1, -1, "", &pa));
  COV_RETURN_IF_ERROR(check_param(g, n, bs, s2, n2, per2, &pa));
  COV_RETURN_IF_ERROR(check_param(g, n, ys, "output scale", -1, "", &pa));
  return check_param(g, n, yz, "output zero point", -1, "", &pa);
}

static cov_status qconv_check(const graph *g, const graph_node *n, graph_value *const *in,
                              const qconv_io *q, cov_attr a[9], int64_t od[4], int *sp) {
  COV_RETURN_IF_ERROR(check_q8(g, n, q->x, "input"));
  COV_RETURN_IF_ERROR(check_q8(g, n, q->w, "weights"));
  COV_RETURN_IF_ERROR(check_zp(g, n, q->xz, q->x));
  COV_RETURN_IF_ERROR(check_zp(g, n, q->wz, q->w));
  bool pa;
  int64_t m = q->w->rank >= 1 ? q->w->dims[0] : -1;
  if (q->xz) COV_RETURN_IF_ERROR(check_param(g, n, q->xz, "input zero point", -1, "", &pa));
  if (q->wz)
    COV_RETURN_IF_ERROR(check_param(g, n, q->wz, "weight zero point", m, "one per output channel",
                                    &pa));
  if (strcmp(n->op_type, "QLinearConv") == 0) {
    COV_RETURN_IF_ERROR(
        check_qlinear_scales(g, n, in, "input scale", "weight scale", m, "one per output channel"));
    if (q->bias) {
      COV_RETURN_IF_ERROR(check_dtype(g, n, q->bias, "bias", COV_I32));
      if (q->bias->rank >= 0 &&
          (q->bias->rank != 1 || (m >= 0 && q->bias->dims[0] >= 0 && q->bias->dims[0] != m)))
        return graph_node_error(g, n, COV_INVALID_INPUT, "bias '%s' must be i32[%lld]",
                                q->bias->name, (long long)m);
    }
  }
  if (q->x->rank < 0 || q->w->rank < 0) {
    *sp = -1;
    return NULL;
  }
  return graph_conv_geometry(g, n, q->x, q->w, a, od, sp);
}

cov_status graph_infer_qconv(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  qconv_io q;
  qconv_io_of(n, in, &q);
  cov_attr a[9];
  int64_t od[4];
  int sp;
  COV_RETURN_IF_ERROR(qconv_check(g, n, in, &q, a, od, &sp));
  out[0]->dtype = strcmp(n->op_type, "QLinearConv") == 0 ? in[7]->dtype : COV_I32;
  if (sp < 0) {
    graph_set_shape(out[0], -1, NULL);
  } else if (sp == 1) {
    int64_t d3[3] = {od[0], od[1], od[3]};
    graph_set_shape(out[0], 3, d3);
  } else {
    graph_set_shape(out[0], 4, od);
  }
  return NULL;
}

static void dims4_of(const graph_value *v, int64_t *d) {
  d[0] = v->dims[0];
  d[1] = v->dims[1];
  d[2] = v->rank == 4 ? v->dims[2] : 1;
  d[3] = v->dims[v->rank - 1];
}

/* Scratch tensors of one lowering, released together. */
typedef struct scratch {
  cov_tensor t[8];
  int n;
} scratch;

static cov_status scratch_new(const graph *g, const graph_node *n, scratch *s, cov_dtype dt,
                              int rank, const int64_t *dims, cov_tensor **out) {
  if (s->n >= 8) return graph_node_error(g, n, COV_INTERNAL, "too many scratch tensors");
  COV_RETURN_IF_ERROR(alloc_zeros(g, n, dt, rank, dims, &s->t[s->n]));
  *out = &s->t[s->n++];
  return NULL;
}

static void scratch_free(scratch *s) {
  for (int i = 0; i < s->n; i++) cov_tensor_release(&s->t[i]);
  s->n = 0;
}

static void put_int(void *data, cov_dtype t, size_t i, int64_t v) {
  if (t == COV_I8) ((int8_t *)data)[i] = (int8_t)v;
  else ((int32_t *)data)[i] = (int32_t)v;
}

/* acc = sum (x - xz)(w - wz) [+ bias] as i32 [N, M, P, Q] (see the top). */
static cov_status run_qconv_acc(graph_exec *x, const graph_node *n, const qconv_io *q,
                                cov_attr *a, cov_tensor *acc) {
  const graph *g = x->g;
  int64_t xd[4], wd[4];
  dims4_of(q->x, xd);
  dims4_of(q->w, wd);
  int64_t K = wd[0], crs = wd[1] * wd[2] * wd[3];
  int64_t xz = q->xz ? (int64_t)param_at(q->xz, 0) : 0;
  /* w' = w - wz per output channel; does it fit i8? */
  bool fits = true, wz_zero = true;
  for (int64_t k = 0; k < K; k++) {
    int64_t wz = q->wz ? (int64_t)param_at(q->wz, k) : 0;
    wz_zero &= wz == 0;
    for (int64_t i = 0; i < crs && fits; i++) {
      int64_t v = (int64_t)graph_load_elem(q->w->data, q->w->dtype, (size_t)(k * crs + i)) - wz;
      fits = v >= -128 && v <= 127;
    }
  }
  scratch s = {0};
  cov_tensor *tx = NULL, *tw = NULL, *tb = NULL;
  cov_tensor xin = graph_view_as(q->x, 4, xd), win = graph_view_as(q->w, 4, wd);
  cov_status st = NULL;
  int64_t pt = a[2].i, pl = a[3].i, pb = a[4].i, pr = a[5].i;
  cov_dtype ct = fits ? COV_I8 : COV_I32;
  int64_t shift = fits && q->x->dtype == COV_U8 ? 128 : 0;
  /* fits: pad with the (shifted) zero point here; else centre, pad with 0 */
  int64_t xzs = xz - shift, fill = fits ? xzs : 0, sub = fits ? shift : xz;
  bool copy_x = q->x->dtype != ct || sub != 0 || (fits && (pt || pl || pb || pr));
  if (copy_x) {
    int64_t pd[4] = {xd[0], xd[1], xd[2], xd[3]};
    if (fits) pd[2] += pt + pb, pd[3] += pl + pr;
    st = scratch_new(g, n, &s, ct, 4, pd, &tx);
    int64_t ot = fits ? pt : 0, ol = fits ? pl : 0;
    for (int64_t i = 0; !st && i < pd[0] * pd[1] * pd[2] * pd[3]; i++) put_int(tx->data, ct, (size_t)i, fill);
    for (int64_t nc = 0; !st && nc < xd[0] * xd[1]; nc++)
      for (int64_t h = 0; h < xd[2]; h++)
        for (int64_t w = 0; w < xd[3]; w++) {
          int64_t v = (int64_t)graph_load_elem(q->x->data, q->x->dtype,
                                               (size_t)((nc * xd[2] + h) * xd[3] + w));
          put_int(tx->data, ct, (size_t)((nc * pd[2] + h + ot) * pd[3] + w + ol), v - sub);
        }
    if (!st) {
      xin = *tx;
      if (fits) a[2].i = a[3].i = a[4].i = a[5].i = 0;
    }
  }
  if (!st && (q->w->dtype != ct || !wz_zero)) {
    st = scratch_new(g, n, &s, ct, 4, wd, &tw);
    for (int64_t k = 0; !st && k < K; k++) {
      int64_t wz = q->wz ? (int64_t)param_at(q->wz, k) : 0;
      for (int64_t i = 0; i < crs; i++)
        put_int(tw->data, ct, (size_t)(k * crs + i),
                (int64_t)graph_load_elem(q->w->data, q->w->dtype, (size_t)(k * crs + i)) - wz);
    }
    if (!st) win = *tw;
  }
  /* bias: ONNX's own, minus the input zero point's share when it is not
   * removed from the data (the i8 path) */
  bool need_bias = q->bias != NULL;
  if (!st) st = scratch_new(g, n, &s, COV_I32, 1, &K, &tb);
  for (int64_t k = 0; !st && k < K; k++) {
    int64_t b = q->bias ? (int64_t)graph_load_elem(q->bias->data, COV_I32, (size_t)k) : 0;
    if (fits && xzs != 0) {
      int64_t wz = q->wz ? (int64_t)param_at(q->wz, k) : 0, sum = 0;
      for (int64_t i = 0; i < crs; i++)
        sum += (int64_t)graph_load_elem(q->w->data, q->w->dtype, (size_t)(k * crs + i)) - wz;
      b -= xzs * sum;
      need_bias = true;
    }
    ((int32_t *)tb->data)[k] = (int32_t)(uint32_t)(uint64_t)b; /* i32 wraps, as the array's adder */
  }
  cov_tensor y = {0};
  if (!st) {
    cov_tensor in2[2] = {xin, win};
    st = graph_call_codelet(x, n, "conv2d_acc", a, 9, in2, 2, &y, 1);
  }
  if (!st && need_bias) {
    cov_tensor bin[2] = {y, q->bias && !(fits && xzs != 0) ? graph_view(q->bias) : *tb}, yb;
    st = graph_call_codelet(x, n, "bias_add", NULL, 0, bin, 2, &yb, 1);
    cov_tensor_release(&y);
    y = yb;
  }
  scratch_free(&s);
  if (st) {
    cov_tensor_release(&y);
    return st;
  }
  *acc = y;
  return NULL;
}

/* The requantisation codelet for an output of dtype t and an accumulator
 * of rank 4 (NCHW) or a matrix. */
static const char *requant_codelet(cov_dtype t, bool nchw) {
  if (nchw) return t == COV_I8 ? "requant_i8" : "requant_u8";
  return t == COV_I8 ? "requant_2d_i8" : "requant_2d_u8";
}

/* Requantises acc (NCHW, or viewed [rows, C]) into out: multiplier
 * m[c] = (s_in * s_w[c]) / s_out in f32, zero point zp (passed as f32,
 * exact). */
static cov_status requantize(graph_exec *x, const graph_node *n, cov_tensor *acc, int64_t C,
                             float alpha, const graph_value *s_in, const graph_value *s_w,
                             const graph_value *s_out, const graph_value *zp, graph_value *out) {
  cov_tensor m, z;
  COV_RETURN_IF_ERROR(alloc_zeros(x->g, n, COV_F32, 1, &C, &m));
  cov_status st = alloc_zeros(x->g, n, COV_F32, 1, &C, &z);
  if (st) {
    cov_tensor_release(&m);
    return st;
  }
  float si = alpha * (float)param_at(s_in, 0), so = (float)param_at(s_out, 0);
  float zv = (float)param_at(zp, 0);
  for (int64_t c = 0; c < C; c++) {
    float t = si * (float)param_at(s_w, c);
    ((float *)m.data)[c] = t / so;
    ((float *)z.data)[c] = zv;
  }
  cov_tensor a = *acc;
  bool nchw = a.rank == 4;
  if (!nchw) {
    int64_t numel = cov_tensor_numel(acc);
    a.rank = 2;
    a.shape[0] = C ? numel / C : 0;
    a.shape[1] = C;
  }
  cov_tensor args[3] = {a, m, z}, y;
  st = graph_call_codelet(x, n, requant_codelet(zp->dtype, nchw), NULL, 0, args, 3, &y, 1);
  cov_tensor_release(&m);
  cov_tensor_release(&z);
  COV_RETURN_IF_ERROR(st);
  if (!nchw) { /* back to the accumulator's shape */
    y.rank = acc->rank;
    memcpy(y.shape, acc->shape, sizeof y.shape);
  }
  return graph_lower_adopt(x, n, &y, out);
}

/* The 8-bit dtype a quantized node's output has (u8 when not yet known:
 * ONNX's default zero point type). */
static cov_dtype out_q8(const graph_node *n) {
  return n->n_out > 0 && n->out[0] && n->out[0]->dtype == COV_I8 ? COV_I8 : COV_U8;
}

cov_status graph_exec_qconv(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  qconv_io q;
  qconv_io_of(n, in, &q);
  cov_attr a[9];
  int64_t od[4];
  int sp;
  COV_RETURN_IF_ERROR(qconv_check(x->g, n, in, &q, a, od, &sp));
  cov_tensor acc;
  COV_RETURN_IF_ERROR(run_qconv_acc(x, n, &q, a, &acc));
  if (strcmp(n->op_type, "QLinearConv") != 0) return graph_lower_adopt(x, n, &acc, out[0]);
  /* acc is [N, M, P, Q]: channel axis 1 as requant expects */
  cov_status st = requantize(x, n, &acc, acc.shape[1], 1.0f, in[1], in[4], in[6], in[7], out[0]);
  cov_tensor_release(&acc);
  return st;
}

int graph_codelets_qconv(const graph_node *n, const char **names, int max) {
  int k = 0;
  if (k < max) names[k++] = "conv2d_acc";
  if (k < max) names[k++] = "bias_add";
  if (strcmp(n->op_type, "QLinearConv") == 0 && k < max) names[k++] = requant_codelet(out_q8(n), true);
  return k;
}

/* ---- integer matmul (QLinearMatMul, MatMulInteger) ---------------------- */

typedef struct qmm_io {
  const graph_value *a, *az, *b, *bz;
} qmm_io;

static void qmm_io_of(const graph_node *n, graph_value *const *in, qmm_io *q) {
  if (strcmp(n->op_type, "QLinearMatMul") == 0) {
    q->a = in[0];
    q->az = in[2];
    q->b = in[3];
    q->bz = in[5];
  } else {
    q->a = in[0];
    q->b = in[1];
    q->az = opt_in(n, in, 2);
    q->bz = opt_in(n, in, 3);
  }
}

/* numpy matmul shapes: a [..., M, K] (1-D: [K]), b [..., K, N] (1-D: [K]). */
typedef struct mm_shape {
  int64_t M, K, N, batch;
  int rank; /* of the result */
  int64_t dims[COV_MAX_RANK];
  int brank;
  int64_t bdims[COV_MAX_RANK]; /* broadcast batch dims of the result */
} mm_shape;

static cov_status mm_shape_of(const graph *g, const graph_node *n, const graph_value *a,
                              const graph_value *b, mm_shape *s) {
  memset(s, 0, sizeof *s);
  if (a->rank < 1 || b->rank < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "inputs '%s' and '%s' must have rank >= 1",
                            a->name, b->name);
  s->M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
  s->K = a->dims[a->rank - 1];
  int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
  s->N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
  if (s->K >= 0 && kb >= 0 && s->K != kb)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "'%s' has %lld columns but '%s' has %lld rows", a->name,
                            (long long)s->K, b->name, (long long)kb);
  int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
  s->brank = ba > bb ? ba : bb;
  s->batch = 1;
  for (int i = 0; i < s->brank; i++) {
    int ia = i - (s->brank - ba), ib = i - (s->brank - bb);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da >= 0 && db >= 0 && da != db && da != 1 && db != 1)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "batch dims %lld and %lld of '%s' and '%s' do not broadcast",
                              (long long)da, (long long)db, a->name, b->name);
    s->bdims[i] = da == 1 ? db : db == 1 ? da : (da < 0 ? db : da);
    s->batch = s->batch >= 0 && s->bdims[i] >= 0 ? s->batch * s->bdims[i] : -1;
  }
  s->rank = 0;
  for (int i = 0; i < s->brank; i++) s->dims[s->rank++] = s->bdims[i];
  if (a->rank >= 2) s->dims[s->rank++] = s->M;
  if (b->rank >= 2) s->dims[s->rank++] = s->N;
  return NULL;
}

static cov_status qmm_check(const graph *g, const graph_node *n, graph_value *const *in,
                            const qmm_io *q, mm_shape *s) {
  COV_RETURN_IF_ERROR(check_q8(g, n, q->a, "input A"));
  COV_RETURN_IF_ERROR(check_q8(g, n, q->b, "input B"));
  COV_RETURN_IF_ERROR(check_zp(g, n, q->az, q->a));
  COV_RETURN_IF_ERROR(check_zp(g, n, q->bz, q->b));
  bool pa;
  int64_t M = q->a->rank >= 2 ? q->a->dims[q->a->rank - 2] : 1;
  int64_t N = q->b->rank >= 2 ? q->b->dims[q->b->rank - 1] : 1;
  bool qlinear = strcmp(n->op_type, "QLinearMatMul") == 0;
  if (q->az)
    COV_RETURN_IF_ERROR(check_param(g, n, q->az, "A's zero point", qlinear ? -1 : M,
                                    "one per row of A", &pa));
  if (q->bz)
    COV_RETURN_IF_ERROR(check_param(g, n, q->bz, "B's zero point", N, "one per column of B", &pa));
  if (qlinear) {
    /* per-row scales of A and of the output are refused (onnxruntime
     * refuses them too); B's may be per column */
    COV_RETURN_IF_ERROR(check_qlinear_scales(g, n, in, "A's scale", "B's scale", N, "one per column of B"));
  }
  return mm_shape_of(g, n, q->a, q->b, s);
}

cov_status graph_infer_qmatmul(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  qmm_io q;
  qmm_io_of(n, in, &q);
  out[0]->dtype = strcmp(n->op_type, "QLinearMatMul") == 0 ? in[7]->dtype : COV_I32;
  if (q.a->rank < 0 || q.b->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  mm_shape s;
  COV_RETURN_IF_ERROR(qmm_check(g, n, in, &q, &s));
  graph_set_shape(out[0], s.rank, s.dims);
  return NULL;
}

/* Offset (in matrices) of batch ob of the result in an operand with
 * batch dims od[0..r) broadcast to s->bdims. */
static int64_t batch_offset(const mm_shape *s, const graph_value *v, int64_t ob) {
  int r = v->rank > 2 ? v->rank - 2 : 0;
  int64_t off = 0, stride = 1;
  for (int i = s->brank - 1; i >= 0; i--) {
    int64_t idx = ob % s->bdims[i];
    ob /= s->bdims[i];
    int iv = i - (s->brank - r);
    if (iv < 0) continue;
    int64_t d = v->dims[iv];
    if (d != 1) off += idx * stride;
    stride *= d;
  }
  return off;
}

/* acc = (a - az) @ (b - bz) as i32 [batch * M, N] (see the top). */
static cov_status run_qmm_acc(graph_exec *x, const graph_node *n, const qmm_io *q,
                              const mm_shape *s, const graph_value *colbias, cov_tensor *acc) {
  const graph *g = x->g;
  int64_t M = s->M, K = s->K, N = s->N;
  int64_t na = graph_numel(q->a) / (M * K), nb = graph_numel(q->b) / (K * N);
  bool az_scalar = !q->az || graph_numel(q->az) == 1;
  int64_t az = az_scalar && q->az ? (int64_t)param_at(q->az, 0) : 0;
  bool fits = az_scalar, bz_zero = true;
  for (int64_t i = 0; i < nb * K * N; i++) {
    int64_t bz = q->bz ? (int64_t)param_at(q->bz, i % N) : 0;
    int64_t v = (int64_t)graph_load_elem(q->b->data, q->b->dtype, (size_t)i) - bz;
    bz_zero &= bz == 0;
    if (v < -128 || v > 127) fits = false;
  }
  cov_dtype ct = fits ? COV_I8 : COV_I32;
  int64_t shift = fits && q->a->dtype == COV_U8 ? 128 : 0, azs = az - shift;
  scratch s2 = {0};
  cov_tensor *ta = NULL, *tb = NULL, *tc = NULL;
  cov_status st = NULL;
  const void *adata = q->a->data, *bdata = q->b->data;
  /* a copy of a: shifted into i8 (fits), or centred in i32 */
  if (q->a->dtype != ct || (fits ? shift != 0 : true)) {
    int64_t d1 = na * M * K;
    st = scratch_new(g, n, &s2, ct, 1, &d1, &ta);
    for (int64_t i = 0; !st && i < d1; i++) {
      int64_t rz = fits ? shift : q->az ? (int64_t)param_at(q->az, (i / K) % M) : 0;
      put_int(ta->data, ct, (size_t)i,
              (int64_t)graph_load_elem(q->a->data, q->a->dtype, (size_t)i) - rz);
    }
    if (!st) adata = ta->data;
  }
  if (!st && (q->b->dtype != ct || !bz_zero)) {
    int64_t d1 = nb * K * N;
    st = scratch_new(g, n, &s2, ct, 1, &d1, &tb);
    for (int64_t i = 0; !st && i < d1; i++) {
      int64_t bz = q->bz ? (int64_t)param_at(q->bz, i % N) : 0;
      put_int(tb->data, ct, (size_t)i,
              (int64_t)graph_load_elem(q->b->data, q->b->dtype, (size_t)i) - bz);
    }
    if (!st) bdata = tb->data;
  }
  /* the input zero point's share: -azs * column sums of b', per b matrix */
  /* plus a per-column i32 bias (QGemm's C), when given */
  bool corr = (fits && azs != 0) || colbias;
  if (!st && corr) {
    int64_t d1 = nb * N;
    st = scratch_new(g, n, &s2, COV_I32, 1, &d1, &tc);
    for (int64_t m = 0; !st && m < nb; m++)
      for (int64_t c = 0; c < N; c++) {
        int64_t sum = 0;
        for (int64_t k = 0; fits && k < K; k++) {
          int64_t bz = q->bz ? (int64_t)param_at(q->bz, c) : 0;
          sum += (int64_t)graph_load_elem(q->b->data, q->b->dtype, (size_t)((m * K + k) * N + c)) - bz;
        }
        int64_t cb = colbias ? (int64_t)param_at(colbias, c) : 0;
        ((int32_t *)tc->data)[m * N + c] = (int32_t)(uint32_t)(uint64_t)(cb - (fits ? azs : 0) * sum);
      }
  }
  size_t es = cov_dtype_size(ct);
  /* one call when b is one matrix: a's batches are just more rows */
  int64_t calls = nb == 1 ? 1 : s->batch, rows = nb == 1 ? na * M : M;
  int64_t od[2] = {s->batch * M, N};
  cov_tensor y = {0};
  if (!st && calls > 1) st = alloc_zeros(g, n, COV_I32, 2, od, &y);
  for (int64_t ob = 0; !st && ob < calls; ob++) {
    int64_t ia = calls == 1 ? 0 : batch_offset(s, q->a, ob);
    int64_t ib = calls == 1 ? 0 : batch_offset(s, q->b, ob);
    cov_tensor ta2 = {.dtype = ct, .rank = 2, .shape = {rows, K},
                      .data = (char *)adata + (size_t)(ia * M * K) * es};
    cov_tensor tb2 = {.dtype = ct, .rank = 2, .shape = {K, N},
                      .data = (char *)bdata + (size_t)(ib * K * N) * es};
    if (ta2.data == q->a->data) ta2 = graph_view_as(q->a, 2, ta2.shape);
    if (tb2.data == q->b->data) tb2 = graph_view_as(q->b, 2, tb2.shape);
    cov_tensor in2[2] = {ta2, tb2}, r;
    st = graph_call_codelet(x, n, "matmul_acc", NULL, 0, in2, 2, &r, 1);
    if (!st && corr) {
      cov_tensor cb = {.dtype = COV_I32, .rank = 1, .shape = {N},
                       .data = (int32_t *)tc->data + ib * N};
      cov_tensor bin[2] = {r, cb}, rb;
      st = graph_call_codelet(x, n, "bias_add_2d", NULL, 0, bin, 2, &rb, 1);
      cov_tensor_release(&r);
      r = rb;
    }
    if (st) break;
    if (calls == 1) {
      y = r;
    } else {
      memcpy((int32_t *)y.data + ob * M * N, r.data, (size_t)(M * N) * 4);
      cov_tensor_release(&r);
    }
  }
  scratch_free(&s2);
  if (st) {
    cov_tensor_release(&y);
    return st;
  }
  *acc = y;
  return NULL;
}

cov_status graph_exec_qmatmul(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  qmm_io q;
  qmm_io_of(n, in, &q);
  mm_shape s;
  COV_RETURN_IF_ERROR(qmm_check(x->g, n, in, &q, &s));
  if (s.M * s.K == 0 || s.K * s.N == 0)
    return graph_node_error(x->g, n, COV_UNSUPPORTED, "empty matrices are not supported");
  cov_tensor acc;
  COV_RETURN_IF_ERROR(run_qmm_acc(x, n, &q, &s, NULL, &acc));
  if (strcmp(n->op_type, "QLinearMatMul") != 0) return graph_lower_adopt(x, n, &acc, out[0]);
  /* per column of B: acc [rows, N] viewed [rows, N, 1, 1] */
  cov_status st = requantize(x, n, &acc, s.N, 1.0f, in[1], in[4], in[6], in[7], out[0]);
  cov_tensor_release(&acc);
  return st;
}

int graph_codelets_qmatmul(const graph_node *n, const char **names, int max) {
  int k = 0;
  if (k < max) names[k++] = "matmul_acc";
  if (k < max) names[k++] = "bias_add_2d";
  if (strcmp(n->op_type, "QLinearMatMul") == 0 && k < max)
    names[k++] = requant_codelet(out_q8(n), false);
  return k;
}

/* ---- QGemm (com.microsoft, onnxruntime's quantized Gemm) --------------- */

/* Y = alpha * (A - az)(B - bz) + C, C an i32 bias in the product's scale;
 * requantised with alpha * a_scale * b_scale / y_scale to y_zero_point's
 * type, or, without y_scale, f32: f32(acc) * (alpha * a_scale * b_scale). */

typedef struct qgemm_io {
  qmm_io q;
  const graph_value *as, *bs, *c, *ys, *yz;
  int64_t ta, tb;
  float alpha;
} qgemm_io;

static cov_status qgemm_read(const graph *g, const graph_node *n, graph_value *const *in,
                             qgemm_io *io) {
  io->q.a = in[0];
  io->as = in[1];
  io->q.az = in[2];
  io->q.b = in[3];
  io->bs = in[4];
  io->q.bz = in[5];
  io->c = opt_in(n, in, 6);
  io->ys = opt_in(n, in, 7);
  io->yz = opt_in(n, in, 8);
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transA", 0, &io->ta));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transB", 0, &io->tb));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "alpha", 1.0f, &io->alpha));
  const graph_value *a = io->q.a, *b = io->q.b;
  COV_RETURN_IF_ERROR(check_q8(g, n, a, "input A"));
  COV_RETURN_IF_ERROR(check_q8(g, n, b, "input B"));
  COV_RETURN_IF_ERROR(check_zp(g, n, io->q.az, a));
  COV_RETURN_IF_ERROR(check_zp(g, n, io->q.bz, b));
  if ((a->rank >= 0 && a->rank != 2) || (b->rank >= 0 && b->rank != 2))
    return graph_node_error(g, n, COV_INVALID_INPUT, "A '%s' and B '%s' must be matrices",
                            a->name, b->name);
  if ((io->ys == NULL) != (io->yz == NULL) && io->yz)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "y_zero_point is given without y_scale");
  int64_t N = b->rank == 2 ? b->dims[io->tb ? 0 : 1] : -1;
  bool pa;
  COV_RETURN_IF_ERROR(check_dtype(g, n, io->as, "A's scale", COV_F32));
  COV_RETURN_IF_ERROR(check_dtype(g, n, io->bs, "B's scale", COV_F32));
  COV_RETURN_IF_ERROR(check_param(g, n, io->as, "A's scale", -1, "", &pa));
  COV_RETURN_IF_ERROR(check_param(g, n, io->q.az, "A's zero point", -1, "", &pa));
  COV_RETURN_IF_ERROR(check_param(g, n, io->bs, "B's scale", N, "one per column of the product", &pa));
  COV_RETURN_IF_ERROR(check_param(g, n, io->q.bz, "B's zero point", N, "one per column of the product", &pa));
  if (io->ys) {
    COV_RETURN_IF_ERROR(check_dtype(g, n, io->ys, "output scale", COV_F32));
    COV_RETURN_IF_ERROR(check_param(g, n, io->ys, "output scale", -1, "", &pa));
    if (io->yz) {
      COV_RETURN_IF_ERROR(check_q8(g, n, io->yz, "output zero point"));
      COV_RETURN_IF_ERROR(check_param(g, n, io->yz, "output zero point", -1, "", &pa));
    }
  }
  if (io->c) {
    COV_RETURN_IF_ERROR(check_dtype(g, n, io->c, "C", COV_I32));
    if (io->c->rank >= 0 && !(io->c->rank == 0 || (io->c->rank == 1 && (io->c->dims[0] == N || io->c->dims[0] == 1)) ||
                              (io->c->rank == 2 && io->c->dims[0] == 1 &&
                               (io->c->dims[1] == N || io->c->dims[1] == 1))))
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "C '%s' must be a per-column i32 bias ([N], [1, N] or a scalar); a "
                              "full [M, N] C is not supported",
                              io->c->name);
  }
  return NULL;
}

cov_status graph_infer_qgemm(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  qgemm_io io;
  COV_RETURN_IF_ERROR(qgemm_read(g, n, in, &io));
  out[0]->dtype = io.ys ? (io.yz ? io.yz->dtype : COV_U8) : COV_F32;
  if (io.q.a->rank < 0 || io.q.b->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t M = io.q.a->dims[io.ta ? 1 : 0], K = io.q.a->dims[io.ta ? 0 : 1];
  int64_t KB = io.q.b->dims[io.tb ? 1 : 0], N = io.q.b->dims[io.tb ? 0 : 1];
  if (K >= 0 && KB >= 0 && K != KB)
    return graph_node_error(g, n, COV_INVALID_INPUT, "A has %lld columns but B has %lld rows",
                            (long long)K, (long long)KB);
  int64_t d[2] = {M, N};
  graph_set_shape(out[0], 2, d);
  return NULL;
}

/* A transposed copy of a matrix value (the same dtype), in *tmp. */
static cov_status transposed(const graph *g, const graph_node *n, const graph_value *v,
                             graph_value *tmp) {
  *tmp = *v;
  tmp->dims[0] = v->dims[1];
  tmp->dims[1] = v->dims[0];
  int perm[2] = {1, 0};
  return graph_transpose_data(g, n, v->data, v->dtype, 2, v->dims, perm, &tmp->data);
}

cov_status graph_exec_qgemm(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  qgemm_io io;
  COV_RETURN_IF_ERROR(qgemm_read(x->g, n, in, &io));
  graph_value at, bt;
  bool own_a = false, own_b = false;
  cov_status st = NULL;
  if (io.ta) {
    st = transposed(x->g, n, io.q.a, &at);
    if (!st) io.q.a = &at, own_a = true;
  }
  if (!st && io.tb) {
    st = transposed(x->g, n, io.q.b, &bt);
    if (!st) io.q.b = &bt, own_b = true;
  }
  mm_shape s;
  if (!st) st = mm_shape_of(x->g, n, io.q.a, io.q.b, &s);
  cov_tensor acc = {0};
  if (!st) st = run_qmm_acc(x, n, &io.q, &s, io.c, &acc);
  if (own_a) free(at.data);
  if (own_b) free(bt.data);
  COV_RETURN_IF_ERROR(st);
  if (io.ys) {
    graph_value zp0;
    const graph_value *zp = io.yz;
    uint8_t zero = 0;
    if (!zp) { /* no y_zero_point: u8, zero point 0 */
      memset(&zp0, 0, sizeof zp0);
      zp0.dtype = COV_U8;
      zp0.rank = 0;
      zp0.data = &zero;
      zp = &zp0;
    }
    st = requantize(x, n, &acc, s.N, io.alpha, io.as, io.bs, io.ys, zp, out[0]);
    cov_tensor_release(&acc);
    return st;
  }
  /* f32 output: f32(acc) * (alpha * a_scale * b_scale[n]) through dequantize */
  cov_tensor sc, zt;
  st = alloc_zeros(x->g, n, COV_F32, 1, &s.N, &sc);
  if (!st) st = alloc_zeros(x->g, n, COV_I32, 1, &s.N, &zt);
  for (int64_t c = 0; !st && c < s.N; c++)
    ((float *)sc.data)[c] = io.alpha * (float)param_at(io.as, 0) * (float)param_at(io.bs, c);
  if (!st) {
    int64_t view[3] = {s.M, s.N, 1};
    cov_tensor a3 = acc, y;
    a3.rank = 3;
    memcpy(a3.shape, view, sizeof view);
    cov_tensor args[3] = {a3, sc, zt};
    st = graph_call_codelet(x, n, "dequantize", NULL, 0, args, 3, &y, 1);
    if (!st) st = graph_lower_adopt(x, n, &y, out[0]);
  }
  cov_tensor_release(&sc);
  cov_tensor_release(&zt);
  cov_tensor_release(&acc);
  return st;
}

int graph_codelets_qgemm(const graph_node *n, const char **names, int max) {
  int k = 0;
  bool f32_out = n->n_out > 0 && n->out[0] && n->out[0]->dtype == COV_F32;
  if (k < max) names[k++] = "matmul_acc";
  if (k < max) names[k++] = "bias_add_2d";
  if (k < max) names[k++] = f32_out ? "dequantize" : requant_codelet(out_q8(n), false);
  return k;
}
