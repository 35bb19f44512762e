/* frontend/graph_ops.c: the one table of ONNX operators covenant supports.
 *
 * Each row: op type, input and output counts (over opsets 7 to 21; rules
 * that depend on the opset are in the infer functions), whether the
 * frontend executes it itself (layout) or through codelets (compute), and
 * its shape rule, kernel and codelet binding. Sorted by op type, searched by
 * bisection. */
#include <string.h>

#include "common/loc.h"

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"

/* The opset versions in which the operator's definition changed (from the
 * ONNX operator changelog), 0-terminated. */
#define V(...) ((const int[]){__VA_ARGS__, 0})
#define LAYOUT(op, fn, i0, i1, o0, o1, versions) \
  { op, i0, i1, o0, o1, true, graph_infer_##fn, graph_exec_##fn, NULL, versions, false }
#define COMPUTE(op, fn, i0, i1, o0, o1, versions) \
  { op, i0, i1, o0, o1, false, graph_infer_##fn, graph_exec_##fn, graph_codelets_##fn, versions, false }
/* Output shapes set by the kernel (graph_opdef.dynamic), run by the frontend. */
#define DYNAMIC(op, fn, i0, i1, o0, o1, versions) \
  { op, i0, i1, o0, o1, true, graph_infer_##fn, graph_exec_##fn, NULL, versions, true }
#define MANY GRAPH_MAX_NODE_IO

static const graph_opdef k_ops[] = {
    COMPUTE("Abs", unary, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("Acos", unary_ext, 1, 1, 1, 1, V(7)),
    COMPUTE("Acosh", unary_ext, 1, 1, 1, 1, V(9)),
    COMPUTE("Add", binary, 2, 2, 1, 1, V(1, 6, 7, 13, 14)),
    COMPUTE("And", binary_ext, 2, 2, 1, 1, V(1, 7)),
    COMPUTE("ArgMax", argmax, 1, 1, 1, 1, V(1, 11, 12, 13)),
    COMPUTE("ArgMin", argmax, 1, 1, 1, 1, V(1, 11, 12, 13)),
    COMPUTE("Asin", unary_ext, 1, 1, 1, 1, V(7)),
    COMPUTE("Asinh", unary_ext, 1, 1, 1, 1, V(9)),
    COMPUTE("Atan", unary_ext, 1, 1, 1, 1, V(7)),
    COMPUTE("Atanh", unary_ext, 1, 1, 1, 1, V(9)),
    COMPUTE("AveragePool", avgpool, 1, 1, 1, 1, V(1, 7, 10, 11, 19)),
    COMPUTE("BatchNormalization", batchnorm, 5, 5, 1, 5, V(1, 6, 7, 9, 14, 15)),
    COMPUTE("BitShift", binary_ext, 2, 2, 1, 1, V(11)),
    COMPUTE("BlackmanWindow", window, 1, 1, 1, 1, V(17)),
    LAYOUT("Cast", cast, 1, 1, 1, 1, V(1, 6, 9, 13, 19, 21)),
    LAYOUT("CastLike", cast_like, 2, 2, 1, 1, V(15, 19, 21)),
    COMPUTE("Ceil", unary_ext, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("Celu", unary_ext, 1, 1, 1, 1, V(12)),
    COMPUTE("Clip", clip, 1, 3, 1, 1, V(1, 6, 11, 12, 13)),
    DYNAMIC("Compress", compress, 2, 2, 1, 1, V(9, 11)),
    LAYOUT("Concat", concat, 1, MANY, 1, 1, V(1, 4, 11, 13)),
    DYNAMIC("ConcatFromSequence", sequence, 1, 1, 1, 1, V(11)),
    LAYOUT("Constant", constant, 0, 0, 1, 1, V(1, 9, 11, 12, 13, 19, 21)),
    LAYOUT("ConstantOfShape", constant_of_shape, 1, 1, 1, 1, V(9, 20, 21)),
    COMPUTE("Conv", conv, 2, 3, 1, 1, V(1, 11)),
    COMPUTE("ConvInteger", qconv, 2, 4, 1, 1, V(10)),
    COMPUTE("ConvTranspose", conv_transpose, 2, 3, 1, 1, V(1, 11)),
    COMPUTE("Cos", unary_ext, 1, 1, 1, 1, V(7)),
    COMPUTE("Cosh", unary_ext, 1, 1, 1, 1, V(9)),
    COMPUTE("CumSum", cumsum, 2, 2, 1, 1, V(11, 14)),
    COMPUTE("DFT", dft, 1, 3, 1, 1, V(17, 20)),
    LAYOUT("DepthToSpace", depth_space, 1, 1, 1, 1, V(1, 11, 13)),
    COMPUTE("DequantizeLinear", dequantize_linear, 2, 3, 1, 1, V(10, 13, 19, 21)),
    COMPUTE("Det", det, 1, 1, 1, 1, V(11)),
    COMPUTE("Div", binary, 2, 2, 1, 1, V(1, 6, 7, 13, 14)),
    LAYOUT("Dropout", dropout, 1, 3, 1, 2, V(1, 6, 7, 10, 12, 13)),
    COMPUTE("DynamicQuantizeLinear", dynamic_quantize_linear, 1, 1, 1, 3, V(11)),
    COMPUTE("Einsum", einsum, 1, MANY, 1, 1, V(12)),
    COMPUTE("Elu", unary_ext, 1, 1, 1, 1, V(1, 6)),
    COMPUTE("Equal", binary_ext, 2, 2, 1, 1, V(1, 7, 11, 13, 19)),
    COMPUTE("Erf", unary, 1, 1, 1, 1, V(9, 13)),
    COMPUTE("Exp", unary, 1, 1, 1, 1, V(1, 6, 13)),
    LAYOUT("Expand", expand, 2, 2, 1, 1, V(8, 13)),
    LAYOUT("EyeLike", eye_like, 1, 1, 1, 1, V(9)),
    LAYOUT("Flatten", flatten, 1, 1, 1, 1, V(1, 9, 11, 13, 21)),
    COMPUTE("Floor", unary_ext, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("GRU", rnn, 3, 6, 0, 2, V(1, 3, 7, 14)),
    LAYOUT("Gather", gather, 2, 2, 1, 1, V(1, 11, 13)),
    LAYOUT("GatherElements", gather_elements, 2, 2, 1, 1, V(11, 13)),
    LAYOUT("GatherND", gather_nd, 2, 2, 1, 1, V(11, 12, 13)),
    COMPUTE("Gelu", gelu, 1, 1, 1, 1, V(20)),
    COMPUTE("Gemm", gemm, 2, 3, 1, 1, V(1, 6, 7, 9, 11, 13)),
    COMPUTE("GlobalAveragePool", global_avgpool, 1, 1, 1, 1, V(1)),
    COMPUTE("GlobalMaxPool", global_maxpool, 1, 1, 1, 1, V(1)),
    COMPUTE("Greater", binary_ext, 2, 2, 1, 1, V(1, 7, 9, 13)),
    COMPUTE("GreaterOrEqual", binary_ext, 2, 2, 1, 1, V(12, 16)),
    COMPUTE("GridSample", grid_sample, 2, 2, 1, 1, V(16, 20)),
    COMPUTE("GroupNormalization", instance_norm, 3, 3, 1, 1, V(18, 21)),
    COMPUTE("HammingWindow", window, 1, 1, 1, 1, V(17)),
    COMPUTE("HannWindow", window, 1, 1, 1, 1, V(17)),
    COMPUTE("HardSigmoid", unary_ext, 1, 1, 1, 1, V(1, 6)),
    COMPUTE("HardSwish", unary_ext, 1, 1, 1, 1, V(14)),
    COMPUTE("Hardmax", softmax, 1, 1, 1, 1, V(1, 11, 13)),
    LAYOUT("Identity", identity, 1, 1, 1, 1, V(1, 13, 14, 16, 19, 21)),
    DYNAMIC("If", if, 1, 1, 1, MANY, V(1, 11, 13, 16, 19, 21)),
    COMPUTE("InstanceNormalization", instance_norm, 3, 3, 1, 1, V(1, 6)),
    COMPUTE("IsInf", unary_ext, 1, 1, 1, 1, V(10, 20)),
    COMPUTE("IsNaN", unary_ext, 1, 1, 1, 1, V(9, 13, 20)),
    COMPUTE("LRN", lrn, 1, 1, 1, 1, V(1, 13)),
    COMPUTE("LSTM", rnn, 3, 8, 0, 3, V(1, 7, 14)),
    COMPUTE("LayerNormalization", layernorm, 2, 3, 1, 3, V(17)),
    COMPUTE("LeakyRelu", leaky_relu, 1, 1, 1, 1, V(1, 6, 16)),
    COMPUTE("Less", binary_ext, 2, 2, 1, 1, V(1, 7, 9, 13)),
    COMPUTE("LessOrEqual", binary_ext, 2, 2, 1, 1, V(12, 16)),
    COMPUTE("Log", unary_ext, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("LogSoftmax", softmax, 1, 1, 1, 1, V(1, 11, 13)),
    DYNAMIC("Loop", loop, 0, MANY, 1, MANY, V(1, 11, 13, 16, 19, 21)),
    COMPUTE("LpNormalization", lp_norm, 1, 1, 1, 1, V(1)),
    COMPUTE("MatMul", matmul, 2, 2, 1, 1, V(1, 9, 13)),
    COMPUTE("MatMulInteger", qmatmul, 2, 4, 1, 1, V(10)),
    COMPUTE("Max", variadic, 1, MANY, 1, 1, V(1, 6, 8, 12, 13)),
    COMPUTE("MaxPool", maxpool, 1, 1, 1, 2, V(1, 8, 10, 11, 12)),
    LAYOUT("MaxUnpool", max_unpool, 2, 3, 1, 1, V(9, 11)),
    COMPUTE("Mean", sum, 1, MANY, 1, 1, V(1, 6, 8, 13)),
    COMPUTE("MeanVarianceNormalization", mvn, 1, 1, 1, 1, V(9, 13)),
    COMPUTE("MelWeightMatrix", mel_weight, 5, 5, 1, 1, V(17)),
    COMPUTE("Min", variadic, 1, MANY, 1, 1, V(1, 6, 8, 12, 13)),
    COMPUTE("Mod", binary_ext, 2, 2, 1, 1, V(10, 13)),
    COMPUTE("Mul", binary, 2, 2, 1, 1, V(1, 6, 7, 13, 14)),
    COMPUTE("Neg", unary, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("NegativeLogLikelihoodLoss", loss, 2, 3, 1, 1, V(12, 13)),
    DYNAMIC("NonMaxSuppression", nms, 2, 5, 1, 1, V(10, 11)),
    DYNAMIC("NonZero", nonzero, 1, 1, 1, 1, V(9, 13)),
    COMPUTE("Not", unary_ext, 1, 1, 1, 1, V(1)),
    LAYOUT("OneHot", one_hot, 3, 3, 1, 1, V(9, 11)),
    DYNAMIC("Optional", sequence, 0, 1, 1, 1, V(15)),
    DYNAMIC("OptionalGetElement", sequence, 1, 1, 1, 1, V(15, 18)),
    DYNAMIC("OptionalHasElement", sequence, 0, 1, 1, 1, V(15, 18)),
    COMPUTE("Or", binary_ext, 2, 2, 1, 1, V(1, 7)),
    COMPUTE("PRelu", binary_ext, 2, 2, 1, 1, V(1, 6, 7, 9, 16)),
    LAYOUT("Pad", pad, 1, 4, 1, 1, V(1, 2, 11, 13, 18, 19, 21)),
    COMPUTE("Pow", pow, 2, 2, 1, 1, V(1, 7, 12, 13, 15)),
    COMPUTE("QLinearConv", qconv, 8, 9, 1, 1, V(10)),
    COMPUTE("QLinearMatMul", qmatmul, 8, 8, 1, 1, V(10, 21)),
    COMPUTE("QuantizeLinear", quantize_linear, 2, 3, 1, 1, V(10, 13, 19, 21)),
    COMPUTE("RNN", rnn, 3, 6, 0, 2, V(1, 7, 14)),
    LAYOUT("Range", range, 3, 3, 1, 1, V(11)),
    COMPUTE("Reciprocal", unary_ext, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("ReduceL1", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("ReduceL2", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("ReduceLogSum", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("ReduceLogSumExp", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("ReduceMax", reduce, 1, 2, 1, 1, V(1, 11, 12, 13, 18, 20)),
    COMPUTE("ReduceMean", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("ReduceMin", reduce, 1, 2, 1, 1, V(1, 11, 12, 13, 18, 20)),
    COMPUTE("ReduceProd", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("ReduceSum", reduce, 1, 2, 1, 1, V(1, 11, 13)),
    COMPUTE("ReduceSumSquare", reduce, 1, 2, 1, 1, V(1, 11, 13, 18)),
    COMPUTE("Relu", unary, 1, 1, 1, 1, V(1, 6, 13, 14)),
    LAYOUT("Reshape", reshape, 2, 2, 1, 1, V(1, 5, 13, 14, 19, 21)),
    COMPUTE("Resize", resize, 1, 4, 1, 1, V(10, 11, 13, 18, 19)),
    LAYOUT("ReverseSequence", reverse_sequence, 2, 2, 1, 1, V(10)),
    COMPUTE("RoiAlign", roi_align, 3, 3, 1, 1, V(10, 16)),
    COMPUTE("Round", unary_ext, 1, 1, 1, 1, V(11)),
    COMPUTE("STFT", stft, 2, 4, 1, 1, V(17)),
    DYNAMIC("Scan", scan, 0, MANY, 1, MANY, V(8, 9, 11, 16, 19, 21)),
    LAYOUT("Scatter", scatter_elements, 3, 3, 1, 1, V(9)),
    LAYOUT("ScatterElements", scatter_elements, 3, 3, 1, 1, V(11, 13, 16, 18)),
    LAYOUT("ScatterND", scatter_nd, 3, 3, 1, 1, V(11, 13, 16, 18)),
    COMPUTE("Selu", unary_ext, 1, 1, 1, 1, V(1, 6)),
    DYNAMIC("SequenceAt", sequence, 2, 2, 1, 1, V(11)),
    DYNAMIC("SequenceConstruct", sequence, 1, MANY, 1, 1, V(11)),
    DYNAMIC("SequenceEmpty", sequence, 0, 0, 1, 1, V(11)),
    DYNAMIC("SequenceErase", sequence, 1, 2, 1, 1, V(11)),
    DYNAMIC("SequenceInsert", sequence, 2, 3, 1, 1, V(11)),
    DYNAMIC("SequenceLength", sequence, 1, 1, 1, 1, V(11)),
    DYNAMIC("SequenceMap", seqmap, 1, MANY, 1, MANY, V(17)),
    LAYOUT("Shape", shape, 1, 1, 1, 1, V(1, 13, 15, 19, 21)),
    COMPUTE("Shrink", unary_ext, 1, 1, 1, 1, V(9)),
    COMPUTE("Sigmoid", unary, 1, 1, 1, 1, V(1, 6, 13)),
    COMPUTE("Sign", unary_ext, 1, 1, 1, 1, V(9, 13)),
    COMPUTE("Sin", unary_ext, 1, 1, 1, 1, V(7)),
    COMPUTE("Sinh", unary_ext, 1, 1, 1, 1, V(9)),
    LAYOUT("Size", size, 1, 1, 1, 1, V(1, 13, 19, 21)),
    LAYOUT("Slice", slice, 1, 5, 1, 1, V(1, 10, 11, 13)),
    COMPUTE("Softmax", softmax, 1, 1, 1, 1, V(1, 11, 13)),
    COMPUTE("SoftmaxCrossEntropyLoss", loss, 2, 3, 1, 2, V(12, 13)),
    COMPUTE("Softplus", unary_ext, 1, 1, 1, 1, V(1)),
    COMPUTE("Softsign", unary_ext, 1, 1, 1, 1, V(1)),
    LAYOUT("SpaceToDepth", depth_space, 1, 1, 1, 1, V(1, 13)),
    LAYOUT("Split", split, 1, 2, 1, MANY, V(1, 2, 11, 13, 18)),
    DYNAMIC("SplitToSequence", sequence, 1, 2, 1, 1, V(11)),
    COMPUTE("Sqrt", unary, 1, 1, 1, 1, V(1, 6, 13)),
    LAYOUT("Squeeze", squeeze, 1, 2, 1, 1, V(1, 11, 13, 21)),
    COMPUTE("Sub", binary, 2, 2, 1, 1, V(1, 6, 7, 13, 14)),
    COMPUTE("Sum", sum, 1, MANY, 1, 1, V(1, 6, 8, 13)),
    COMPUTE("Tan", unary_ext, 1, 1, 1, 1, V(7)),
    COMPUTE("Tanh", unary, 1, 1, 1, 1, V(1, 6, 13)),
    LAYOUT("TfIdfVectorizer", tfidf, 1, 1, 1, 1, V(9)),
    COMPUTE("ThresholdedRelu", unary_ext, 1, 1, 1, 1, V(10)),
    LAYOUT("Tile", tile, 2, 2, 1, 1, V(1, 6, 13)),
    LAYOUT("TopK", topk, 1, 2, 2, 2, V(1, 10, 11)),
    LAYOUT("Transpose", transpose, 1, 1, 1, 1, V(1, 13, 21)),
    LAYOUT("Trilu", trilu, 1, 2, 1, 1, V(14)),
    DYNAMIC("Unique", unique, 1, 1, 1, 4, V(11)),
    LAYOUT("Unsqueeze", unsqueeze, 1, 2, 1, 1, V(1, 11, 13, 21)),
    COMPUTE("Upsample", resize, 1, 2, 1, 1, V(7, 9)),
    COMPUTE("Where", where, 3, 3, 1, 1, V(9, 16)),
    COMPUTE("Xor", binary_ext, 2, 2, 1, 1, V(1, 7)),
};

/* Operators of onnxruntime's com.microsoft domain that quantize_static
 * writes (QOperator format). */
static const graph_opdef k_ms_ops[] = {
    COMPUTE("QGemm", qgemm, 6, 9, 1, 1, V(1)),
};

const graph_opdef *graph_opdef_find_domain(const char *domain, const char *op_type) {
  if (!domain || !*domain || strcmp(domain, "ai.onnx") == 0) return graph_opdef_find(op_type);
  if (strcmp(domain, "com.microsoft") != 0) return NULL;
  for (size_t i = 0; i < sizeof k_ms_ops / sizeof *k_ms_ops; i++)
    if (strcmp(k_ms_ops[i].op_type, op_type) == 0) return &k_ms_ops[i];
  return NULL;
}

const graph_opdef *graph_opdef_find(const char *op_type) {
  size_t lo = 0, hi = sizeof k_ops / sizeof *k_ops;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(op_type, k_ops[mid].op_type);
    if (c == 0) return &k_ops[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}

void graph_print_supported_ops(FILE *out) {
  for (size_t i = 0; i < sizeof k_ops / sizeof *k_ops; i++)
    fprintf(out, "%s\t%s\n", k_ops[i].op_type, k_ops[i].layout ? "layout" : "compute");
}

int graph_op_version(const graph_opdef *d, int opset) {
  int v = 0;
  for (const int *p = d->versions; *p; p++)
    if (*p <= opset) v = *p;
  return v;
}

/* ---- the public table (cov_onnx_op_at) ---- */

enum { N_OPS = sizeof k_ops / sizeof *k_ops, N_MS_OPS = sizeof k_ms_ops / sizeof *k_ms_ops };

size_t cov_onnx_op_count(void) { return N_OPS + N_MS_OPS; }

/* The codelets of a node of d's type with every input and output present
 * (values with no type: the codelet lists read only presence, the op type
 * and attributes, of which it has none). */
static int codelets_of(const graph_opdef *d, const char *domain, const char **names, int max) {
  enum { IO = 16 };
  graph_value vals[IO];
  graph_value *in[IO], *out[IO];
  memset(vals, 0, sizeof vals);
  for (int i = 0; i < IO; i++) in[i] = out[i] = &vals[i];
  graph_node n = {.name = d->op_type, .op_type = d->op_type, .domain = domain, .def = d,
                  .opset = GRAPH_OPSET_MAX, .in = in, .n_in = d->max_in < IO ? d->max_in : IO,
                  .out = out, .n_out = d->max_out < IO ? d->max_out : IO, .group = -1};
  return d->codelets ? d->codelets(&n, names, max) : 0;
}

cov_status cov_onnx_op_at(size_t i, cov_onnx_op *out) {
  memset(out, 0, sizeof *out);
  if (i >= cov_onnx_op_count())
    return cov_error(COV_OUT_OF_RANGE, COV_AT_CALL("cov_onnx_op_at"), "operator %zu of %zu", i, cov_onnx_op_count());
  int ms = i >= N_OPS;
  const graph_opdef *d = ms ? &k_ms_ops[i - N_OPS] : &k_ops[i];
  out->op_type = d->op_type;
  out->domain = ms ? "com.microsoft" : "ai.onnx";
  out->versions = d->versions;
  out->since = ms || d->versions[0] > GRAPH_OPSET_MIN ? d->versions[0] : GRAPH_OPSET_MIN;
  out->until = ms ? d->versions[0] : GRAPH_OPSET_MAX;
  for (const int *v = d->versions; ms && *v; v++) out->until = *v;
  out->layout = d->layout;
  if (!d->layout) out->n_codelets = codelets_of(d, ms ? "com.microsoft" : "", out->codelets, COV_ONNX_OP_CODELET_SLOTS);
  return NULL;
}
