"""Writes a model whose outputs are pure layout (Transpose, Slice):
no compute group, so each output is a copy step of no group. Their kernels
were named "covenant_g-1_0_copy", which LLVM's NVPTX backend rejects with an
abort ("Symbol name with unsupported characters"); two such outputs would
also have shared one name. Usage: make_layout_outputs.py OUT.onnx"""
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper as h

starts = h.make_tensor("starts", T.INT64, [1], [1])
ends = h.make_tensor("ends", T.INT64, [1], [3])
axes = h.make_tensor("axes", T.INT64, [1], [0])
nodes = [h.make_node("Slice", ["x", "starts", "ends", "axes"], ["z"], name="s"),
         h.make_node("Transpose", ["x"], ["w"], perm=[1, 0], name="t")]
g = h.make_graph(nodes, "layout_outputs", [h.make_tensor_value_info("x", T.FLOAT, [4, 8])],
                 [h.make_tensor_value_info("z", T.FLOAT, [2, 8]),
                  h.make_tensor_value_info("w", T.FLOAT, [8, 4])], [starts, ends, axes])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
