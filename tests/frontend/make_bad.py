#!/usr/bin/env python3
"""Regenerates the bad-input corpus in tests/frontend/bad/.

    /usr/bin/python3 tests/frontend/make_bad.py

Each case is a small file (NAME.onnx, sometimes with data files next to it);
NAME.expect holds the exact diagnostics `covenant inspect NAME.onnx` must
print (run from inside bad/), and the exit status must be 1. The .expect
files are written by hand below, next to the case that produces them, so that
a change in a message is a visible diff, never an automatic update.

bad/fuzz_*.onnx are not made here: they are inputs the fuzzer (fuzz/onnx_fuzz.c)
once crashed on, kept verbatim as regression tests with their diagnostics.
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "bad")

CASES = []


def case(name, expect):
    def wrap(fn):
        CASES.append((name, expect, fn))
        return fn
    return wrap


def model(nodes, inputs, outputs, inits=(), opset=13, ir=7):
    g = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, producer_name="make_bad", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def relu_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1, 4])],
                 [vi("y", [1, 4])])


def conv_model(w_shape=(2, 3, 3, 3), x_type=TensorProto.FLOAT, extra_inits=(), **attrs):
    w = numpy_helper.from_array(np.ones(w_shape, np.float32), "w")
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", **attrs)
    return model([n], [vi("x", [1, 3, 8, 8], x_type)], [vi("y", None)], [w, *extra_inits])


@case("empty", "empty.onnx: error: the model has no graph")
def _(path):
    open(path, "wb").close()


@case("text", "text.onnx: error: not a valid ONNX model: unexpected protobuf wire type 4 at byte 0")
def _(path):
    with open(path, "w") as f:
        f.write("this is not an onnx model\n")


@case("truncated", "truncated.onnx: error: not a valid ONNX model: truncated or corrupt protobuf "
      "at byte 12 (a field claims more bytes than remain)")
def _(path):
    data = conv_model().SerializeToString()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])


@case("deep", "deep.onnx: error: ONNX model nests messages more than 64 deep (at byte 257); refused")
def _(path):
    # graph -> node -> attribute(g) -> graph -> node -> ... 100 levels
    body = b""
    for _ in range(100):
        attr = b"\x0a\x01a" + b"\x32" + bytes(varint(len(body))) + body  # name, g
        node = b"\x2a" + bytes(varint(len(attr))) + attr                 # attribute
        body = b"\x0a" + bytes(varint(len(node))) + node                 # graph.node
    data = b"\x08\x07" + b"\x3a" + bytes(varint(len(body))) + body         # ir_version, graph
    with open(path, "wb") as f:
        f.write(data)


def varint(v):
    out = []
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return out


@case("unsupported_ops", """unsupported_ops.onnx: error: 3 nodes use operators covenant does not support:
  node 'rnd' (RandomNormalLike, opset 13)
  node 'StringNormalizer_2' (StringNormalizer, opset 13)
  node 'custom' (FancyOp, domain 'com.example', opset 1)""")
def _(path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("RandomNormalLike", ["a"], ["b"], name="rnd"),
             helper.make_node("StringNormalizer", ["a"], ["c"]),
             helper.make_node("FancyOp", ["a"], ["e"], name="custom", domain="com.example")]
    k = numpy_helper.from_array(np.array([1], np.int64), "k")
    g = helper.make_graph(nodes, "bad", [vi("x", [1, 4, 4])], [vi("b", None), vi("c", None), vi("e", None)],
                          initializer=[k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
    m.ir_version = 7
    save(m, path)


@case("complex64_input", "complex64_input.onnx: error: input 'x': has ONNX type COMPLEX64, which covenant "
      "does not support (it supports FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8, UINT8, INT16, UINT16, INT32, "
      "UINT32, INT64, UINT64 and BOOL)")
def _(path):
    save(model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2], TensorProto.COMPLEX64)],
               [vi("y", None, TensorProto.COMPLEX64)]), path)


@case("wrong_dtype", "wrong_dtype.onnx: error: node 'conv1' (Conv): input 'x' has dtype i64; Conv takes "
      "f32, f16, bf16 or f64")
def _(path):
    save(conv_model(x_type=TensorProto.INT64), path)


@case("missing_initializer", "missing_initializer.onnx: error: node 'conv1' (Conv): input 'w' is not "
      "produced by any node, nor a graph input or initializer (a missing initializer?)")
def _(path):
    m = conv_model()
    del m.graph.initializer[:]
    save(m, path)


@case("cycle", "cycle.onnx: error: the graph has a cycle: 2 nodes depend on their own outputs: "
      "'add1' (Add), 'add2' (Add)")
def _(path):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="add1"),
             helper.make_node("Add", ["a", "x"], ["b"], name="add2")]
    save(model(nodes, [vi("x", [2])], [vi("b", [2])]), path)


@case("dims_overflow", "dims_overflow.onnx: error: initializer 'w': the product of the dims overflows 64 bits")
def _(path):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40, 1 << 40])
    save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [2])], [vi("y", None)], [t]),
         path)


@case("dims_too_big", "dims_too_big.onnx: error: input 'x': its shape has more elements than covenant "
      "can hold (the product of the dims overflows or exceeds 4294967296 bytes)")
def _(path):
    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1 << 20, 1 << 20])],
               [vi("y", None)]), path)


@case("negative_dim", "negative_dim.onnx: error: initializer 'w': dim 0 is negative (-4)")
def _(path):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-4, 3])
    save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [2])], [vi("y", None)], [t]),
         path)


@case("zero_dim_input", "zero_dim_input.onnx: error: input 'z': dim 0 is -3; input dims must not be negative")
def _(path):
    nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="add")]
    save(model(nodes, [vi("x", [2, 0]), vi("z", [-3, 1])], [vi("y", None)]), path)


@case("raw_data_short", "raw_data_short.onnx: error: initializer 'w': raw_data holds 12 bytes, but 54 "
      "elements of FLOAT need 216")
def _(path):
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3, 3, 3], raw_data=b"\0" * 12)
    m = conv_model()
    m.graph.initializer[0].CopyFrom(w)
    save(m, path)


@case("typed_data_short", "typed_data_short.onnx: error: initializer 'w': tensor has 5 elements of data, "
      "but its shape needs 54")
def _(path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3, 3, 3], [1.0] * 54)
    del w.float_data[5:]
    m = conv_model()
    m.graph.initializer[0].CopyFrom(w)
    save(m, path)


def external(path, location, offset=None, length=None):
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3, 3, 3])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = w.external_data.add()
            e.key, e.value = k, str(v)
    m = conv_model()
    m.graph.initializer[0].CopyFrom(w)
    save(m, path)


@case("ext_parent", "ext_parent.onnx: error: initializer 'w': external data location '../weights.bin' "
      "leaves the model's folder ('..' is refused)")
def _(path):
    external(path, "../weights.bin")


@case("ext_absolute", "ext_absolute.onnx: error: initializer 'w': external data location '/etc/hostname' "
      "is an absolute path; it must be relative to the model's folder")
def _(path):
    external(path, "/etc/hostname")


@case("ext_offset", "ext_offset.onnx: error: initializer 'w': external data range 100+216 runs past the "
      "end of './ext_weights.bin' (216 bytes)")
def _(path):
    external(path, "ext_weights.bin", offset=100, length=216)


@case("ext_length", "ext_length.onnx: error: initializer 'w': external data holds 100 bytes, but the shape "
      "and dtype need 216")
def _(path):
    external(path, "ext_weights.bin", offset=0, length=100)


@case("ext_missing", "ext_missing.onnx: error: initializer 'w': external data file './no_such.bin' cannot "
      "be opened: No such file or directory")
def _(path):
    external(path, "no_such.bin")


@case("opset_too_new", "opset_too_new.onnx: error: ai.onnx opset 99 is not supported (covenant reads "
      "opsets 7 to 21)")
def _(path):
    m = relu_model()
    m.opset_import[0].version = 99
    save(m, path)


@case("opset_too_old", "opset_too_old.onnx: error: node 'add' (Add): the opset-6 version of Add is not "
      "supported (covenant implements opsets 7 to 21; re-export the model with a newer opset)")
def _(path):
    save(model([helper.make_node("Add", ["x", "x"], ["y"], name="add")], [vi("x", [2])], [vi("y", None)],
               opset=6), path)


@case("two_producers", "two_producers.onnx: error: node 'relu2' (Relu): output 'y' is also produced by node "
      "'relu1' (Relu); every tensor must have one producer")
def _(path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu1"),
             helper.make_node("Relu", ["x"], ["y"], name="relu2")]
    save(model(nodes, [vi("x", [2])], [vi("y", None)]), path)


@case("reshape_mismatch", "reshape_mismatch.onnx: error: node 'reshape' (Reshape): cannot reshape "
      "f32[2, 3] (6 elements) into 8 elements")
def _(path):
    s = numpy_helper.from_array(np.array([2, 4], np.int64), "shape")
    save(model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], [vi("x", [2, 3])],
               [vi("y", None)], [s]), path)


@case("conv_channels", "conv_channels.onnx: error: node 'conv1' (Conv): input 'x' has 3 channels, but the "
      "weights 'w' expect 4 x group 1")
def _(path):
    save(conv_model(w_shape=(2, 4, 3, 3)), path)


@case("conv_zero_stride", "conv_zero_stride.onnx: error: node 'conv1' (Conv): 'strides' value 0 is out of "
      "range (1 to 1073741824)")
def _(path):
    save(conv_model(strides=[0, 1]), path)


@case("attr_type", "attr_type.onnx: error: node 'conv1' (Conv): attribute 'group' must be an int, not float")
def _(path):
    save(conv_model(group=1.0), path)


@case("gather_index", "gather_index.onnx: error: node 'gather' (Gather): index 7 is out of range for axis 0 "
      "of size 3")
def _(path):
    i = numpy_helper.from_array(np.array([0, 7], np.int64), "i")
    save(model([helper.make_node("Gather", ["x", "i"], ["y"], name="gather")], [vi("x", [3, 2])],
               [vi("y", None)], [i]), path)


@case("no_output", "no_output.onnx: error: graph output 'nothing' is not produced by any node, input or "
      "initializer")
def _(path):
    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])], [vi("nothing", None)]),
         path)


@case("several_errors", """several_errors.onnx: error: initializer 'w': dim 0 is negative (-1)
several_errors.onnx: error: node 'relu' (Relu): input 'missing' is not produced by any node, nor a graph input or initializer (a missing initializer?)
several_errors.onnx: error: graph output 'nothing' is not produced by any node, input or initializer""")
def _(path):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-1])
    save(model([helper.make_node("Relu", ["missing"], ["y"], name="relu")], [vi("x", [2])],
               [vi("y", None), vi("nothing", None)], [t]), path)


# ---- the operators beyond the first frontend's: one bad use each (wrong rank, unsupported
# mode, a non-constant where a constant is required, wrong dtypes) --------

def one_node(op, ins, attrs=None, inits=(), inputs=None, opset=13, outs=("y",)):
    n = helper.make_node(op, ins, list(outs), name="n", **(attrs or {}))
    return model([n], inputs or [vi("x", [1, 4, 4, 4])], [vi(o, None) for o in outs], inits, opset)


def i64(name, vals):
    return numpy_helper.from_array(np.array(vals, np.int64), name)


def f32(name, vals):
    return numpy_helper.from_array(np.array(vals, np.float32), name)


@case("resize_mode", "resize_mode.onnx: error: node 'n' (Resize): mode 'area' is not nearest, "
      "linear or cubic")
def _(path):
    save(one_node("Resize", ["x", "", "s"], {"mode": "area"}, [f32("s", [1, 1, 2, 2])]), path)


@case("resize_ctm", "resize_ctm.onnx: error: node 'n' (Resize): coordinate_transformation_mode "
      "'half_pixel_symmetric' is not defined in opset 13")
def _(path):
    save(one_node("Resize", ["x", "", "s"], {"coordinate_transformation_mode": "half_pixel_symmetric"},
                  [f32("s", [1, 1, 2, 2])]), path)


@case("resize_scales_and_sizes", "resize_scales_and_sizes.onnx: error: node 'n' (Resize): needs "
      "exactly one of 'scales' and 'sizes' (got both)")
def _(path):
    save(one_node("Resize", ["x", "", "s", "z"], {}, [f32("s", [1, 1, 2, 2]), i64("z", [1, 4, 8, 8])]),
         path)


@case("resize_antialias", "resize_antialias.onnx: error: node 'n' (Resize): antialias=1 is not "
      "supported")
def _(path):
    save(one_node("Resize", ["x", "", "s"], {"antialias": 1, "mode": "linear"},
                  [f32("s", [1, 1, 0.5, 0.5])], opset=18), path)


@case("depth_to_space_rank", "depth_to_space_rank.onnx: error: node 'n' (DepthToSpace): input 'x' "
      "has rank 3; expected 4")
def _(path):
    save(one_node("DepthToSpace", ["x"], {"blocksize": 2}, inputs=[vi("x", [4, 4, 4])]), path)


@case("cumsum_axis_float", "cumsum_axis_float.onnx: error: node 'n' (CumSum): axis 'ax' must be "
      "int32 or int64")
def _(path):
    save(one_node("CumSum", ["x", "ax"], {}, [f32("ax", 1)], inputs=[vi("x", [2, 3])]), path)


@case("topk_k_range", "topk_k_range.onnx: error: node 'n' (TopK): K = 5 is out of range for axis "
      "size 3")
def _(path):
    save(one_node("TopK", ["x", "k"], {}, [i64("k", [5])], inputs=[vi("x", [2, 3])], outs=("v", "i")),
         path)


@case("where_condition", "where_condition.onnx: error: node 'n' (Where): input 'c' has dtype f32; "
      "Where takes bool")
def _(path):
    save(one_node("Where", ["c", "x", "x"], inputs=[vi("c", [2]), vi("x", [2])]), path)


@case("mod_float", "mod_float.onnx: error: node 'n' (Mod): Mod of floating-point inputs needs "
      "fmod=1 (the ONNX rule)")
def _(path):
    save(one_node("Mod", ["x", "x"], inputs=[vi("x", [2])]), path)


@case("argmax_axis", "argmax_axis.onnx: error: node 'n' (ArgMax): axis 5 is out of range for rank 4")
def _(path):
    save(one_node("ArgMax", ["x"], {"axis": 5}), path)


@case("gather_elements_rank", "gather_elements_rank.onnx: error: node 'n' (GatherElements): data "
      "and indices must have the same rank >= 1 (got 4 and 1)")
def _(path):
    save(one_node("GatherElements", ["x", "i"], {}, [i64("i", [0])]), path)


@case("trilu_rank", "trilu_rank.onnx: error: node 'n' (Trilu): input 'x' has rank 1; expected >= 2")
def _(path):
    save(one_node("Trilu", ["x"], inputs=[vi("x", [4])], opset=14), path)


@case("reduce_axes_input", "reduce_axes_input.onnx: error: node 'n' (ReduceMax): takes 'axes' as an "
      "attribute before opset 18, not as an input")
def _(path):
    save(one_node("ReduceMax", ["x", "a"], {}, [i64("a", [1])]), path)


@case("onehot_values", "onehot_values.onnx: error: node 'n' (OneHot): values 'v' must be [off, on]")
def _(path):
    save(one_node("OneHot", ["i", "d", "v"], {}, [i64("i", [1, 2]), i64("d", [3]), f32("v", [0, 1, 2])],
                  inputs=[]), path)


@case("not_bool", "not_bool.onnx: error: node 'n' (Not): input 'x' has dtype f32; Not takes bool")
def _(path):
    save(one_node("Not", ["x"]), path)


@case("scatter_nd_updates", "scatter_nd_updates.onnx: error: node 'n' (ScatterND): updates 'u' has "
      "3 elements; expected 64")
def _(path):
    save(one_node("ScatterND", ["x", "i", "u"], {}, [i64("i", [[0]]), f32("u", [1, 2, 3])]), path)


def lstm_weights(hidden=2, inp=3, gates=4):
    return [f32("w", np.zeros((1, gates * hidden, inp))), f32("r", np.zeros((1, gates * hidden, hidden)))]


@case("lstm_symbolic_seq", "lstm_symbolic_seq.onnx: error: node 'n' (LSTM): the sequence length "
      "(dim 0 of X 'x') is symbolic ('T'); covenant unrolls the recurrence over a sequence length "
      "known at load (export the model with a fixed sequence length)")
def _(path):
    save(one_node("LSTM", ["x", "w", "r"], {"hidden_size": 2}, lstm_weights(),
                  inputs=[vi("x", ["T", 1, 3])], opset=14, outs=("y", "y_h")), path)


@case("gru_activation", "gru_activation.onnx: error: node 'n' (GRU): activation 'Gelu' is not one "
      "the recurrent operators define (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
      "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)")
def _(path):
    save(one_node("GRU", ["x", "w", "r"], {"hidden_size": 2, "activations": ["Sigmoid", "Gelu"]},
                  lstm_weights(gates=3), inputs=[vi("x", [4, 1, 3])], opset=14), path)


@case("loop_body_name", "loop_body_name.onnx: error: node 'add' (Add): in subgraph 'body' of node "
      "'loop' (Loop): input 'nowhere' is not produced by any node, nor a graph input or initializer "
      "(a missing initializer?)")
def _(path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "nowhere"], ["v_out"], name="add")],
        "body", [vi("i", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL), vi("v", [1, 4])],
        [vi("c_out", [], TensorProto.BOOL), vi("v_out", None)])
    n = helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop", body=body)
    save(model([n], [vi("x", [1, 4])], [vi("y", None)], [i64("m", 3)], 13), path)


def main():
    os.makedirs(OUT, exist_ok=True)
    # The valid external data file the ext_* cases point into (216 bytes).
    np.ones((2, 3, 3, 3), np.float32).tofile(os.path.join(OUT, "ext_weights.bin"))
    for name, expect, fn in CASES:
        fn(os.path.join(OUT, name + ".onnx"))
        with open(os.path.join(OUT, name + ".expect"), "w") as f:
            f.write(expect + "\n")


if __name__ == "__main__":
    main()
