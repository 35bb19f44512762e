"""Writes models whose compute nodes make a copy of a run-time value
before their first codelet call, each in a layer group the GPU model
compiler must compile (the copy as a copy step), and InstanceNormalization
through a reshape as exporters write GroupNorm with one group:

  reduce_mid.onnx   ReduceMean over the middle axes 1, 2 of a channels-last
                    [2, 5, 6, 16] value (a Swin head's pooling), ReduceMax
                    over axis 1 of a [2, 6, 20] value, ReduceSum over axes
                    0, 2 with keepdims: each moves the reduced axes last
                    (a transposed copy) and calls its codelet
  groupnorm1.onnx   GroupNorm(1 group) exported as Reshape [N, 1, -1] ->
                    InstanceNormalization (scale 1, bias 0) -> Reshape ->
                    Mul / Add of the per-channel affine (PoolFormer's norm)

Usage: make_inner_copies.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

RNG = np.random.default_rng(7)


def const(name, a):
    return nh.from_array(np.asarray(a, dtype=a.dtype), name)


def save(nodes, name, inputs, outputs, inits, out):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


def reduce_mid(out):
    f = lambda *s: RNG.standard_normal(s).astype(np.float32)
    inits = [const("w0", f(16, 8)), const("s1", f(20)), const("s2", f(1, 1, 9)),
             const("sh0", np.array([2, 6, 20], np.int64))]
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"),
             h.make_node("ReduceMean", ["r"], ["m"], axes=[1, 2], keepdims=0, name="mean_hw"),
             h.make_node("MatMul", ["m", "w0"], ["y0"], name="head"),
             h.make_node("Mul", ["v", "s1"], ["vs"], name="scale"),
             h.make_node("ReduceMax", ["vs"], ["y1"], axes=[1], keepdims=0, name="max_mid"),
             h.make_node("Add", ["u", "s2"], ["us"], name="shift"),
             h.make_node("ReduceSum", ["us", "ax"], ["y2"], keepdims=1, name="sum_outer")]
    inits.append(const("ax", np.array([0, 2], np.int64)))
    ins = [h.make_tensor_value_info("x", T.FLOAT, [2, 5, 6, 16]),
           h.make_tensor_value_info("v", T.FLOAT, [2, 6, 20]),
           h.make_tensor_value_info("u", T.FLOAT, [3, 4, 9])]
    outs = [h.make_tensor_value_info("y0", T.FLOAT, [2, 8]),
            h.make_tensor_value_info("y1", T.FLOAT, [2, 20]),
            h.make_tensor_value_info("y2", T.FLOAT, [1, 4, 1])]
    save(nodes, "reduce_mid", ins, outs, [i for i in inits if i.name != "sh0"], out)


def groupnorm1(out):
    c = 8
    inits = [const("sh1", np.array([2, 1, -1], np.int64)), const("sh4", np.array([2, c, 5, 5], np.int64)),
             const("one", np.ones(1, np.float32)), const("zero", np.zeros(1, np.float32)),
             const("gamma", RNG.uniform(0.5, 1.5, (c, 1, 1)).astype(np.float32)),
             const("beta", RNG.uniform(-0.5, 0.5, (c, 1, 1)).astype(np.float32)),
             const("w", RNG.standard_normal((c, c, 1, 1)).astype(np.float32) * 0.3)]
    nodes = [h.make_node("Conv", ["x", "w"], ["cv"], name="conv"),
             h.make_node("Reshape", ["cv", "sh1"], ["r1"], name="flat"),
             h.make_node("InstanceNormalization", ["r1", "one", "zero"], ["n"], epsilon=1e-5,
                         name="norm1/InstanceNormalization"),
             h.make_node("Reshape", ["n", "sh4"], ["r4"], name="unflat"),
             h.make_node("Mul", ["r4", "gamma"], ["g"], name="affine_mul"),
             h.make_node("Add", ["g", "beta"], ["y"], name="affine_add")]
    save(nodes, "groupnorm1", [h.make_tensor_value_info("x", T.FLOAT, [2, c, 5, 5])],
         [h.make_tensor_value_info("y", T.FLOAT, [2, c, 5, 5])], inits, out)


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    reduce_mid(sys.argv[1])
    groupnorm1(sys.argv[1])
