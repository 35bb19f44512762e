#!/usr/bin/env python3
"""make_layer_scale.py OUT.onnx [BATCH]: a ConvNeXt block's MLP tail.

x [N, 16, 8, 8] -> depthwise Conv 3x3 (pad 1) -> LayerNorm over the
channels (between Transposes to and from NHWC) -> Conv 1x1 (16 -> 64) -> Relu -> Conv 1x1 (64 -> 16) ->
Mul by gamma [16, 1, 1] (a layer scale, a constant) -> Add x (the
residual) -> depthwise Conv 3x3 (pad 1: the next block's, reading the
sum as f32 NCHW) -> output. The frontend folds
gamma into the second conv's weights and bias; the GPU model compiler
then adds the residual in that conv's epilogue. Gamma spans four decades
(1e-3 .. 10) so that a fold along the wrong axis shows. Random weights,
fixed seed."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

n = int(sys.argv[2]) if len(sys.argv) > 2 else 1
rng = np.random.default_rng(11)
inits = [
    nh.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "ln_w"),
    nh.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, "ln_b"),
    nh.from_array(rng.standard_normal((16, 1, 3, 3)).astype(np.float32) * 0.3, "wd"),
    nh.from_array(rng.standard_normal((64, 16, 1, 1)).astype(np.float32) * 0.25, "w1"),
    nh.from_array(rng.standard_normal(64).astype(np.float32) * 0.1, "b1"),
    nh.from_array(rng.standard_normal((16, 64, 1, 1)).astype(np.float32) * 0.125, "w2"),
    nh.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, "b2"),
    nh.from_array((10.0 ** rng.uniform(-3, 1, 16)).astype(np.float32).reshape(16, 1, 1), "gamma"),
    nh.from_array(rng.standard_normal((16, 1, 3, 3)).astype(np.float32) * 0.3, "w3"),
]
nodes = [
    h.make_node("Conv", ["input", "wd"], ["d"], name="dwconv", group=16, pads=[1, 1, 1, 1]),
    h.make_node("Transpose", ["d"], ["dt"], name="to_nhwc", perm=[0, 2, 3, 1]),
    h.make_node("LayerNormalization", ["dt", "ln_w", "ln_b"], ["lt"], name="norm", axis=-1),
    h.make_node("Transpose", ["lt"], ["l"], name="to_nchw", perm=[0, 3, 1, 2]),
    h.make_node("Conv", ["l", "w1", "b1"], ["c1"], name="fc1"),
    h.make_node("Relu", ["c1"], ["r1"], name="act"),
    h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="fc2"),
    h.make_node("Mul", ["c2", "gamma"], ["s"], name="scale"),
    h.make_node("Add", ["s", "input"], ["y"], name="residual"),
    h.make_node("Conv", ["y", "w3"], ["output"], name="head", group=16, pads=[1, 1, 1, 1]),
]
graph = h.make_graph(nodes, "layer_scale", [h.make_tensor_value_info("input", T.FLOAT, [n, 16, 8, 8])],
                     [h.make_tensor_value_info("output", T.FLOAT, [n, 16, 8, 8])], inits)
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="covenant-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
