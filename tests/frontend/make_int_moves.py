#!/usr/bin/env python3
"""make_int_moves.py OUT.onnx: run-time integers moved and run-time integers
used as positions. 'x' f32 [4] is cast to i64 ('to_int') and indexes a
constant table ('lookup': Gather on run-time indices); 'y' f32 [1, 2, 2, 2]
is quantized to i8 ('quant'), flattened ('flat': i8 data moved, nothing
read from it) and dequantized ('dequant')."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

inits = [nh.from_array(np.arange(30, dtype=np.float32).reshape(10, 3), "table"),
         nh.from_array(np.array(0.05, np.float32), "scale"), nh.from_array(np.array(0, np.int8), "zp")]
nodes = [
    h.make_node("Cast", ["x"], ["xi"], name="to_int", to=T.INT64),
    h.make_node("Gather", ["table", "xi"], ["g"], name="lookup"),
    h.make_node("Relu", ["g"], ["out"], name="relu"),
    h.make_node("QuantizeLinear", ["y", "scale", "zp"], ["yq"], name="quant"),
    h.make_node("Flatten", ["yq"], ["yf"], name="flat"),
    h.make_node("DequantizeLinear", ["yf", "scale", "zp"], ["out2"], name="dequant"),
]
graph = h.make_graph(nodes, "int_moves",
                     [h.make_tensor_value_info("x", T.FLOAT, [4]), h.make_tensor_value_info("y", T.FLOAT, [1, 2, 2, 2])],
                     [h.make_tensor_value_info("out", T.FLOAT, [4, 3]), h.make_tensor_value_info("out2", T.FLOAT, [1, 8])],
                     inits)
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], producer_name="covenant-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
