"""tests/gpu/make_codelet_models.py OUTDIR: models whose compute the GPU
path runs as codelet kernels lowered from their loop nests (none of these
operators had a hand-written GPU kernel): OUTDIR/hardswish.onnx (a conv,
HardSwish, HardSigmoid with ONNX attributes, a product; mobilenet_v3's
activations) and OUTDIR/codelet_zoo.onnx (element-wise functions, a
reduction over the last axis, LogSoftmax with its per-row scratch,
CumSum along a middle axis, a broadcast Sub, Atan and Pow)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)


def w(name, *shape):
    return nh.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def save(nodes, inits, inputs, outputs, name, opset=17):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                     [h.make_value_info(n, h.make_tensor_type_proto(T.FLOAT, None)) for n in outputs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))


save([h.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], name="conv"),
      h.make_node("HardSwish", ["c"], ["hs"], name="hswish"),
      h.make_node("HardSigmoid", ["hs"], ["hg"], alpha=0.25, beta=0.4, name="hsig"),
      h.make_node("Mul", ["hs", "hg"], ["y"], name="mul")],
     [w("w1", 8, 3, 3, 3), w("b1", 8)], [("x", [1, 3, 16, 16])], ["y"], "hardswish")

axes = nh.from_array(np.array([3], np.int64), "axes")
save([h.make_node("Floor", ["x"], ["f"], name="floor"),
      h.make_node("Sin", ["x"], ["s"], name="sin"),
      h.make_node("Add", ["f", "s"], ["a"], name="add"),
      h.make_node("Softplus", ["a"], ["sp"], name="softplus"),
      h.make_node("Elu", ["sp"], ["el"], alpha=0.7, name="elu"),
      h.make_node("Erf", ["el"], ["er"], name="erf"),
      h.make_node("ReduceSum", ["er", "axes"], ["rs"], keepdims=1, name="rsum"),
      h.make_node("LogSoftmax", ["er"], ["ls"], axis=-1, name="logsoftmax"),
      h.make_node("CumSum", ["ls", "cax"], ["cs"], name="cumsum"),
      h.make_node("Sub", ["cs", "rs"], ["d"], name="sub"),
      h.make_node("Atan", ["d"], ["at"], name="atan"),
      h.make_node("Pow", ["at", "two"], ["y"], name="pow")],
     [axes, nh.from_array(np.array(1, np.int64), "cax"), nh.from_array(np.array(2.0, np.float32), "two")], [("x", [2, 5, 6, 7])], ["y"], "codelet_zoo")
