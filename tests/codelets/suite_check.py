#!/usr/bin/python3
"""tests/codelets/suite_check.py COVENANT LAYERS_JSON: every layer of the
benchmark suite (shared/suite/layers.json) is expressible as a chain of
shipped codelets.

For each layer, the chain (e.g. conv2d -> bias_add -> relu -> maxpool) is
bound at the layer's real shapes with `covenant codelet run --dry-run`, and
every output shape must equal the one computed here from the layer's
parameters; then the same chain runs on scaled-down shapes (same kernels,
strides, pads and groups structure) and must match a numpy reference.
Exits 77 (skipped) when the suite file is absent."""
import json
import math
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__
import zlib

import numpy as np

from npy_util import Checker, main_guard
from numpy_check import conv2d_ref, maxpool_ref, softmax_ref, erf


def dims(shape):
    return "x".join(str(d) for d in shape)


def dry_run(ck, codelet, inputs, attrs):
    cmd = [ck.cov, "codelet", "run", codelet, "--dry-run"]
    for name, shape in inputs:
        cmd += ["-s", "%s=%s" % (name, dims(shape))]
    for k, v in attrs.items():
        cmd += ["-a", "%s=%s" % (k, v)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    line = r.stdout.splitlines()[0]  # "y: f32[1, 64, 112, 112]"
    return tuple(int(d) for d in line.split("[")[1].rstrip("]").split(", ") if d), None


def post_codelet(op, shape, kind):
    """(codelet, inputs, attrs, output shape) of a post-op on `shape`."""
    if op == "bias":
        if kind == "conv":
            return "bias_add", [("x", shape), ("b", (shape[1],))], {}, shape
        return "bias_add_2d", [("x", shape), ("b", (shape[-1],))], {}, shape
    if op in ("relu", "relu6", "gelu"):
        flat = (int(np.prod(shape)),)
        return op, [("x", flat)], {}, flat
    if op == "softmax":
        rows = (int(np.prod(shape[:-1])), shape[-1])
        return "softmax", [("x", rows)], {}, rows
    if op == "maxpool2x2":
        n, c, h, w = shape
        return ("maxpool", [("x", shape)], dict(kernel_h=2, kernel_w=2, stride_h=2, stride_w=2),
                (n, c, (h - 2) // 2 + 1, (w - 2) // 2 + 1))
    raise ValueError("unknown post-op " + op)


def conv_attrs(L):
    p = L.get("pad", 0)
    return dict(stride_h=L.get("stride", 1), stride_w=L.get("stride", 1), pad_top=p, pad_left=p,
                pad_bottom=p, pad_right=p, groups=L.get("groups", 1))


def main_op(L):
    """(codelet, inputs, attrs, output shape, kind) of the layer's main op."""
    op = L["op"]
    if op == "conv2d":
        g = L.get("groups", 1)
        s, p = L.get("stride", 1), L.get("pad", 0)
        P = (L["H"] + 2 * p - L["R"]) // s + 1
        Q = (L["W"] + 2 * p - L["S"]) // s + 1
        return ("conv2d", [("x", (L["N"], L["C"], L["H"], L["W"])),
                           ("w", (L["K"], L["C"] // g, L["R"], L["S"]))],
                conv_attrs(L), (L["N"], L["K"], P, Q), "conv")
    if op == "maxpool":
        s, p = L.get("stride", 1), L.get("pad", 0)
        P = (L["H"] + 2 * p - L["R"]) // s + 1
        Q = (L["W"] + 2 * p - L["S"]) // s + 1
        return ("maxpool", [("x", (L["N"], L["C"], L["H"], L["W"]))],
                dict(kernel_h=L["R"], kernel_w=L["S"], stride_h=s, stride_w=s, pad_top=p,
                     pad_left=p, pad_bottom=p, pad_right=p), (L["N"], L["C"], P, Q), "conv")
    if op == "gemm":
        return ("gemm", [("a", (L["M"], L["K"])), ("b", (L["K"], L["N"]))], {},
                (L["M"], L["N"]), "gemm")
    if op == "batch_matmul":
        return ("batch_matmul", [("a", (L["B"], L["M"], L["K"])), ("b", (L["B"], L["K"], L["N"]))],
                {}, (L["B"], L["M"], L["N"]), "gemm")
    raise ValueError("unknown op " + op)


def scaled(L):
    """The same layer with small channel, spatial and matrix sizes."""
    S = dict(L)
    caps = {"H": 9, "W": 9}
    if L["op"] in ("gemm", "batch_matmul"):
        caps.update(M=12, N=10, K=24, B=2)
    for k, cap in caps.items():
        if k in S:
            S[k] = min(S[k], cap)
    if L["op"] in ("conv2d", "maxpool"):
        S["N"] = 1
        if L.get("groups", 1) > 1:  # depthwise stays depthwise
            S["C"] = S["K"] = S["groups"] = min(L["C"], 6)
        else:
            S["C"] = min(L["C"], 5)
            if "K" in L:
                S["K"] = min(L["K"], 6)
        S["H"] = max(S["H"], L["R"] - 2 * L.get("pad", 0) + 2)
        S["W"] = max(S["W"], L["S"] - 2 * L.get("pad", 0) + 2)
    return S


def reference(L, arrays):
    op = L["op"]
    if op == "conv2d":
        p, s = L.get("pad", 0), L.get("stride", 1)
        return conv2d_ref(arrays["x"], arrays["w"], (s, s), (p, p, p, p), (1, 1), L.get("groups", 1))
    if op == "maxpool":
        p, s = L.get("pad", 0), L.get("stride", 1)
        return maxpool_ref(arrays["x"], L["R"], L["S"], (s, s), (p, p, p, p))
    return np.matmul(arrays["a"].astype(np.float64), arrays["b"].astype(np.float64))


def post_reference(op, y, b):
    if op == "bias":
        return y + (b.reshape(1, -1, 1, 1) if y.ndim == 4 else b)
    if op == "relu":
        return np.maximum(y, 0)
    if op == "relu6":
        return np.clip(y, 0, 6)
    if op == "gelu":
        return 0.5 * y * (1 + erf(y / math.sqrt(2)))
    if op == "softmax":
        return softmax_ref(y.reshape(-1, y.shape[-1])).reshape(y.shape)
    if op == "maxpool2x2":
        return maxpool_ref(y, 2, 2, (2, 2))
    raise ValueError(op)


def check_layer(ck, L):
    name = L["name"]
    # 1. real shapes: every step binds and produces the expected shape
    codelet, ins, attrs, shape, kind = main_op(L)
    got, err = dry_run(ck, codelet, ins, attrs)
    if got != shape:
        ck.fail("%s: %s at real shapes gave %s, expected %s %s" % (name, codelet, got, shape, err or ""))
        return
    for op in L.get("post", []):
        codelet, ins, attrs, nshape = post_codelet(op, shape, kind)
        got, err = dry_run(ck, codelet, ins, attrs)
        if got != nshape:
            ck.fail("%s: post-op %s (%s) gave %s, expected %s %s" % (name, op, codelet, got, nshape,
                                                                    err or ""))
            return
        shape = nshape if op not in ("relu", "relu6", "gelu", "softmax") else shape
    ck.ok("%s: %s%s binds at real shapes" % (name, L["op"], "".join(" + " + p for p in L.get("post", []))))

    # 2. scaled shapes: run the chain and compare with numpy
    S = scaled(L)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    codelet, ins, attrs, shape, kind = main_op(S)
    arrays = {n: rng.uniform(-1, 1, size=sh).astype(np.float32) for n, sh in ins}
    out = ck.run(codelet, list(arrays.items()), attrs)
    if out is None:
        return
    y = out["y"]
    want = reference(S, arrays)
    for op in S.get("post", []):
        codelet, ins, attrs, _ = post_codelet(op, y.shape, kind)
        b = rng.uniform(-1, 1, size=ins[1][1]).astype(np.float32) if op == "bias" else None
        inputs = [("x", y.reshape(ins[0][1]))] + ([("b", b)] if op == "bias" else [])
        out = ck.run(codelet, inputs, attrs)
        if out is None:
            return
        y = out["y"].reshape(y.shape) if op not in ("maxpool2x2",) else out["y"]
        want = post_reference(op, want, b)
    ck.close("%s: scaled chain %s matches numpy" % (name, tuple(want.shape)), y, want,
             rtol=1e-5, atol=1e-5)


def main():
    path = sys.argv[2]
    if not os.path.exists(path):
        print("skipped: %s not found" % path)
        return 77
    with open(path) as f:
        layers = json.load(f)["layers"]
    ck = Checker(sys.argv[1])
    for L in layers:
        check_layer(ck, L)
    return ck.summary()


if __name__ == "__main__":
    main_guard(main)
