#!/usr/bin/env python3
"""make_f16_cnn.py OUT.onnx: a small CNN exported in float16, as
torch's model.half() export writes one: f16 input, weights and output;
Conv + Relu + MaxPool, a depthwise Conv + Clip, GlobalAveragePool,
Flatten, Gemm, and a Cast to f16 of an f16 value (a no-op torch leaves).
Random weights, fixed seed."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(3)


def w(name, *shape, scale=0.3):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float16), name)


inits = [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 8, 1, 3, 3), w("b2", 8), w("g", 10, 8), w("gb", 10),
         nh.from_array(np.array(0, np.float16), "lo"), nh.from_array(np.array(6, np.float16), "hi")]
nodes = [
    h.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    h.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
    h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="dw", group=8, pads=[1, 1, 1, 1]),
    h.make_node("Clip", ["c2", "lo", "hi"], ["r2"], name="relu6"),
    h.make_node("GlobalAveragePool", ["r2"], ["gp"], name="gap"),
    h.make_node("Flatten", ["gp"], ["f"], name="flatten"),
    h.make_node("Gemm", ["f", "g", "gb"], ["y"], name="fc", transB=1),
    h.make_node("Cast", ["y"], ["output"], name="cast", to=T.FLOAT16),
]
graph = h.make_graph(nodes, "cnn_f16", [h.make_tensor_value_info("input", T.FLOAT16, [1, 3, 16, 16])],
                     [h.make_tensor_value_info("output", T.FLOAT16, [1, 10])], inits)
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], producer_name="covenant-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
