#!/usr/bin/env python3
"""make_int8_edges.py DIR: four small quantized models at the edges of the
GPU model path's 8-bit values. q_out.onnx: 8-bit model outputs, a
QLinearConv's i8 result (a padded 3x3 conv of an i8 input, i32 bias) and
the input quantized to u8 (zero point 128) and reshaped. q_transpose.onnx: an i8 tensor transposed between
QuantizeLinear and DequantizeLinear, and q_transpose_out.onnx the same
as the model's output (rearranged 8-bit values, moved as they are).
q_concat.onnx: the i8 results of two QLinearConv branches concatenated
along the channels and dequantized, and two u8 quantizations of the
input concatenated along the width and transposed as an 8-bit model
output. q_int32.onnx: MatMulInteger and ConvInteger with
an input zero point, their i32 accumulators the model's outputs. Fixed seed."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(8)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inits, inputs, outputs):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="make_int8_edges")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


x = h.make_tensor_value_info("input", T.FLOAT, [1, 4, 6, 6])
inits = [nh.from_array(np.array(0.02, np.float32), "xs"), nh.from_array(np.array(128, np.uint8), "xz"),
         nh.from_array(np.array(-3, np.int8), "xzi"),
         nh.from_array(np.array(0.03, np.float32), "ys"), nh.from_array(np.array(-5, np.int8), "yz"),
         nh.from_array(rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8), "w"),
         nh.from_array(np.array([0.01, 0.02, 0.005, 0.015, 0.01, 0.03], np.float32), "ws"),
         nh.from_array(np.zeros(6, np.int8), "wz"),
         nh.from_array(rng.integers(-500, 500, 6).astype(np.int32), "b"),
         nh.from_array(np.array([4, 36], np.int64), "shape")]
save("q_out", [
    h.make_node("QuantizeLinear", ["input", "xs", "xz"], ["q"], name="quant"),
    h.make_node("QuantizeLinear", ["input", "xs", "xzi"], ["qi"], name="quant_i8"),
    h.make_node("QLinearConv", ["qi", "xs", "xzi", "w", "ws", "wz", "ys", "yz", "b"], ["y"], name="qconv",
                pads=[1, 1, 1, 1]),
    h.make_node("Reshape", ["q", "shape"], ["qr"], name="flat"),
], inits, [x], [h.make_tensor_value_info("y", T.INT8, [1, 6, 6, 6]),
                h.make_tensor_value_info("qr", T.UINT8, [4, 36])])

inits = [nh.from_array(np.array(0.02, np.float32), "xs"), nh.from_array(np.array(1, np.int8), "xz")]
save("q_transpose", [
    h.make_node("QuantizeLinear", ["input", "xs", "xz"], ["q"], name="quant"),
    h.make_node("Transpose", ["q"], ["qt"], name="move", perm=[0, 2, 3, 1]),
    h.make_node("DequantizeLinear", ["qt", "xs", "xz"], ["output"], name="dequant"),
], inits, [x], [h.make_tensor_value_info("output", T.FLOAT, [1, 6, 6, 4])])
save("q_transpose_out", [
    h.make_node("QuantizeLinear", ["input", "xs", "xz"], ["q"], name="quant"),
    h.make_node("Transpose", ["q"], ["qt"], name="move", perm=[0, 2, 3, 1]),
], inits, [x], [h.make_tensor_value_info("qt", T.INT8, [1, 6, 6, 4])])

inits = [nh.from_array(np.array(0.02, np.float32), "xs"), nh.from_array(np.array(-3, np.int8), "xz"),
         nh.from_array(np.array(0.05, np.float32), "us"), nh.from_array(np.array(120, np.uint8), "uz"),
         nh.from_array(np.array(0.01, np.float32), "vs"), nh.from_array(np.array(7, np.uint8), "vz"),
         nh.from_array(np.array(0.03, np.float32), "ys"), nh.from_array(np.array(4, np.int8), "yz"),
         nh.from_array(rng.integers(-127, 128, (3, 4, 3, 3)).astype(np.int8), "w1"),
         nh.from_array(rng.integers(-127, 128, (5, 4, 1, 1)).astype(np.int8), "w2"),
         nh.from_array(np.array(0.01, np.float32), "ws"), nh.from_array(np.array(0, np.int8), "wz"),
         nh.from_array(rng.integers(-300, 300, 3).astype(np.int32), "b1"),
         nh.from_array(rng.integers(-300, 300, 5).astype(np.int32), "b2")]
save("q_concat", [
    h.make_node("QuantizeLinear", ["input", "xs", "xz"], ["q"], name="quant"),
    h.make_node("QLinearConv", ["q", "xs", "xz", "w1", "ws", "wz", "ys", "yz", "b1"], ["c1"], name="qconv3x3",
                pads=[1, 1, 1, 1]),
    h.make_node("QLinearConv", ["q", "xs", "xz", "w2", "ws", "wz", "ys", "yz", "b2"], ["c2"], name="qconv1x1"),
    h.make_node("Concat", ["c1", "c2"], ["cat"], name="cat_i8", axis=1),
    h.make_node("DequantizeLinear", ["cat", "ys", "yz"], ["output"], name="dequant"),
    h.make_node("QuantizeLinear", ["input", "us", "uz"], ["u1"], name="quant_u8a"),
    h.make_node("QuantizeLinear", ["input", "vs", "vz"], ["u2"], name="quant_u8b"),
    h.make_node("Concat", ["u1", "u2"], ["ucat"], name="cat_u8", axis=3),
    h.make_node("Transpose", ["ucat"], ["ut"], name="move_u8", perm=[0, 2, 3, 1]),
], inits, [x], [h.make_tensor_value_info("output", T.FLOAT, [1, 8, 6, 6]),
                h.make_tensor_value_info("ut", T.UINT8, [1, 6, 12, 4])])

x2 = h.make_tensor_value_info("input", T.FLOAT, [2, 5])
inits = [nh.from_array(np.array(0.02, np.float32), "xs"), nh.from_array(np.array(2, np.int8), "xz"),
         nh.from_array(rng.integers(-128, 128, (3, 5, 3, 3)).astype(np.int8), "cw"),
         nh.from_array(rng.integers(-128, 128, (5, 7)).astype(np.int8), "mw"),
         nh.from_array(np.array([2, 5, 1, 1], np.int64), "img")]
save("q_int32", [
    h.make_node("QuantizeLinear", ["input", "xs", "xz"], ["q"], name="quant"),
    h.make_node("MatMulInteger", ["q", "mw", "xz"], ["mm"], name="mmi"),
    h.make_node("Reshape", ["q", "img"], ["qi"], name="as_image"),
    h.make_node("ConvInteger", ["qi", "cw", "xz"], ["cv"], name="convi", pads=[1, 1, 1, 1]),
], inits, [x2], [h.make_tensor_value_info("mm", T.INT32, [2, 7]),
                 h.make_tensor_value_info("cv", T.INT32, [2, 3, 1, 1])])

