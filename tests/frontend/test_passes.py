#!/usr/bin/env python3
"""The frontend's passes, checked on small models built here.

    /usr/bin/python3 test_passes.py COVENANT WORKDIR

Each check builds an ONNX model with onnx.helper, looks at what
`covenant inspect` says was left after the passes (constant folding,
Identity/Dropout elimination, BatchNorm folding, fusion), and compares
`covenant run --target ref` with a numpy computation of the same model.
Every check runs; the exit status is 1 if any failed.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cov_checks

COV = None
WORK = None
RNG = np.random.default_rng(7)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, producer_name="test_passes", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def inspect(path, *flags):
    r = subprocess.run([COV, "inspect", path, *flags], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("inspect failed: " + r.stderr)
    return r.stdout


def run(path, inputs, n_out=1):
    """inputs: list of arrays (in model order); returns list of outputs."""
    return cov_checks.run_ok(COV, WORK, path, inputs, n_out)[0]


def operators(text):
    m = re.search(r"^operators: (.*)$", text, re.M)
    return m.group(1) if m else ""


def groups(text):
    return re.findall(r"^  #\d+ (\S+)", text, re.M)


def close(got, want, tol=1e-5):
    assert got.shape == want.shape, "shape %s vs %s" % (got.shape, want.shape)
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    assert err <= tol, "max relative error %.3g" % err


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def conv_ref(x, w, b, pad=0):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    p, q = h - r + 1, wd - s + 1
    y = np.zeros((n, k, p, q))
    for i in range(r):
        for j in range(s):
            y += np.einsum("ncpq,kc->nkpq", x[:, :, i:i + p, j:j + q], w[:, :, i, j])
    return y + b.reshape(1, k, 1, 1)


# ---- constant folding ----------------------------------------------------

def shape_subgraph_folds():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape: only Reshape stays."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [const("zero", np.array(0, np.int64)), const("axes0", np.array([0], np.int64)),
             const("minus1", np.array([-1], np.int64))]
    p = save("fold_shape", nodes, [vi("x", [2, 3, 4])], [vi("y", None)], inits)
    text = inspect(p)
    assert operators(text) == "1 nodes: Reshape x1", operators(text)
    assert "y f32[2, 12]" in text, "inferred output shape missing"
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    close(run(p, [x])[0], x.reshape(2, 12))
    unfolded = inspect(p, "--no-fold")
    assert "Shape x1" in operators(unfolded), operators(unfolded)


check(shape_subgraph_folds)


def constant_arithmetic_folds():
    """Constants combined by compute ops (through codelets) fold too."""
    nodes = [helper.make_node("Mul", ["a", "b"], ["ab"]),
             helper.make_node("Add", ["ab", "c"], ["abc"]),
             helper.make_node("Add", ["x", "abc"], ["y"])]
    a = np.array([1, 2, 3], np.float32)
    b = np.array([4, 5, 6], np.float32)
    c = np.array([0.5, 0.25, 0.125], np.float32)
    p = save("fold_arith", nodes, [vi("x", [2, 3])], [vi("y", None)],
             [const("a", a), const("b", b), const("c", c)])
    assert operators(inspect(p)) == "1 nodes: Add x1", operators(inspect(p))
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    close(run(p, [x])[0], x + (a * b + c))


check(constant_arithmetic_folds)


def dynamic_shape_runs():
    """A symbolic batch keeps Shape at run time; the executor resolves it."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [const("zero", np.array(0, np.int64)), const("axes0", np.array([0], np.int64)),
             const("minus1", np.array([-1], np.int64))]
    p = save("dynamic", nodes, [vi("x", ["N", 3, 4])], [vi("y", None)], inits)
    text = inspect(p)
    assert "x f32[N, 3, 4]" in text, text
    assert "Shape x1" in operators(text)
    for n in (1, 5):
        x = RNG.standard_normal((n, 3, 4)).astype(np.float32)
        close(run(p, [x])[0], x.reshape(n, 12))


check(dynamic_shape_runs)


# ---- elimination ---------------------------------------------------------

def identity_dropout_eliminated():
    nodes = [helper.make_node("Identity", ["x"], ["a"]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Dropout", ["b", "ratio"], ["c"]),
             helper.make_node("Identity", ["c"], ["y"])]
    p = save("identity", nodes, [vi("x", [4, 4])], [vi("y", [4, 4])],
             [const("ratio", np.array(0.5, np.float32))])
    text = inspect(p)
    assert operators(text) == "1 nodes: Relu x1", operators(text)
    assert "y f32[4, 4] (= b)" in text, "output keeps its name"
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    close(run(p, [x])[0], np.maximum(x, 0))


check(identity_dropout_eliminated)


def dropout_mask_kept():
    nodes = [helper.make_node("Dropout", ["x"], ["y", "mask"])]
    p = save("dropout_mask", nodes, [vi("x", [3])], [vi("y", [3]), vi("mask", [3], TensorProto.BOOL)])
    assert "Dropout x1" in operators(inspect(p))
    x = np.array([1, -2, 3], np.float32)
    y, mask = run(p, [x], 2)
    close(y, x)
    assert mask.dtype == np.bool_ and mask.all()


check(dropout_mask_kept)


# ---- BatchNorm folding and fusion ------------------------------------------

def batchnorm_folds_into_conv():
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    scale = RNG.uniform(0.5, 2, 4).astype(np.float32)
    beta = RNG.standard_normal(4).astype(np.float32)
    mean = RNG.standard_normal(4).astype(np.float32)
    var = RNG.uniform(0.5, 2, 4).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["n"],
                              epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    inits = [const(k, v) for k, v in
             (("w", w), ("b", b), ("scale", scale), ("beta", beta), ("mean", mean), ("var", var))]
    p = save("bnfold", nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], inits)
    text = inspect(p)
    assert operators(text) == "3 nodes: Conv x1, MaxPool x1, Relu x1", operators(text)
    assert groups(text) == ["conv+bias+relu+maxpool"], groups(text)
    assert "codelets: conv2d, bias_add, relu, maxpool" in text
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    c = conv_ref(x, w, b, pad=1)
    n = (c - mean.reshape(1, 4, 1, 1)) / np.sqrt(var.reshape(1, 4, 1, 1) + 1e-3) * \
        scale.reshape(1, 4, 1, 1) + beta.reshape(1, 4, 1, 1)
    r = np.maximum(n, 0)
    want = r.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    close(run(p, [x])[0], want, 1e-5)
    # Without folding, BatchNormalization runs through its own codelet.
    close(run(p, [x])[0], want, 1e-5)


check(batchnorm_folds_into_conv)


def standalone_batchnorm_runs():
    scale = np.array([1, 2], np.float32)
    beta = np.array([0, 1], np.float32)
    mean = np.array([0.5, -0.5], np.float32)
    var = np.array([1, 4], np.float32)
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])]
    p = save("bn", nodes, [vi("x", [2, 2, 3])], [vi("y", None)],
             [const("s", scale), const("b", beta), const("m", mean), const("v", var)])
    x = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    r = lambda a: a.reshape(1, 2, 1)  # noqa: E731
    close(run(p, [x])[0], (x - r(mean)) / np.sqrt(r(var) + 1e-5) * r(scale) + r(beta))


check(standalone_batchnorm_runs)


def layer_scale_folds_into_conv():
    """Conv -> Mul by gamma [C,1,1] -> Add residual (ConvNeXt's block end):
    gamma goes into the Conv's weights and bias, the Add stays."""
    w = RNG.standard_normal((4, 4, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    gamma = (10.0 ** RNG.uniform(-3, 1, 4)).astype(np.float32).reshape(4, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c", "gamma"], ["s"]),
             helper.make_node("Add", ["s", "x"], ["y"])]
    p = save("layer_scale", nodes, [vi("x", [2, 4, 5, 5])], [vi("y", None)],
             [const("w", w), const("b", b), const("gamma", gamma)])
    assert operators(inspect(p)) == "2 nodes: Add x1, Conv x1", operators(inspect(p))
    x = RNG.standard_normal((2, 4, 5, 5)).astype(np.float32)
    want = conv_ref(x, w, b, pad=1) * gamma.reshape(1, 4, 1, 1) + x
    close(run(p, [x])[0], want, 1e-5)


check(layer_scale_folds_into_conv)


def channel_offset_and_matmul_scale_fold():
    """Conv -> Add [C,1,1] (no bias) and MatMul / Gemm (transB) -> Mul [N]
    fold; a constant along another axis, a scaled Conv output read twice and
    a constant that would broadcast the output wider do not."""
    w = RNG.standard_normal((3, 2, 1, 1)).astype(np.float32)
    a = RNG.standard_normal((3, 1, 1)).astype(np.float32)
    bm = RNG.standard_normal((6, 5)).astype(np.float32)
    g = RNG.uniform(0.1, 3, 5).astype(np.float32)
    bt = RNG.standard_normal((5, 6)).astype(np.float32)
    cb = RNG.standard_normal(5).astype(np.float32)
    rows = RNG.uniform(0.1, 3, (4, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Add", ["c", "a"], ["y0"]),
             helper.make_node("MatMul", ["m", "bm"], ["mm"]),
             helper.make_node("Mul", ["g", "mm"], ["y1"]),
             helper.make_node("Gemm", ["m", "bt", "cb"], ["gm"], transB=1, alpha=0.5),
             helper.make_node("Mul", ["gm", "g"], ["y2"]),
             helper.make_node("MatMul", ["m", "bm"], ["mr"]),
             helper.make_node("Mul", ["mr", "rows"], ["y3"]),
             helper.make_node("Conv", ["x", "w"], ["c2"]),
             helper.make_node("Mul", ["c2", "a"], ["s2"]),
             helper.make_node("Add", ["s2", "c2"], ["y4"]),
             helper.make_node("MatMul", ["m", "bm"], ["mw"]),
             helper.make_node("Mul", ["mw", "wide"], ["y5"])]
    wide = RNG.uniform(0.1, 3, (2, 1, 5)).astype(np.float32)
    p = save("scale_kinds", nodes, [vi("x", [1, 2, 3, 3]), vi("m", [4, 6])],
             [vi(n, None) for n in ("y0", "y1", "y2", "y3", "y4", "y5")],
             [const(k, v) for k, v in (("w", w), ("a", a), ("bm", bm), ("g", g), ("bt", bt), ("cb", cb),
                                       ("rows", rows), ("wide", wide))])
    ops = operators(inspect(p))
    assert ops == "10 nodes: Add x1, Conv x2, Gemm x1, MatMul x3, Mul x3", ops
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    m = RNG.standard_normal((4, 6)).astype(np.float32)
    got = run(p, [x, m], 6)
    c = conv_ref(x, w, np.zeros(3, np.float32))
    close(got[0], c + a.reshape(1, 3, 1, 1))
    close(got[1], (m @ bm) * g)
    close(got[2], (0.5 * m @ bt.T + cb) * g)
    close(got[3], (m @ bm) * rows)
    close(got[4], c * a.reshape(1, 3, 1, 1) + c)
    close(got[5], (m @ bm) * wide)


check(channel_offset_and_matmul_scale_fold)


def scale_kept_where_f16_weights_lose_precision():
    """A scale is folded only where no output channel's largest weight
    leaves f16's normal range [2^-14, 65504] (or, already below it, gets
    smaller): ConvNeXt's initial gamma of 1e-6 on weights of about 0.04
    (one channel of four enough), a MatMul column scaled past 65504 and
    rows already subnormal scaled down stay a Mul; the same subnormal rows
    scaled up and a zero scale fold."""
    w = (RNG.standard_normal((4, 4, 1, 1)) * 0.02).astype(np.float32)
    tiny = np.array([1.0, 1.0, 1e-6, 1.0], np.float32).reshape(4, 1, 1)
    bm = RNG.uniform(0.5, 1, (6, 5)).astype(np.float32)
    big = np.array([1, 1, 1, 1e5, 1], np.float32)
    ws = (RNG.uniform(0.5, 1, (4, 4, 1, 1)) * 1e-6).astype(np.float32)  # every row subnormal in f16
    down = np.full((4, 1, 1), 0.5, np.float32)
    up = np.full((4, 1, 1), 4.0, np.float32)
    zero = np.zeros((4, 1, 1), np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c0"]),
             helper.make_node("Mul", ["c0", "tiny"], ["y0"]),
             helper.make_node("MatMul", ["m", "bm"], ["mm"]),
             helper.make_node("Mul", ["mm", "big"], ["y1"]),
             helper.make_node("Conv", ["x", "ws"], ["c2"]),
             helper.make_node("Mul", ["c2", "down"], ["y2"]),
             helper.make_node("Conv", ["x", "ws"], ["c3"]),
             helper.make_node("Mul", ["c3", "up"], ["y3"]),
             helper.make_node("Conv", ["x", "w"], ["c4"]),
             helper.make_node("Mul", ["zero", "c4"], ["y4"])]
    p = save("scale_f16", nodes, [vi("x", [1, 4, 3, 3]), vi("m", [2, 6])],
             [vi(n, None) for n in ("y0", "y1", "y2", "y3", "y4")],
             [const(k, v) for k, v in (("w", w), ("tiny", tiny), ("bm", bm), ("big", big), ("ws", ws),
                                       ("down", down), ("up", up), ("zero", zero))])
    ops = operators(inspect(p))
    assert ops == "8 nodes: Conv x4, MatMul x1, Mul x3", ops
    x = RNG.standard_normal((1, 4, 3, 3)).astype(np.float32)
    m = RNG.standard_normal((2, 6)).astype(np.float32)
    got = run(p, [x, m], 5)
    nb = np.zeros(4, np.float32)
    close(got[0], conv_ref(x, w, nb) * tiny.reshape(1, 4, 1, 1))
    close(got[1], (m @ bm) * big)
    close(got[2], conv_ref(x, ws, nb) * 0.5)
    close(got[3], conv_ref(x, ws, nb) * 4.0)
    close(got[4], conv_ref(x, w, nb) * 0.0)


check(scale_kept_where_f16_weights_lose_precision)


def gemm_and_attention_groups():
    w = RNG.standard_normal((8, 6)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    w2 = RNG.standard_normal((6, 5)).astype(np.float32)
    b2 = RNG.standard_normal(5).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"]),
             helper.make_node("Relu", ["g"], ["h"]),
             helper.make_node("MatMul", ["h", "w2"], ["m"]),
             helper.make_node("Add", ["m", "b2"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]),
             helper.make_node("MatMul", ["t", "tt"], ["s"]),
             helper.make_node("Div", ["s", "d"], ["sd"]),
             helper.make_node("Softmax", ["sd"], ["y"], axis=-1)]
    tt = RNG.standard_normal((5, 4)).astype(np.float32)
    inits = [const("w", w), const("b", b), const("w2", w2), const("b2", b2), const("tt", tt),
             const("d", np.array(2.0, np.float32))]
    p = save("gemm_groups", nodes, [vi("x", [3, 8])], [vi("y", None)], inits)
    text = inspect(p)
    assert groups(text) == ["gemm+bias+relu", "matmul+bias+tanh", "matmul+scale+softmax"], groups(text)
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    h = np.maximum(x @ w + b, 0)
    t = np.tanh(h @ w2 + b2)
    s = (t @ tt) / 2
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    close(run(p, [x])[0], e / e.sum(axis=-1, keepdims=True))
    assert groups(inspect(p, "--no-fuse")) == ["gemm", "relu", "matmul", "add", "tanh", "matmul",
                                               "div", "softmax"]


check(gemm_and_attention_groups)


def inspect_is_deterministic():
    p = os.path.join(WORK, "gemm_groups.onnx")
    assert inspect(p, "--graph") == inspect(p, "--graph")


check(inspect_is_deterministic)


# ---- the reader ------------------------------------------------------------

def unsorted_nodes_are_sorted():
    nodes = [helper.make_node("Relu", ["a"], ["y"], name="second"),
             helper.make_node("Neg", ["x"], ["a"], name="first")]
    p = save("unsorted", nodes, [vi("x", [3])], [vi("y", None)])
    x = np.array([1, -2, 3], np.float32)
    close(run(p, [x])[0], np.maximum(-x, 0))


check(unsorted_nodes_are_sorted)


def old_opset_same_version_accepted():
    """GlobalAveragePool never changed: an opset-1 model is read."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["y"])]
    p = save("opset1", nodes, [vi("x", [1, 2, 3, 3])], [vi("y", None)], opset=1)
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    close(run(p, [x])[0], x.mean(axis=(2, 3), keepdims=True))


check(old_opset_same_version_accepted)


def opset_semantics():
    """Softmax's axis changed meaning in opset 13; Squeeze's axes became an input."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    p11 = save("softmax11", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], [vi("x", [2, 3, 4])],
               [vi("y", None)], opset=11)
    flat = x.reshape(2, 12)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    close(run(p11, [x])[0], (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4))
    p13 = save("softmax13", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], [vi("x", [2, 3, 4])],
               [vi("y", None)], opset=13)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(run(p13, [x])[0], e / e.sum(axis=1, keepdims=True))
    s11 = save("squeeze11", [helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], [vi("x", [1, 3])],
               [vi("y", None)], opset=11)
    s13 = save("squeeze13", [helper.make_node("Squeeze", ["x", "a"], ["y"])], [vi("x", [1, 3])],
               [vi("y", None)], [const("a", np.array([0], np.int64))], opset=13)
    x = np.array([[1, 2, 3]], np.float32)
    close(run(s11, [x])[0], x[0])
    close(run(s13, [x])[0], x[0])
    c11 = save("clip11", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [vi("x", [4])],
               [vi("y", None)], [const("lo", np.array(-1, np.float32)), const("hi", np.array(2, np.float32))],
               opset=11)
    c7 = save("clip7", [helper.make_node("Clip", ["x"], ["y"], min=-1.0, max=2.0)], [vi("x", [4])],
              [vi("y", None)], opset=7)
    x = np.array([-3, 0, 1.5, 5], np.float32)
    close(run(c11, [x])[0], np.clip(x, -1, 2))
    close(run(c7, [x])[0], np.clip(x, -1, 2))


check(opset_semantics)


def external_data_and_symlinks():
    d = os.path.join(WORK, "ext")
    os.makedirs(d, exist_ok=True)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(b"\0" * 64 + w.tobytes())
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "64"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ext", [vi("x", [2, 3])],
                          [vi("y", None)], initializer=[t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    close(run(path, [x])[0], x @ w)
    # A symlink inside the folder that points outside it is refused.
    outside = os.path.join(WORK, "outside.bin")
    with open(outside, "wb") as f:
        f.write(b"\0" * 64 + w.tobytes())
    link = os.path.join(d, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(outside, link)
    m.graph.initializer[0].external_data[0].value = "link.bin"
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    r = subprocess.run([COV, "inspect", path], capture_output=True, text=True)
    assert r.returncode == 1, r.returncode
    assert "resolves to '%s', outside the model's folder" % os.path.realpath(outside) in r.stderr, r.stderr


check(external_data_and_symlinks)


def inputs_by_name_and_pb():
    nodes = [helper.make_node("Sub", ["a", "b"], ["y"])]
    p = save("named", nodes, [vi("a", [2]), vi("b", [2])], [vi("y", None)])
    a = np.array([5, 7], np.float32)
    b = np.array([1, 2], np.float32)
    pa = os.path.join(WORK, "a.pb")
    with open(pa, "wb") as f:
        f.write(numpy_helper.from_array(a, "a").SerializeToString())
    pb = os.path.join(WORK, "b.npy")
    np.save(pb, b)
    out = os.path.join(WORK, "named_out.npy")
    r = subprocess.run([COV, "run", p, "--input", "b=" + pb, "--input", pa, "-o", "y=" + out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    close(np.load(out), a - b)


check(inputs_by_name_and_pb)


def broadcasting_beyond_rank4():
    """Rank-5 broadcasting with alternating patterns expands before the codelet."""
    a = RNG.standard_normal((2, 1, 3, 1, 2)).astype(np.float32)
    b = RNG.standard_normal((1, 4, 1, 5, 1)).astype(np.float32)
    p = save("bcast5", [helper.make_node("Mul", ["a", "b"], ["y"])], [vi("a", a.shape), vi("b", b.shape)],
             [vi("y", None)])
    close(run(p, [a, b])[0], a * b)


check(broadcasting_beyond_rank4)


def layernorm_with_statistics():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    s = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    p = save("layernorm", [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "m", "r"],
                                            axis=1, epsilon=1e-3)],
             [vi("x", [2, 3, 4])], [vi("y", None), vi("m", None), vi("r", None)],
             [const("s", s), const("b", b)], opset=17)
    y, m, r = run(p, [x], 3)
    mean = x.mean(axis=(1, 2), keepdims=True)
    inv = 1 / np.sqrt(((x - mean) ** 2).mean(axis=(1, 2), keepdims=True) + 1e-3)
    close(y, (x - mean) * inv * s + b)
    close(m, mean)
    close(r, inv)


check(layernorm_with_statistics)


def reduce_mean_axes():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    p = save("reducemean", [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1, 3], keepdims=0)],
             [vi("x", [2, 3, 4, 5])], [vi("y", None)])
    close(run(p, [x])[0], x.mean(axis=(1, 3)))


check(reduce_mean_axes)


def half_precision_conv():
    """f16 weights and activations: the codelets accumulate in f32."""
    w = (RNG.standard_normal((4, 2, 3, 3)) * 0.3).astype(np.float16)
    b = RNG.standard_normal(4).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]),
             helper.make_node("Relu", ["c"], ["y"])]
    p = save("conv_f16", nodes, [vi("x", [1, 2, 6, 6], TensorProto.FLOAT16)],
             [vi("y", None, TensorProto.FLOAT16)], [const("w", w), const("b", b)])
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float16)
    got = run(p, [x])[0]
    assert got.dtype == np.float16, got.dtype
    want = np.maximum(conv_ref(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32)), 0)
    close(got.astype(np.float32), want, 2e-3)


check(half_precision_conv)


def integer_ops():
    """int64 arithmetic on data (not folded: x is an input) and Cast."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["m"]),
             helper.make_node("Sub", ["m", "one"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    p = save("int_ops", nodes, [vi("x", [4], TensorProto.INT64)], [vi("y", None)],
             [const("k", np.array(3, np.int64)), const("one", np.array([1], np.int64))])
    x = np.array([1, -2, 3, 1 << 40], np.int64)
    got = run(p, [x])[0]
    assert got.dtype == np.float32
    close(got, (x * 3 - 1).astype(np.float32))


check(integer_ops)


def graph_without_nodes():
    """An output that is the input itself, and one that is a constant."""
    c = np.array([1, 2], np.int64)
    g = helper.make_graph([], "empty", [vi("x", [3])], [vi("x", [3]), vi("c", [2], TensorProto.INT64)],
                          initializer=[const("c", c)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    p = os.path.join(WORK, "no_nodes.onnx")
    onnx.save(m, p)
    assert "layer groups: 0" in inspect(p)
    x = np.array([1, 2, 3], np.float32)
    y, cc = run(p, [x], 2)
    close(y, x)
    assert (cc == c).all() and cc.dtype == np.int64


check(graph_without_nodes)


def main():
    global COV, WORK
    COV, WORK = sys.argv[1], sys.argv[2]
    sys.exit(cov_checks.run_checks(CHECKS, WORK))


if __name__ == "__main__":
    main()
