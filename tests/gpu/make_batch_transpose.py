"""Writes a model whose Relu reads a channels-last transpose (perm 0, 2,
3, 1) of a batch-2 NCHW input, as ConvNeXt's channel LayerNorm does. The
capture joins the last pixel of image 0 and the first channel of image 1
into one run (their sources are adjacent), so the runs are uneven; cut to
their common length they are one strided copy. Usage:
make_batch_transpose.py OUT.onnx"""
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper as h

nodes = [h.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1], name="t"),
         h.make_node("Relu", ["t"], ["y"], name="r")]
g = h.make_graph(nodes, "batch_transpose", [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4, 5])],
                 [h.make_tensor_value_info("y", T.FLOAT, [2, 4, 5, 3])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
