#!/usr/bin/env python3
"""make_dyn_batch.py OUT.onnx: a small CNN exported with a symbolic batch.

Input 'input' is [N, 3, 8, 8] and input 'shift' is [N, 5], both with the
dim_param N (binding one binds the other); the output [N, 5] is
MatMul(Flatten(Relu(Conv(input)))) + shift. Random weights, fixed seed."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(7)
w = nh.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.5, "w")
b = nh.from_array(rng.standard_normal((4,)).astype(np.float32), "b")
g = nh.from_array(rng.standard_normal((4 * 6 * 6, 5)).astype(np.float32) * 0.1, "g")
nodes = [
    h.make_node("Conv", ["input", "w", "b"], ["c"], name="conv"),
    h.make_node("Relu", ["c"], ["r"], name="relu"),
    h.make_node("Flatten", ["r"], ["f"], name="flatten"),
    h.make_node("MatMul", ["f", "g"], ["m"], name="matmul"),
    h.make_node("Add", ["m", "shift"], ["output"], name="add"),
]
graph = h.make_graph(
    nodes, "dyn_batch",
    [h.make_tensor_value_info("input", T.FLOAT, ["N", 3, 8, 8]),
     h.make_tensor_value_info("shift", T.FLOAT, ["N", 5])],
    [h.make_tensor_value_info("output", T.FLOAT, ["N", 5])], [w, b, g])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], producer_name="covenant-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
