#!/usr/bin/env python3
"""make_small_scale.py OUT.onnx: a ConvNeXt MLP at its initial layer scale.

x [1, 16, 8, 8] -> Conv 1x1 (16 -> 64) -> Relu -> Conv 1x1 (64 -> 16,
weights of standard deviation 0.02 as ConvNeXt initialises them) -> Mul by
gamma [16, 1, 1] = 1e-6 (ConvNeXt's initial layer scale) -> output. Folded
into the second conv's weights, gamma would take them to about 4e-8, at
f16's smallest subnormal (6e-8), and the f16 kernel's result would lose
all precision; the output is the scaled branch alone, so its relative error
shows that. Random weights, fixed seed."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(5)
inits = [
    nh.from_array(rng.standard_normal((64, 16, 1, 1)).astype(np.float32) * 0.25, "w1"),
    nh.from_array(rng.standard_normal(64).astype(np.float32) * 0.1, "b1"),
    nh.from_array(rng.standard_normal((16, 64, 1, 1)).astype(np.float32) * 0.02, "w2"),
    nh.from_array(np.zeros(16, np.float32), "b2"),
    nh.from_array(np.full((16, 1, 1), 1e-6, np.float32), "gamma"),
]
nodes = [
    h.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="fc1"),
    h.make_node("Relu", ["c1"], ["r1"], name="act"),
    h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="fc2"),
    h.make_node("Mul", ["c2", "gamma"], ["output"], name="scale"),
]
graph = h.make_graph(nodes, "small_scale", [h.make_tensor_value_info("input", T.FLOAT, [1, 16, 8, 8])],
                     [h.make_tensor_value_info("output", T.FLOAT, [1, 16, 8, 8])], inits)
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="covenant-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
