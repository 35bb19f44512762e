#!/usr/bin/env python3
"""Regenerates examples/convnet.onnx and its reference data.

The ConvNet from covenant's origin: Conv2d(3, 10, 3) + ReLU + MaxPool2d(2),
then Conv2d(10, 10, 5) + ReLU, on a 1x3x32x32 input. Weights and the input
are drawn from a fixed seed, so the files are reproducible byte for byte.
The expected output is computed here with numpy alone (no ONNX runtime, no
covenant), as an independent reference.

Run with Debian's interpreter, which has python3-onnx and python3-numpy:
    /usr/bin/python3 examples/make_convnet.py [OUTDIR]
writes OUTDIR/convnet.onnx, convnet_input.npy, convnet_output.npy
(OUTDIR defaults to this script's folder).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv2d(x, w, b):
    """Valid (no padding), stride-1 cross-correlation, NCHW / OIHW."""
    n, c, h, wd = x.shape
    k, c2, r, s = w.shape
    assert c == c2
    p, q = h - r + 1, wd - s + 1
    y = np.zeros((n, k, p, q), dtype=np.float64)
    for i in range(r):
        for j in range(s):
            patch = x[:, :, i:i + p, j:j + q].astype(np.float64)  # n c p q
            y += np.einsum("ncpq,kc->nkpq", patch, w[:, :, i, j].astype(np.float64))
    return (y + b.reshape(1, k, 1, 1)).astype(np.float32)


def maxpool2(x):
    n, c, h, w = x.shape
    h2, w2 = h // 2, w // 2
    return x[:, :, :h2 * 2, :w2 * 2].reshape(n, c, h2, 2, w2, 2).max(axis=(3, 5))


def reference(x, w1, b1, w2, b2):
    y = np.maximum(conv2d(x, w1, b1), 0)
    y = maxpool2(y)
    return np.maximum(conv2d(y, w2, b2), 0)


def build(w1, b1, w2, b2):
    inits = [numpy_helper.from_array(a, name) for a, name in
             [(w1, "conv1.weight"), (b1, "conv1.bias"), (w2, "conv2.weight"), (b2, "conv2.bias")]]
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["conv1_out"],
                         name="conv1", kernel_shape=[3, 3], strides=[1, 1], pads=[0, 0, 0, 0]),
        helper.make_node("Relu", ["conv1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("MaxPool", ["relu1_out"], ["pool1_out"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1_out", "conv2.weight", "conv2.bias"], ["conv2_out"],
                         name="conv2", kernel_shape=[5, 5]),
        helper.make_node("Relu", ["conv2_out"], ["output"], name="relu2"),
    ]
    graph = helper.make_graph(
        nodes, "convnet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10, 11, 11])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="covenant-examples",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(20240607)
    # PyTorch's default init range for these layers: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    w1 = rng.uniform(-1, 1, (10, 3, 3, 3)).astype(np.float32) / np.sqrt(27)
    b1 = rng.uniform(-1, 1, (10,)).astype(np.float32) / np.sqrt(27)
    w2 = rng.uniform(-1, 1, (10, 10, 5, 5)).astype(np.float32) / np.sqrt(250)
    b2 = rng.uniform(-1, 1, (10,)).astype(np.float32) / np.sqrt(250)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    model = build(w1, b1, w2, b2)
    onnx.save(model, os.path.join(out, "convnet.onnx"))
    np.save(os.path.join(out, "convnet_input.npy"), x)
    np.save(os.path.join(out, "convnet_output.npy"), reference(x, w1, b1, w2, b2))


if __name__ == "__main__":
    main()
