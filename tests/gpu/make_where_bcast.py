#!/usr/bin/env python3
"""make_where_bcast.py DIR: Where nodes whose run-time operands broadcast.
where_bcast.onnx: a BERT-style attention mask (an f32 [2, 1, 1, 5] input
compared with 0: a run-time bool [B, 1, 1, S]) selecting [2, 3, 5, 5]
scores or a -1e4 fill before a softmax; a run-time [2, 1, 5, 1] bias
selected where the scores are positive, else the scores; and a rank-5
condition [2, 1, 4, 1, 3] broadcast on two separate axes against
[2, 3, 4, 2, 3] values. Fixed seed."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

inputs = [h.make_tensor_value_info("scores", T.FLOAT, [2, 3, 5, 5]),
          h.make_tensor_value_info("mask", T.FLOAT, [2, 1, 1, 5]),
          h.make_tensor_value_info("bias", T.FLOAT, [2, 1, 5, 1]),
          h.make_tensor_value_info("v5", T.FLOAT, [2, 3, 4, 2, 3]),
          h.make_tensor_value_info("c5", T.FLOAT, [2, 1, 4, 1, 3])]
inits = [nh.from_array(np.array(0.0, np.float32), "zero"), nh.from_array(np.array(-1e4, np.float32), "fill"),
         nh.from_array(np.array(0.25, np.float32), "quarter")]
nodes = [
    h.make_node("Greater", ["mask", "zero"], ["keep"], name="mask_bool"),
    h.make_node("Where", ["keep", "scores", "fill"], ["masked"], name="mask_where"),
    h.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
    h.make_node("Greater", ["scores", "zero"], ["pos"], name="positive"),
    h.make_node("Where", ["pos", "bias", "scores"], ["mixed"], name="bias_where"),
    h.make_node("Greater", ["c5", "quarter"], ["c5b"], name="c5_bool"),
    h.make_node("Where", ["c5b", "v5", "fill"], ["sel5"], name="where5"),
]
outputs = [h.make_tensor_value_info("probs", T.FLOAT, [2, 3, 5, 5]),
           h.make_tensor_value_info("mixed", T.FLOAT, [2, 3, 5, 5]),
           h.make_tensor_value_info("sel5", T.FLOAT, [2, 3, 4, 2, 3])]
g = h.make_graph(nodes, "where_bcast", inputs, outputs, inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="make_where_bcast")
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, os.path.join(out, "where_bcast.onnx"))
