#!/usr/bin/env python3
"""An exact evaluation of a QDQ model, independent of onnxruntime and of
covenant: numpy, float64 sums for Conv, Gemm and GlobalAveragePool (the
float32 values they sum are exact in float64, so the result does not
depend on the order of the sums), float32 everywhere ONNX's meaning rounds
(DequantizeLinear's product, Add, QuantizeLinear's division, round half to
even, saturation).

    /usr/bin/python3 qdq_exact.py MODEL.onnx INPUT.npy OUT.npy

onnxruntime sums in float32 in its own order, so near a rounding boundary
of a QuantizeLinear it may land one step away (int8_qdq_resnet: one output
element, one step). Takes the operators of tests/models' QDQ CNNs only and
refuses others by name.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def attr(n, k, d=None):
    for a in n.attribute:
        if a.name == k:
            return helper.get_attribute_value(a)
    return d


def conv(x, w, b, pads, strides):
    n, _, _, _ = x.shape
    k, _, r_, s_ = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho = (x.shape[2] - r_) // strides[0] + 1
    wo = (x.shape[3] - s_) // strides[1] + 1
    y = np.zeros((n, k, ho, wo), np.float64)
    for r in range(r_):
        for s in range(s_):
            patch = x[:, :, r:r + strides[0] * ho:strides[0], s:s + strides[1] * wo:strides[1]]
            y += np.einsum("nchw,kc->nkhw", patch.astype(np.float64), w[:, :, r, s].astype(np.float64))
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def dequantize(n, x, s, z):
    z = np.zeros_like(s, dtype=np.int32) if z is None else z
    if s.ndim == 1 and s.size > 1:
        shape = [1] * x.ndim
        shape[attr(n, "axis", 1)] = -1
        s, z = s.reshape(shape), z.reshape(shape)
    return ((x.astype(np.int64) - z.astype(np.int64)).astype(np.float32) * s).astype(np.float32)


def quantize(x, s, z):
    info = np.iinfo(z.dtype)
    q = np.rint((x / s).astype(np.float32)).astype(np.float64) + z.astype(np.float64)
    return np.clip(q, info.min, info.max).astype(z.dtype)


def gemm(n, a, b, c):
    a = a.T if attr(n, "transA", 0) else a
    b = b.T if attr(n, "transB", 0) else b
    y = a.astype(np.float64) @ b.astype(np.float64) * attr(n, "alpha", 1.0)
    return (y + (0 if c is None else c.astype(np.float64) * attr(n, "beta", 1.0))).astype(np.float32)


def run(model, feeds):
    v = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    v.update(feeds)
    for n in model.graph.node:
        a = [v[i] if i else None for i in n.input] + [None] * 3
        op = n.op_type
        if op == "DequantizeLinear":
            y = dequantize(n, a[0], a[1], a[2])
        elif op == "QuantizeLinear":
            y = quantize(a[0], a[1], a[2])
        elif op == "Conv" and attr(n, "group", 1) == 1 and attr(n, "dilations", [1, 1]) == [1, 1]:
            y = conv(a[0], a[1], a[2], attr(n, "pads", [0, 0, 0, 0]), attr(n, "strides", [1, 1]))
        elif op == "Add":
            y = (a[0] + a[1]).astype(np.float32)
        elif op == "Relu":
            y = np.maximum(a[0], 0).astype(np.float32)
        elif op == "GlobalAveragePool":
            y = a[0].mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(np.float32)
        elif op == "Flatten":
            y = a[0].reshape(a[0].shape[0], -1)
        elif op == "Gemm":
            y = gemm(n, a[0], a[1], a[2])
        else:
            raise SystemExit("qdq_exact: node '%s': operator %s is not taken here" % (n.name, op))
        v[n.output[0]] = y
    return [v[o.name] for o in model.graph.output]


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    model = onnx.load(sys.argv[1])
    y = run(model, {model.graph.input[0].name: np.load(sys.argv[2])})
    np.save(sys.argv[3], y[0])


if __name__ == "__main__":
    main()
