"""Writes the models of a silent wrong result on the GPU path: Casts that
change run-time values, which the frontend runs as data movement. The GPU
capture pushed its (buffer, index) tag patterns through them; f32 -> f16 ->
f32 maps every tag of passes 0/1 to 0 and of pass 2 to 0x40000000, which
decoded consistently as "element 0 of buffer 0" (a broadcast): compiled,
emulated 1.7 off the reference, and no check fired. Each model must now be
refused naming its Cast node on the GPU path, and run right on ref and the
NPUs: each model's input and numpy's output are written beside it
(NAME_input.npy, NAME_want.npy).
Usage: make_cast_models.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h


RNG = np.random.default_rng(15)


def save(name, nodes, inputs, outputs, inits=(), ref=None):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    out = os.path.join(sys.argv[1], name)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), out + ".onnx")
    # values with fractions and beyond f16's precision: every cast changes them
    x = (RNG.uniform(-3, 3, size=(2, 8)) + 1e-4).astype(np.float32)
    if inputs[0].type.tensor_type.elem_type == T.FLOAT16:
        x = x.astype(np.float16)
    np.save(out + "_input.npy", x)
    np.save(out + "_want.npy", np.ascontiguousarray(ref(x), dtype=np.float32))  # C order: covenant reads it


def sigmoid(v):
    return 1 / (1 + np.exp(-v.astype(np.float64)))


X = h.make_tensor_value_info("x", T.FLOAT, [2, 8])
Y = h.make_tensor_value_info("y", T.FLOAT, [2, 8])
# the 2-node repro: f32 -> f16 -> f32 on the model input
save("cast_f16_roundtrip", [h.make_node("Cast", ["x"], ["h"], to=T.FLOAT16, name="c1"),
                            h.make_node("Cast", ["h"], ["y"], to=T.FLOAT, name="c2")], [X], [Y],
     ref=lambda x: x.astype(np.float16).astype(np.float32))
# f32 -> i32 -> f32 (truncation) between two compute groups
save("cast_i32_roundtrip", [h.make_node("Relu", ["x"], ["r"], name="r1"),
                            h.make_node("Cast", ["r"], ["i"], to=T.INT32, name="c1"),
                            h.make_node("Cast", ["i"], ["f"], to=T.FLOAT, name="c2"),
                            h.make_node("Sigmoid", ["f"], ["y"], name="s1")], [X], [Y],
     ref=lambda x: sigmoid(np.maximum(x, 0).astype(np.int32).astype(np.float32)))
# an f16 model input cast to f32 before a compute group
save("cast_f16_input", [h.make_node("Cast", ["x"], ["f"], to=T.FLOAT, name="c1"),
                        h.make_node("Relu", ["f"], ["y"], name="r1")],
     [h.make_tensor_value_info("x", T.FLOAT16, [2, 8])], [Y], ref=lambda x: np.maximum(x.astype(np.float32), 0))
# CastLike to f16 and back, feeding a transpose
like = h.make_tensor("like", T.FLOAT16, [1], [0])
save("castlike_f16", [h.make_node("CastLike", ["x", "like"], ["h"], name="c1"),
                      h.make_node("Cast", ["h"], ["f"], to=T.FLOAT, name="c2"),
                      h.make_node("Transpose", ["f"], ["y"], perm=[1, 0], name="t1")],
     [X], [h.make_tensor_value_info("y", T.FLOAT, [8, 2])], [like], ref=lambda x: x.astype(np.float16).astype(np.float32).T)
# TopK selects by value: which elements it copies depends on run-time data
k = h.make_tensor("k", T.INT64, [1], [3])
save("topk_values", [h.make_node("Relu", ["x"], ["r"], name="r1"),
                     h.make_node("TopK", ["r", "k"], ["y", "i"], axis=1, name="tk")],
     [X], [h.make_tensor_value_info("y", T.FLOAT, [2, 3])], [k], ref=lambda x: -np.sort(-np.maximum(x, 0), axis=1)[:, :3])
# a cast to the same type is a copy: compiles and matches
save("cast_same_type", [h.make_node("Relu", ["x"], ["r"], name="r1"),
                        h.make_node("Cast", ["r"], ["d"], to=T.FLOAT, name="c1"),
                        h.make_node("Cast", ["d"], ["f"], to=T.FLOAT, name="c2"),
                        h.make_node("Sigmoid", ["f"], ["y"], name="s1")], [X], [Y],
     ref=lambda x: sigmoid(np.maximum(x, 0)))
# run-time casts as kernels (codelets/cast.cdl): f32 -> i32 saturating
# (|x| * 3e9 passes 2^31), f32 -> i64 truncating toward zero, f32 -> bool
# (relu's zeros false), each cast back to f32 and concatenated
c3e9 = h.make_tensor("c3e9", T.FLOAT, [], [3e9])
c1e9 = h.make_tensor("c1e9", T.FLOAT, [], [1e-9])
c7 = h.make_tensor("c7", T.FLOAT, [], [7.5])
save("cast_kernels", [h.make_node("Mul", ["x", "c3e9"], ["a0"], name="m1"),
                      h.make_node("Cast", ["a0"], ["a1"], to=T.INT32, name="ci32"),
                      h.make_node("Cast", ["a1"], ["a2"], to=T.FLOAT, name="cf1"),
                      h.make_node("Mul", ["a2", "c1e9"], ["a"], name="m2"),
                      h.make_node("Mul", ["x", "c7"], ["b0"], name="m3"),
                      h.make_node("Cast", ["b0"], ["b1"], to=T.INT64, name="ci64"),
                      h.make_node("Cast", ["b1"], ["b"], to=T.FLOAT, name="cf2"),
                      h.make_node("Relu", ["x"], ["c0"], name="r1"),
                      h.make_node("Cast", ["c0"], ["c1"], to=T.BOOL, name="cb"),
                      h.make_node("Cast", ["c1"], ["c"], to=T.FLOAT, name="cf3"),
                      h.make_node("Concat", ["a", "b", "c"], ["y"], axis=0, name="cat")],
     [X], [h.make_tensor_value_info("y", T.FLOAT, [6, 8])], [c3e9, c1e9, c7],
     ref=lambda x: np.concatenate([
         np.clip(np.trunc((x * np.float32(3e9)).astype(np.float64)), -2**31, 2**31 - 1).astype(np.int32)
         .astype(np.float32) * np.float32(1e-9),
         np.trunc(x * np.float32(7.5)).astype(np.int64).astype(np.float32),
         (np.maximum(x, 0) != 0).astype(np.float32)]))
# integer and bool results as model outputs: ArgMax's i64 indices, a
# comparison's bool mask (buffers of their dtype, not f32)
save("int_outputs", [h.make_node("Relu", ["x"], ["r"], name="r1"),
                     h.make_node("ArgMax", ["r"], ["y"], axis=1, keepdims=0, name="am"),
                     h.make_node("Less", ["x", "r"], ["m"], name="lt")],
     [X], [h.make_tensor_value_info("y", T.INT64, [2]), h.make_tensor_value_info("m", T.BOOL, [2, 8])],
     ref=lambda x: np.argmax(np.maximum(x, 0), axis=1))
# CastLike to i32 (the type of a constant) and back: a cast kernel too
like_i32 = h.make_tensor("like_i32", T.INT32, [1], [0])
save("castlike_i32", [h.make_node("Mul", ["x", "c7"], ["s"], name="m1"),
                      h.make_node("CastLike", ["s", "like_i32"], ["i"], name="c1"),
                      h.make_node("Cast", ["i"], ["y"], to=T.FLOAT, name="c2")],
     [X], [Y], [c7, like_i32], ref=lambda x: np.trunc(x * np.float32(7.5)).astype(np.int32).astype(np.float32))
