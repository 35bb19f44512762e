#!/usr/bin/env python3
"""Bad input for every operator added since the first frontend:
a table of malformed one-node models, built here with onnx.helper, each of
which `covenant inspect` (or `covenant run`, for what only the data shows)
must refuse with exit status 1, an error naming the node ("node 'bad'
(OpType)") and saying what was expected; a crash, a sanitizer report, a
hang or a silent success fails the case. The int8 operators have theirs in
test_quant.py; the corpus in bad/ keeps a few more with exact messages.

    /usr/bin/python3 test_bad_ops.py COVENANT WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bad_ops_compute  # noqa: E402
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bad_control  # noqa: E402
import bad_sequence_io  # noqa: E402

F, D, I32, I64, B = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64,
                     TensorProto.BOOL)
NP = {F: np.float32, D: np.float64, I32: np.int32, I64: np.int64, B: np.bool_}

CASES = []  # (case name, op type, model, expected text, inputs to run with or None)


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def case(name, op, inputs, text, attrs=None, inits=(), opset=13, n_out=1, feed=None, domain=""):
    """inputs: the node's inputs in order, each a graph input (name, ONNX
    type, shape) or an initializer (a TensorProto); inits follow them. The
    node is called 'bad'. feed: None to check `covenant inspect`, else the
    graph inputs' values for `covenant run` (errors only the data shows)."""
    ins = list(inputs) + list(inits)
    names = ["" if isinstance(i, str) else i.name if isinstance(i, onnx.TensorProto) else i[0]
             for i in ins]  # "" is an absent optional input
    node = helper.make_node(op, names, ["y%d" % k for k in range(n_out)], name="bad",
                            domain=domain or None, **(attrs or {}))
    g = helper.make_graph([node], name,
                          [vi(*i) for i in ins if isinstance(i, tuple)],
                          [helper.make_tensor_value_info("y%d" % k, 0, None) for k in range(n_out)],
                          initializer=[i for i in ins if isinstance(i, onnx.TensorProto)])
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    CASES.append((name, op, m, text, feed))


def unary_cases():
    float_only = ["Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cos", "Cosh", "Sin", "Sinh",
                  "Tan", "Log", "Reciprocal", "Elu", "Selu", "HardSigmoid", "HardSwish",
                  "Softplus", "Softsign", "ThresholdedRelu", "IsInf", "IsNaN"]
    for op in float_only:
        case(op.lower() + "_int", op, [("x", I32, [2, 3])], "f32, f16, bf16 or f64",
             opset=20 if op in ("IsInf", "IsNaN") else 14)
    for op in ["Ceil", "Floor", "Round", "Sign", "Shrink"]:
        case(op.lower() + "_bool", op, [("x", B, [4])], "has dtype bool")
    case("not_float", "Not", [("x", F, [4])], "Not takes bool")


def binary_cases():
    for op in ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Mod", "PRelu"]:
        case(op.lower() + "_shapes", op, [("a", F, [2, 3]), ("b", F, [4])], "cannot be broadcast",
             attrs={"fmod": 1} if op == "Mod" else None, opset=16)
    for op in ["Equal", "Less", "Greater"]:
        case(op.lower() + "_dtypes", op, [("a", F, [3]), ("b", I64, [3])],
             "'a' (f32) and 'b' (i64) differ in dtype")
    for op in ["And", "Or", "Xor"]:
        case(op.lower() + "_float", op, [("a", F, [3]), ("b", F, [3])], op + " takes bool")
    case("mod_fmod_value", "Mod", [("a", I32, [3]), ("b", I32, [3])], "fmod 2 is not 0 or 1",
         attrs={"fmod": 2})
    case("where_shapes", "Where", [("c", B, [2, 3]), ("a", F, [4]), ("b", F, [2, 3])], "cannot be broadcast")
    case("where_dtypes", "Where", [("c", B, [3]), ("a", F, [3]), ("b", I64, [3])], "differ in dtype")
    for op in ["Sum", "Mean"]:
        case(op.lower() + "_shapes", op, [("a", F, [2, 3]), ("b", F, [4]), ("c", F, [3])],
             "cannot be broadcast")
        case(op.lower() + "_dtypes", op, [("a", F, [3]), ("b", I32, [3])], "differ in dtype")


def reduce_cases():
    for op in ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMin",
               "ReduceProd", "ReduceSumSquare", "ReduceMean"]:
        case(op.lower() + "_axis", op, [("x", F, [2, 3])], "axis 2 is out of range for rank 2",
             attrs={"axes": [2]}, opset=13)
        case(op.lower() + "_axes_twice", op, [("x", F, [2, 3])], "axis 1 is given twice", attrs={"axes": [1, -1]},
             opset=13)
    case("reducesum_axes_attr", "ReduceSum", [("x", F, [2, 3])], "as an input from opset 13", attrs={"axes": [0]},
         opset=13)
    case("reducesum_axes_float", "ReduceSum", [("x", F, [2, 3])], "must be int64 or int32",
         inits=[const("axes", np.array([0.0], np.float32))], opset=13)
    case("reducel2_int", "ReduceL2", [("x", I32, [2, 3])], "f32, f16, bf16 or f64")
    case("reducelogsumexp_axis_input_old", "ReduceLogSumExp", [("x", F, [2, 3])], "as an attribute before opset 18", inits=[const("axes", np.array([0], np.int64))], opset=13)
    for op in ["ArgMax", "ArgMin"]:
        case(op.lower() + "_axis", op, [("x", F, [2, 3])], "axis 5 is out of range",
             attrs={"axis": 5})
        case(op.lower() + "_last", op, [("x", F, [2, 3])], "select_last_index 2 is not 0 or 1",
             attrs={"select_last_index": 2})
        case(op.lower() + "_scalar", op, [("x", F, [])], "has rank 0; expected >= 1")
    case("cumsum_axis_range", "CumSum", [("x", F, [2, 3])], "axis 4 is out of range",
         inits=[const("axis", np.array(4, np.int64))])
    case("cumsum_axis_shape", "CumSum", [("x", F, [2, 3])], "must be a scalar",
         inits=[const("axis", np.array([0, 1], np.int64))])
    case("cumsum_bool", "CumSum", [("x", B, [2, 3])], "bool",
         inits=[const("axis", np.array(0, np.int64))])
    for op in ["LogSoftmax", "Hardmax"]:
        case(op.lower() + "_axis", op, [("x", F, [2, 3])], "axis 3 is out of range",
             attrs={"axis": 3})
        case(op.lower() + "_int", op, [("x", I32, [2, 3])], "f32, f16, bf16 or f64")


def resize_cases():
    x = ("x", F, [1, 1, 2, 2])
    case("resize_mode", "Resize", [x], "mode 'bicubic' is not", attrs={"mode": "bicubic"},
         inits=[const("roi", np.zeros(0, np.float32)), const("s", np.ones(4, np.float32))])
    case("resize_scales_len", "Resize", [x], "scales has 3 values for rank 4",
         inits=[const("roi", np.zeros(0, np.float32)), const("s", np.ones(3, np.float32))])
    case("resize_ctm", "Resize", [x], "coordinate_transformation_mode 'sideways'",
         attrs={"coordinate_transformation_mode": "sideways"},
         inits=[const("roi", np.zeros(0, np.float32)), const("s", np.ones(4, np.float32))])
    case("resize_nearest_mode", "Resize", [x], "nearest_mode 'up' is not", attrs={"nearest_mode": "up"},
         inits=[const("roi", np.zeros(0, np.float32)), const("s", np.ones(4, np.float32))])
    case("upsample_mode", "Upsample", [x], "mode 'area' is not", attrs={"mode": "area"},
         inits=[const("s", np.ones(4, np.float32))], opset=9)
    case("upsample_scales_len", "Upsample", [x], "scales has 2 values for rank 4",
         inits=[const("s", np.ones(2, np.float32))], opset=9)
    case("upsample_scale_below_one", "Upsample", [x], "scales must be >= 1",
         inits=[const("s", np.array([1, 1, 0.5, 1], np.float32))], opset=9)


def layout_cases():
    case("range_vector", "Range", [("s", F, [2]), ("l", F, []), ("d", F, [])], "'s' must be a scalar")
    case("range_dtypes", "Range", [("s", F, []), ("l", I64, []), ("d", F, [])], "differ in dtype")
    case("range_delta_zero", "Range", [], "delta must be non-zero",
         inits=[const("s", np.array(0, np.int64)), const("l", np.array(5, np.int64)),
                const("d", np.array(0, np.int64))], opset=13)
    case("trilu_rank", "Trilu", [("x", F, [4])], "has rank 1; expected >= 2", opset=14)
    case("trilu_k_vector", "Trilu", [("x", F, [3, 3])], "'k' must be a scalar", opset=14,
         inits=[const("k", np.array([1, 2], np.int64))])
    case("tile_repeats_len", "Tile", [("x", F, [2, 3])], "repeats has 1 values for rank 2",
         inits=[const("r", np.array([2], np.int64))])
    case("tile_repeats_negative", "Tile", [("x", F, [2, 3])], "repeat -1 is out of range",
         inits=[const("r", np.array([2, -1], np.int64))])
    case("depthtospace_channels", "DepthToSpace", [("x", F, [1, 3, 2, 2])],
         "3 channels do not divide by blocksize^2 = 4", attrs={"blocksize": 2})
    case("depthtospace_mode", "DepthToSpace", [("x", F, [1, 4, 2, 2])], "mode 'XYZ' is not DCR or CRD",
         attrs={"blocksize": 2, "mode": "XYZ"})
    case("depthtospace_no_blocksize", "DepthToSpace", [("x", F, [1, 4, 2, 2])],
         "blocksize 0 must be from 1")
    case("spacetodepth_height", "SpaceToDepth", [("x", F, [1, 1, 3, 4])], "must divide by blocksize 2",
         attrs={"blocksize": 2})
    case("spacetodepth_rank", "SpaceToDepth", [("x", F, [4, 4])], "has rank 2; expected 4",
         attrs={"blocksize": 2})
    case("eyelike_rank", "EyeLike", [("x", F, [2, 2, 2])], "has rank 3; expected 2")
    case("eyelike_dtype", "EyeLike", [("x", F, [2, 2])], "dtype 8 is not supported", attrs={"dtype": 8})
    case("castlike_opset", "CastLike", [("x", F, [2]), ("l", D, [1])],
         "CastLike does not exist in opset 13 (it was introduced in opset 15)")
    case("castlike_one_input", "CastLike", [("x", F, [2])], "has 1 inputs; CastLike takes 2",
         opset=15)
    case("size_two_inputs", "Size", [("x", F, [2]), ("z", F, [2])], "has 2 inputs; Size takes 1")


def index_cases():
    case("gatherelements_index_dtype", "GatherElements", [("x", F, [2, 3]), ("i", F, [2, 3])],
         "must be int32 or int64")
    case("gatherelements_axis", "GatherElements", [("x", F, [2, 3]), ("i", I64, [2, 3])],
         "axis 2 is out of range", attrs={"axis": 2})
    case("gatherelements_out_of_range", "GatherElements", [("x", F, [2, 3]), ("i", I64, [1, 3])],
         "index 7 is out of range for axis 0 of size 2", feed=[np.ones((2, 3), np.float32), np.array([[0, 7, 0]], np.int64)])
    case("gathernd_last_dim", "GatherND", [("x", F, [2, 3]), ("i", I64, [1, 3])],
         "index tuples of length 3 do not fit data of rank 2")
    case("gathernd_batch_dims", "GatherND", [("x", F, [2, 3]), ("i", I64, [2, 1])], "batch_dims 2 is out of range",
         attrs={"batch_dims": 2})
    case("gathernd_out_of_range", "GatherND", [("x", F, [2, 3]), ("i", I64, [1, 2])], "out of range",
         feed=[np.ones((2, 3), np.float32), np.array([[5, 0]], np.int64)])
    for op, opset in [("ScatterElements", 16), ("Scatter", 9)]:
        case(op.lower() + "_updates_shape", op, [("x", F, [2, 3]), ("i", I64, [1, 2]),
                                                 ("u", F, [2, 2])], "updates must have the indices' shape", opset=opset)
        case(op.lower() + "_axis", op, [("x", F, [2, 3]), ("i", I64, [1, 2]), ("u", F, [1, 2])],
             "axis -3 is out of range", attrs={"axis": -3}, opset=opset)
    case("scatterelements_reduction", "ScatterElements",
         [("x", F, [2, 3]), ("i", I64, [1, 2]), ("u", F, [1, 2])], "reduction 'avg' is not",
         attrs={"reduction": "avg"}, opset=18)
    case("scatterelements_out_of_range", "ScatterElements",
         [("x", F, [2, 3]), ("i", I64, [1, 2]), ("u", F, [1, 2])], "index 9 is out of range", opset=16,
         feed=[np.ones((2, 3), np.float32), np.array([[0, 9]], np.int64),
               np.ones((1, 2), np.float32)])
    case("scatternd_reduction", "ScatterND", [("x", F, [4]), ("i", I64, [1, 1]), ("u", F, [1])],
         "reduction 'avg' is not", attrs={"reduction": "avg"}, opset=18)
    case("scatternd_index_depth", "ScatterND",
         [("x", F, [4]), ("i", I64, [1, 2]), ("u", F, [1])],
         "index tuples of length 2 do not fit data of rank 1", opset=16)
    case("onehot_depth_vector", "OneHot",
         [("i", I64, [3]), const("d", np.array([3, 4], np.int64)), ("v", F, [2])],
         "depth 'd' must hold exactly one element")
    case("onehot_axis", "OneHot", [("i", I64, [3]), const("d", np.array(3, np.int64)),
                                   ("v", F, [2])], "axis 5 is out of range",
         attrs={"axis": 5})
    case("onehot_values", "OneHot", [("i", I64, [3]), const("d", np.array(3, np.int64)),
                                     ("v", F, [3])], "[off, on]")
    case("topk_axis", "TopK", [("x", F, [2, 3])], "axis 4 is out of range", attrs={"axis": 4}, n_out=2,
         inits=[const("k", np.array([1], np.int64))])
    case("topk_k_negative", "TopK", [("x", F, [2, 3])], "K = -1 is negative", n_out=2,
         inits=[const("k", np.array([-1], np.int64))])
    case("topk_k_vector", "TopK", [("x", F, [2, 3])], "must be 1-D with one element", n_out=2,
         inits=[const("k", np.array([1, 2], np.int64))])


def loss_cases():
    for op in ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]:
        case(op.lower() + "_reduction", op, [("x", F, [2, 3]), ("t", I64, [2])], "reduction 'max' is not none, sum or mean",
             attrs={"reduction": "max"})
        case(op.lower() + "_target_shape", op, [("x", F, [2, 3]), ("t", I64, [3])],
             "target 't' does not match the input's shape")
        case(op.lower() + "_target_dtype", op, [("x", F, [2, 3]), ("t", F, [2])], "target 't' must be int32 or int64")


def int8_cases():
    """The integer operators test_quant.py has no bad case for."""
    U8, I8 = TensorProto.UINT8, TensorProto.INT8
    w = const("w", np.ones((2, 2, 1, 1), np.int8))
    case("convinteger_float", "ConvInteger", [("x", F, [1, 2, 4, 4]), w], "take i8 or u8")
    case("convinteger_channels", "ConvInteger", [("x", U8, [1, 3, 4, 4]), w], "has 3 channels")
    case("convinteger_zp_shape", "ConvInteger",
         [("x", U8, [1, 2, 4, 4]), w, const("xz", np.zeros(3, np.uint8))], "expected a scalar")
    case("matmulinteger_float", "MatMulInteger", [("a", F, [2, 3]), ("b", I8, [3, 2])], "take i8 or u8")
    case("matmulinteger_k", "MatMulInteger", [("a", U8, [2, 3]), ("b", I8, [4, 2])],
         "'a' has 3 columns but 'b' has 4 rows")
    case("matmulinteger_zp_dtype", "MatMulInteger",
         [("a", U8, [2, 3]), ("b", I8, [3, 2]), const("az", np.zeros(1, np.int8))], "zero point 'az' is i8")
    case("dynamicquantizelinear_int", "DynamicQuantizeLinear", [("x", I32, [4])], "expected f32", n_out=3,
         opset=11)
    q = [const("as", np.float32(0.1)), const("az", np.uint8(0)), const("b", np.ones((3, 2), np.int8)),
         const("bs", np.float32(0.1)), const("bz", np.int8(0))]
    case("qgemm_k", "QGemm", [("a", U8, [2, 4])] + q, "A has 4 columns but B has 3 rows", domain="com.microsoft")
    case("qgemm_float", "QGemm", [("a", F, [2, 3])] + q, "take i8 or u8", domain="com.microsoft")


def new_op_cases():
    def ein(name, eq, shapes, text):
        case("einsum_" + name, "Einsum", [("x%d" % i, F, s) for i, s in enumerate(shapes)], text,
             attrs={} if eq is None else {"equation": eq}, opset=12)
    ein("no_equation", None, [[2, 2]], "'equation' attribute is missing")
    ein("rank", "ij,jk->ik", [[2, 3, 4], [3, 4]], "has rank 3 but its term has 2 labels")
    ein("operands", "ij,jk->ik", [[2, 3]], "names 2 operands but the node has 1 inputs")
    ein("sizes", "ij,jk->ik", [[2, 3], [4, 5]], "label 'j' has size 4")
    ein("char", "i1->i", [[2, 3]], "character '1' is not a label")
    ein("dots", "i.j->i", [[2, 3]], "ellipsis")
    ein("two_ellipses", "...i...->i", [[2, 3]], "two ellipses")
    ein("output_label", "ij->k", [[2, 3]], "an output label is in no operand")
    ein("output_repeated", "ij->ii", [[2, 3]], "an output label is repeated")
    ein("drops_ellipsis", "...ij->ij", [[4, 2, 3]], "drops the operands' '...' dims")
    ein("ellipsis_broadcast", "...i,...i->...i", [[2, 3], [4, 3]], "do not broadcast")
    ein("two_arrows", "i->i->i", [[2]], "more than one '->'")
    ein("too_many_labels", "abcdefghijk->a", [[1] * 8], "more labels than")
    case("einsum_dtypes", "Einsum", [("a", F, [2, 3]), ("b", I32, [3, 2])], "i32",
         attrs={"equation": "ij,jk->ik"}, opset=12)
    case("einsum_bool", "Einsum", [("a", B, [2])], "bool", attrs={"equation": "i->i"}, opset=12)
    c = [const("s", np.ones(3, np.float32)), const("b", np.zeros(3, np.float32))]
    case("instancenorm_rank", "InstanceNormalization", [("x", F, [2, 3])], "expected >= 3",
         inits=c)
    case("instancenorm_scale_len", "InstanceNormalization", [("x", F, [1, 4, 2, 2])],
         "one value per channel", inits=c)
    case("instancenorm_int", "InstanceNormalization", [("x", I32, [1, 3, 2])],
         "f32, f16, bf16 or f64", inits=c)
    case("instancenorm_scale_dtype", "InstanceNormalization", [("x", D, [1, 3, 2])],
         "is f32 but the input is f64", inits=c)
    case("groupnorm_no_groups", "GroupNormalization", [("x", F, [1, 6, 2])],
         "'num_groups' attribute is missing", inits=c, opset=18)
    case("groupnorm_divide", "GroupNormalization", [("x", F, [1, 6, 2])],
         "6 channels do not divide into num_groups 4", attrs={"num_groups": 4}, inits=c, opset=18)
    case("groupnorm_zero", "GroupNormalization", [("x", F, [1, 6, 2])], "not positive",
         attrs={"num_groups": 0}, inits=c, opset=18)
    case("groupnorm_per_group_18", "GroupNormalization", [("x", F, [1, 6, 2])],
         "one value per group", attrs={"num_groups": 2}, inits=c, opset=18)
    case("groupnorm_per_channel_21", "GroupNormalization", [("x", F, [1, 6, 2])],
         "one value per channel", attrs={"num_groups": 3}, inits=c, opset=21)
    case("groupnorm_stash", "GroupNormalization", [("x", F, [1, 3, 2])], "stash_type",
         attrs={"num_groups": 3, "stash_type": 0}, inits=c, opset=21)
    case("groupnorm_rank", "GroupNormalization", [("x", F, [6])], "expected >= 2",
         attrs={"num_groups": 3}, inits=c, opset=18)
    case("lpnorm_p", "LpNormalization", [("x", F, [2, 3])], "p is 3; ONNX defines only 1 and 2",
         attrs={"p": 3})
    case("lpnorm_axis", "LpNormalization", [("x", F, [2, 3])], "axis 2 is out of range", attrs={"axis": 2})
    case("lpnorm_scalar", "LpNormalization", [("x", F, [])], "is a scalar; expected rank >= 1")
    case("lpnorm_int", "LpNormalization", [("x", I64, [2, 3])], "f32, f16, bf16 or f64")


def rnn_cases():
    """LSTM, GRU, RNN: shapes, attributes, activations, hostile sizes."""
    f = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    x = ("x", F, [5, 2, 3])

    def lstm(name, text, w=(1, 16, 3), r=(1, 16, 4), attrs=None, extra=(), xin=x, op="LSTM",
             n_out=3, **kw):
        a = {"hidden_size": 4}
        a.update(attrs or {})
        case(name, op, [xin, const("w", f(*w)), const("r", f(*r))] + list(extra), text,
             attrs=a, n_out=n_out, opset=14, **kw)

    lstm("lstm_w_shape", "LSTM takes [num_directions, gates*hidden, input] = [1, 16, 3]",
         w=(1, 12, 3))
    lstm("lstm_w_input_size", "= [1, 16, 3]", w=(1, 16, 4))
    lstm("lstm_w_directions", "= [2, 16, 3]", attrs={"direction": "bidirectional"})
    lstm("gru_r_shape", "GRU takes [num_directions, gates*hidden, hidden] = [1, 12, 4]",
         op="GRU", w=(1, 12, 3), r=(1, 12, 5), n_out=2)
    lstm("lstm_b_shape", "[num_directions, 2*gates*hidden] = [1, 32]",
         extra=[const("b", f(1, 16))])
    lstm("lstm_p_shape", "[num_directions, 3*hidden] = [1, 12]",
         extra=[const("b", f(1, 32)), const("sl", np.full(2, 5, np.int32)), const("h0", f(1, 2, 4)),
                const("c0", f(1, 2, 4)), const("p", f(1, 16))])
    lstm("lstm_initial_h_shape", "[num_directions, batch, hidden] = [1, 2, 4]",
         extra=[const("b", f(1, 32)), const("sl", np.full(2, 5, np.int32)), const("h0", f(1, 3, 4))])
    case("lstm_w_dtype", "LSTM", [x, const("w", np.zeros((1, 16, 3))), const("r", f(1, 16, 4))],
         "input W 'w' is f64[1, 16, 3]; it must be f32", attrs={"hidden_size": 4}, opset=14)
    lstm("lstm_x_int", "f32, f16, bf16 or f64", xin=("x", I32, [5, 2, 3]))
    lstm("lstm_x_rank", "has rank 2", xin=("x", F, [5, 3]))
    lstm("lstm_unknown_activation", "activation 'Swish' is not one the recurrent operators define",
         attrs={"activations": ["Sigmoid", "Tanh", "Swish"]})
    lstm("lstm_activation_count", "lists 2 functions; LSTM with 1 direction takes 3",
         attrs={"activations": ["Sigmoid", "Tanh"]})
    lstm("lstm_activation_alpha_extra", "activation_alpha has 2 values",
         attrs={"activations": ["Sigmoid", "Tanh", "LeakyRelu"], "activation_alpha": [0.1, 0.2]})
    lstm("rnn_direction", "direction 'sideways' is not forward, reverse or bidirectional",
         op="RNN", w=(1, 4, 3), r=(1, 4, 4), n_out=2, attrs={"direction": "sideways"})
    lstm("lstm_layout", "layout 2 is not 0 or 1", attrs={"layout": 2})
    lstm("lstm_hidden_huge", "hidden_size 1099511627776 is not in [1, 16777216]",
         attrs={"hidden_size": 1 << 40})
    lstm("lstm_hidden_zero", "hidden_size 0 is not in", attrs={"hidden_size": 0})
    lstm("gru_clip", "clip -1 is not a positive number", op="GRU", w=(1, 12, 3), r=(1, 12, 4),
         n_out=2, attrs={"clip": -1.0})
    lstm("lstm_seq_symbolic", "sequence length (dim 0 of X 'x') is symbolic ('T')",
         xin=("x", F, ["T", 2, 3]))
    lstm("lstm_seq_too_long", "sequence length 5000 x 1 direction is more than the 4096 steps",
         xin=("x", F, [5000, 1, 3]))
    lstm("lstm_seq_lens_dtype", "sequence_lens 'sl' is f32; it must be i32",
         extra=[const("b", f(1, 32)), const("sl", f(2))])
    lstm("lstm_seq_lens_range", "sequence_lens[1] = 7 is outside [0, 5]",
         extra=[const("b", f(1, 32)), const("sl", np.array([5, 7], np.int32))])
    case("lstm_w_hostile", "LSTM", [x, ("w", F, [1, 1 << 27, 3]), const("r", f(1, 16, 4))],
         "past", opset=14, n_out=3)
    case("lstm_w_unknown", "LSTM", [x, ("w", F, [1, "G", 3]), ("r", F, [1, "G", "H"])],
         "not known at load", opset=14, n_out=3)


def check(cov, work, name, op, m, text, feed):
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    cmd = [cov, "inspect", path]
    if feed is not None:
        cmd = [cov, "run", path, "--target", "ref"]
        for i, a in enumerate(feed):
            p = os.path.join(work, "%s_in%d.npy" % (name, i))
            np.save(p, a)
            cmd += ["--input", p]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "timed out"
    where = "node 'bad' (%s)" % op
    if r.returncode != 1 or "Sanitizer" in r.stderr or "runtime error" in r.stderr:
        return "exit %d (expected 1):\n%s" % (r.returncode, r.stderr + r.stdout[-2000:])
    if where not in r.stderr or text not in r.stderr:
        return "the error does not name %s and '%s':\n%s" % (where, text, r.stderr)
    return None


def main():
    cov, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    for make in (unary_cases, binary_cases, reduce_cases, resize_cases, layout_cases, index_cases,
                 loss_cases, int8_cases, new_op_cases, rnn_cases):
        make()
    bad_ops_compute.compute_op_cases(case)
    bad_control.add_cases(CASES)  # control flow and data-dependent sizes
    bad_control.add_sequence_cases(CASES)
    fails = 0
    ops = set()
    for name, op, m, text, feed in CASES:
        why = check(cov, work, name, op, m, text, feed)
        ops.add(op)
        if why:
            print("FAIL %s: %s" % (name, why))
            fails += 1
        elif "-v" in sys.argv:
            print("ok   %s" % name)
    seq_io = bad_sequence_io.run_all(cov, work)  # hostile sequence / optional inputs
    for name, why in seq_io:
        if why:
            print("FAIL %s: %s" % (name, why))
            fails += 1
        elif "-v" in sys.argv:
            print("ok   %s" % name)
    print("%d cases over %d operators and %d sequence inputs, %d failures" % (len(CASES), len(ops),
                                                                             len(seq_io), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
