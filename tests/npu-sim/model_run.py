#!/usr/bin/env python3
"""Whole ONNX models on the NPU targets with fused layer groups.

    /usr/bin/python3 model_run.py COVENANT SOURCE_DIR WORKDIR

Builds small models with onnx.helper (an MLP: Gemm+bias+Relu, Gemm+bias,
MatMul+Softmax; a "mixed" net whose first group cannot be fused whole: a
3x3 stride-2 padded MaxPool after conv+bias+relu (two programs), then a residual Add of two activations and a
GlobalAveragePool, a reduction and a scalar divide, fused too), and checks on npu-16x16 and
npu-32x32-os:
  - `covenant run` output against numpy (MLP) and the reference target (all),
  - the per-layer table: one row per fused group, the fallbacks saying why,
  - `covenant map MODEL.onnx` (all groups, --group, --node, --explain, errors),
  - `covenant run --trace`: one span per program, back to back, ending at the
    table's total.
Every check runs; the exit status is 1 if any failed.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

COV = SRC = WORK = None
FAILED = []
RNG = np.random.default_rng(11)
TARGETS = ["npu-16x16", "npu-32x32-os"]


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def save(name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, producer_name="model_run", opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make_mlp():
    w1 = RNG.standard_normal((64, 48)) * 0.2
    b1 = RNG.standard_normal(64)
    w2 = RNG.standard_normal((64, 32)) * 0.2
    b2 = RNG.standard_normal(32)
    w3 = RNG.standard_normal((32, 16)) * 0.2
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
             helper.make_node("Relu", ["h1"], ["a1"], name="act1"),
             helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2"),
             helper.make_node("MatMul", ["h2", "w3"], ["h3"], name="mm3"),
             helper.make_node("Softmax", ["h3"], ["y"], name="sm", axis=-1)]
    path = save("mlp", nodes, [vi("x", [8, 48])], [vi("y", [8, 16])],
                [const("w1", w1), const("b1", b1), const("w2", w2), const("b2", b2), const("w3", w3)])

    def ref(x):
        h = np.maximum(x @ w1.T + b1, 0) @ w2 + b2
        z = h @ w3
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return path, ref


def make_mixed():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["d"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["p", "d"], ["s"], name="res"),
             helper.make_node("GlobalAveragePool", ["s"], ["y"], name="gap")]
    return save("mixed", nodes, [vi("x", [1, 4, 16, 16])], [vi("y", [1, 8, 1, 1])],
                [const("w", RNG.standard_normal((8, 4, 3, 3)) * 0.3),
                 const("b", RNG.standard_normal(8)),
                 const("w2", RNG.standard_normal((8, 8, 3, 3)) * 0.2)])


def make_odd():
    """A layout group (Reshape) and a Softmax over axis 1 of a 4-D tensor,
    which the frontend lowers with transposes around the codelet call: the
    group is not a plain chain, so it runs call by call."""
    shape = numpy_helper.from_array(np.array([1, 4, 3, 5], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node("Softmax", ["r"], ["y"], name="sm", axis=1)]
    return save("odd", nodes, [vi("x", [4, 15])], [vi("y", [1, 4, 3, 5])], [shape])


def make_midmean():
    """A ReduceMean over the middle axes of a channels-last value (a Swin
    head's pooling): the frontend moves the reduced axes last (a transposed
    copy made inside the node) before its one call; at run time that copy
    is a group input of its own (test_model_groups.c)."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[1, 2], keepdims=0)]
    return save("midmean", nodes, [vi("x", [2, 3, 4, 5])], [vi("y", [2, 5])], [])


def cov(*args):
    return subprocess.run([COV, *args], capture_output=True, text=True)


def check(name, cond, detail=""):
    if not cond:
        FAILED.append(name)
        print("FAIL: %s %s" % (name, detail))
    else:
        print("ok: %s" % name)


def table_rows(out):
    """The per-layer table's rows: (group, node, codelets, where)."""
    rows = []
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("group node"))
    for l in lines[start + 1:]:
        if l.startswith("total:"):
            break
        f = l.split()
        where = l.split("  ")[-1].strip()
        rows.append((int(f[0]), f[1], f[2], where))
    return rows


def run_model(path, target, x, extra=()):
    xp = os.path.join(WORK, "x.npy")
    yp = os.path.join(WORK, "y.npy")
    np.save(xp, x)
    if os.path.exists(yp):
        os.remove(yp)
    r = cov("run", path, "--target", target, "--input", xp, "-o", yp, *extra)
    y = np.load(yp) if r.returncode == 0 else None
    return r, y


def rel_err(got, want):
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


def test_runs():
    mlp, mlp_ref = make_mlp()
    mixed = make_mixed()
    odd = make_odd()
    make_midmean()
    convnet = os.path.join(SRC, "examples", "convnet.onnx")
    x_mlp = RNG.uniform(-1, 1, (8, 48)).astype(np.float32)
    x_mixed = RNG.uniform(-1, 1, (1, 4, 16, 16)).astype(np.float32)
    x_conv = np.load(os.path.join(SRC, "examples", "convnet_input.npy"))
    y_conv = np.load(os.path.join(SRC, "examples", "convnet_output.npy"))
    for t in TARGETS:
        # The example ConvNet: two fused groups, the result vs the numpy reference.
        r, y = run_model(convnet, t, x_conv)
        check("convnet %s runs and passes its check vs ref" % t, r.returncode == 0, r.stderr)
        if y is not None:
            e = rel_err(y, y_conv)
            check("convnet %s vs numpy (%.2e)" % (t, e), e <= 1e-2)
            rows = table_rows(r.stdout)
            check("convnet %s: one fused row per group" % t,
                  [(g, w) for g, _, _, w in rows] == [(0, "npu, fused"), (1, "npu, fused")], rows)
            check("convnet %s: codelets listed" % t,
                  rows[0][2] == "conv2d+bias_add+relu+maxpool" and rows[1][2] == "conv2d+bias_add+relu",
                  rows)
            fused = int(re.search(r"^total: (\d+) cycles", r.stdout, re.M).group(1))
            r2, y2 = run_model(convnet, t, x_conv, ["--per-call"])
            per_call = int(re.search(r"^total: (\d+) cycles", r2.stdout, re.M).group(1))
            check("convnet %s: --per-call gives 7 rows, same result" % t,
                  r2.returncode == 0 and len(table_rows(r2.stdout)) == 7 and rel_err(y2, y_conv) <= 1e-2)
            check("convnet %s: fused (%d cycles) beats per call (%d)" % (t, fused, per_call),
                  fused < per_call)
            # The trace of the whole run: one span per program, back to back.
            tp = os.path.join(WORK, "trace_%s.json" % t)
            r3, _ = run_model(convnet, t, x_conv, ["--trace", tp])
            ok = r3.returncode == 0
            if ok:
                ev = json.load(open(tp))["traceEvents"]
                lane = next(e["tid"] for e in ev if e.get("ph") == "M" and e["args"]["name"] == "layers")
                spans = [e for e in ev if e.get("tid") == lane and e["ph"] == "X"]
                units = [e for e in ev if e["ph"] == "X" and e.get("tid") != lane]
                ok = (len(spans) == 2 and spans[0]["ts"] == 0 and
                      spans[1]["ts"] == spans[0]["dur"] and
                      spans[1]["ts"] + spans[1]["dur"] == fused and
                      max(e["ts"] + e["dur"] for e in units) <= fused and
                      any(e["ts"] >= spans[1]["ts"] for e in units))
            check("convnet %s: --trace spans the two programs back to back" % t, ok)
        # The MLP: gemm+bias+relu, gemm+bias, matmul+softmax, all fused.
        r, y = run_model(mlp, t, x_mlp)
        check("mlp %s runs and passes its check vs ref" % t, r.returncode == 0, r.stderr)
        if y is not None:
            e = rel_err(y, mlp_ref(x_mlp.astype(np.float64)))
            check("mlp %s vs numpy (%.2e)" % (t, e), e <= 1e-2)
            rows = table_rows(r.stdout)
            check("mlp %s: three fused groups" % t,
                  [(c, w) for _, _, c, w in rows] == [("gemm_bias+relu", "npu, fused"),
                                                      ("gemm_bias", "npu, fused"),
                                                      ("matmul+softmax", "npu, fused")], rows)
        # Mixed: group 0 cannot be fused whole (its pool): all but the pool
        # fused, the pool a program of its own; the Add is fused alone,
        # GlobalAveragePool is fused alone; the result still matches ref.
        r, y = run_model(mixed, t, x_mixed)
        check("mixed %s runs and passes its check vs ref" % t, r.returncode == 0, r.stderr)
        if y is not None:
            rows = table_rows(r.stdout)
            g0 = [w for g, _, _, w in rows if g == 0]
            g0c = [c for g, _, c, _ in rows if g == 0]
            check("mixed %s: group 0 in two programs (conv+bias+relu, then the pool), saying why" % t,
                  g0c == ["conv2d+bias_add+relu", "maxpool"] and len(g0) == 2 and
                  g0[0].startswith("npu, fused but the last call (group in 2 programs:") and
                  g0[1].startswith("npu, the last call alone (group in 2 programs:") and
                  all("maxpool after conv2d" in w for w in g0), rows)
            check("mixed %s: conv2 and the residual add fused" % t,
                  [(g, w) for g, _, _, w in rows if g in (1, 2)] ==
                  [(1, "npu, fused"), (2, "npu, fused")], rows)
            g3 = [w for g, _, _, w in rows if g == 3]
            check("mixed %s: global_avgpool fused on the NPU" % t, g3 == ["npu, fused"], g3)
            check("mixed %s: totals count the fallbacks" % t,
                  "3 groups fused, 2 calls one by one on the NPU, 0 calls on the CPU" in r.stdout)
        r, y = run_model(odd, t, RNG.uniform(-1, 1, (4, 15)).astype(np.float32))
        rows = table_rows(r.stdout) if r.returncode == 0 else []
        check("odd %s: softmax over axis 1 call by call, saying why" % t,
              len(rows) == 1 and rows[0][2] == "softmax" and
              rows[0][3].startswith("npu, call by call (group not fused:") and
              "the node rearranges it after the call" in rows[0][3], r.stdout + r.stderr)
    r = cov("map", odd, "--target", "npu-16x16")
    check("map odd: the softmax group is listed as not mapped",
          r.returncode == 0 and "group 1  softmax: not mapped: " in r.stdout and
          "1 layout groups run in the frontend" in r.stdout, r.stdout + r.stderr)
    return mlp, mixed, convnet


def test_map(mlp, mixed, convnet):
    for t in TARGETS:
        r = cov("map", convnet, "--target", t)
        check("map convnet %s" % t, r.returncode == 0 and
              "group 0  conv1  conv+bias+relu+maxpool  [conv2d, bias_add, relu, maxpool]" in r.stdout and
              "group 1  conv2  conv+bias+relu  [conv2d, bias_add, relu]" in r.stdout and
              re.search(r"^total: \d+ cycles predicted over 2 mapped groups; 0 not mapped", r.stdout, re.M),
              r.stdout + r.stderr)
        r = cov("map", mlp, "--target", t)
        check("map mlp %s: 3 groups" % t, r.returncode == 0 and "over 3 mapped groups" in r.stdout,
              r.stdout + r.stderr)
    r = cov("map", mixed, "--target", "npu-16x16")
    check("map mixed: unmappable groups listed with the reason, exit 0",
          r.returncode == 0 and
          "group 0  conv+bias+relu+maxpool: not mapped: " in r.stdout and
          "maxpool after conv2d" in r.stdout and
          "group 3  gap  globalaveragepool  [global_avgpool]" in r.stdout and
          "over 3 mapped groups; 1 not mapped" in r.stdout, r.stdout)
    r = cov("map", mixed, "--target", "npu-16x16", "--group", "0")
    check("map --group of an unmappable group: exit 1",
          r.returncode == 1 and "maxpool after conv2d" in r.stderr, r.stdout + r.stderr)
    r = cov("map", mixed, "--target", "npu-16x16", "--node", "res")
    check("map --node res", r.returncode == 0 and "group 2  res  add  [add]" in r.stdout, r.stdout)
    r = cov("map", convnet, "--target", "npu-16x16", "--node", "relu2", "--explain")
    check("map --node --explain: breakdown and alternatives",
          r.returncode == 0 and "group 1  conv2" in r.stdout and "cost:" in r.stdout and
          "next best alternatives:" in r.stdout and "chosen:" in r.stdout, r.stdout)
    r = cov("map", convnet, "--target", "npu-16x16", "--group", "0", "--dump=schedule")
    check("map --group --dump=schedule", r.returncode == 0 and "schedule conv1 on npu-16x16" in r.stdout
          and "epilogue 0 (maxpool" in r.stdout, r.stdout)  # the pool runs first (pool_first)
    r = cov("map", convnet, "--target", "npu-16x16", "--node", "nope")
    check("map --node unknown: exit 1, named",
          r.returncode == 1 and "no node named 'nope'" in r.stderr, r.stderr)
    r = cov("map", convnet, "--target", "npu-16x16", "--group", "5")
    check("map --group out of range: exit 1",
          r.returncode == 1 and "no layer group 5: the model has 2" in r.stderr, r.stderr)
    r = cov("map", "convnet_layer1", "--target", "npu-16x16", "--group", "0")
    check("map --group with a suite layer: usage error", r.returncode == 2, r.stderr)
    r = cov("map", convnet, "--target", "npu-16x16", "--group", "0", "--node", "conv1")
    check("map --group and --node: usage error", r.returncode == 2, r.stderr)


def main():
    global COV, SRC, WORK
    COV, SRC, WORK = sys.argv[1:4]
    os.makedirs(WORK, exist_ok=True)
    mlp, mixed, convnet = test_runs()
    test_map(mlp, mixed, convnet)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
