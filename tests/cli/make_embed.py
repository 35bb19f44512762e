#!/usr/bin/env python3
"""make_embed.py OUT.onnx: a tiny BERT-style embedding with integer inputs.

input_ids i64 [2, 5] index a 50-row word table through a Reshape,
token_type_ids i64 [2, 5] a 2-row type table, attention_mask i64 [2, 5]
becomes the additive mask (1 - mask) * -10000 through a Cast, and a bool
'keep' [2, 5] selects (Where) between the two; a u8 'scale' [8] is cast
to f32 and multiplied in. Outputs: 'hidden' f32 [2, 5, 8] and 'bias'
f32 [2, 1, 1, 5]. Random weights, fixed seed."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(5)
inits = [nh.from_array(rng.standard_normal((50, 8)).astype(np.float32), "word"),
         nh.from_array(rng.standard_normal((2, 8)).astype(np.float32), "type"),
         nh.from_array(np.array([10], np.int64), "flat"),
         nh.from_array(np.array([2, 5, 8], np.int64), "shape3"),
         nh.from_array(np.array(1.0, np.float32), "one"),
         nh.from_array(np.array(-10000.0, np.float32), "neg"),
         nh.from_array(np.array([1, 2], np.int64), "axes")]
nodes = [
    h.make_node("Reshape", ["input_ids", "flat"], ["ids_flat"], name="ids_flat"),
    h.make_node("Gather", ["word", "ids_flat"], ["we_flat"], name="word_embed"),
    h.make_node("Reshape", ["we_flat", "shape3"], ["we"], name="we"),
    h.make_node("Gather", ["type", "token_type_ids"], ["te"], name="type_embed"),
    h.make_node("Add", ["we", "te"], ["sum"], name="sum"),
    h.make_node("Where", ["keep3", "sum", "te"], ["sel"], name="select"),
    h.make_node("Unsqueeze", ["keep", "two"], ["keep3"], name="keep3"),
    h.make_node("Cast", ["scale"], ["scale_f"], name="scale_f", to=T.FLOAT),
    h.make_node("Mul", ["sel", "scale_f"], ["hidden"], name="hidden"),
    h.make_node("Cast", ["attention_mask"], ["mask_f"], name="mask_f", to=T.FLOAT),
    h.make_node("Unsqueeze", ["mask_f", "axes"], ["mask4"], name="mask4"),
    h.make_node("Sub", ["one", "mask4"], ["inv"], name="inv"),
    h.make_node("Mul", ["inv", "neg"], ["bias"], name="bias"),
]
inits.append(nh.from_array(np.array([2], np.int64), "two"))
graph = h.make_graph(
    nodes, "embed",
    [h.make_tensor_value_info("input_ids", T.INT64, [2, 5]),
     h.make_tensor_value_info("token_type_ids", T.INT64, [2, 5]),
     h.make_tensor_value_info("attention_mask", T.INT64, [2, 5]),
     h.make_tensor_value_info("keep", T.BOOL, [2, 5]),
     h.make_tensor_value_info("scale", T.UINT8, [8])],
    [h.make_tensor_value_info("hidden", T.FLOAT, [2, 5, 8]),
     h.make_tensor_value_info("bias", T.FLOAT, [2, 1, 1, 5])], inits)
graph.node.sort(key=lambda n: ["ids_flat", "word_embed", "we", "type_embed", "sum", "keep3", "select", "scale_f",
                               "hidden", "mask_f", "mask4", "inv", "bias"].index(n.name))
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], producer_name="covenant-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
