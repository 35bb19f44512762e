"""Writes models whose Gathers read positions from run-time integers, on
other axes than an embedding lookup's: a Gather on the last axis of a
run-time f32 value at i64 ids given as a model input, the same at ids - 8
(negative: ONNX wraps them, V + i; the subtraction an i64 kernel), and a
Gather on axis 1 of a constant table. The GPU path compiles each as the
gather kernel (gpu_lower_gather.c); test_gpu_model_emulate compares the
compiled plan with the reference interpreter on random ids in range.
Usage: make_gather_models.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

X = h.make_tensor_value_info("x", T.FLOAT, [2, 5, 8])
IDS = h.make_tensor_value_info("ids", T.INT64, [2, 3])
eight = h.make_tensor("eight", T.INT64, [], [8])
w = h.make_tensor("w", T.FLOAT, [3, 8], np.linspace(-1, 1, 24).astype(np.float32).tolist())
nodes = [h.make_node("Relu", ["x"], ["r"], name="r1"),
         h.make_node("Gather", ["r", "ids"], ["g1"], axis=2, name="g_last"),
         h.make_node("Sub", ["ids", "eight"], ["neg"], name="sub8"),
         h.make_node("Gather", ["r", "neg"], ["g2"], axis=-1, name="g_neg"),
         h.make_node("Concat", ["g1", "g2"], ["y1"], axis=0, name="cat"),
         h.make_node("Gather", ["w", "ids"], ["g3"], axis=1, name="g_table"),
         h.make_node("Sigmoid", ["g3"], ["y2"], name="s1")]
g = h.make_graph(nodes, "gather_axes", [X, IDS],
                 [h.make_tensor_value_info("y1", T.FLOAT, [4, 5, 2, 3]),
                  h.make_tensor_value_info("y2", T.FLOAT, [3, 2, 3])], [eight, w])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(sys.argv[1], "gather_axes.onnx"))
