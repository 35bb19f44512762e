#!/usr/bin/env python3
"""Control flow against numpy: If, Loop and Scan models built here with
onnx.helper, run with `covenant run` on the reference target and on both
NPUs, and compared with numpy written out from the ONNX definitions.

- a data-dependent Loop (no trip count: the body's condition stops it)
  whose body multiplies the carried state by a weight matrix of the outer
  scope (a captured initializer: the body's MatMul is a layer with a
  constant weight on the NPU), with a scan output and an outer-scope
  activation read inside the body;
- a Loop with a constant trip count and an If in its body (nested
  subgraphs: the If's branches read the Loop's state and the outer input);
- Scan (opset 9 and 16) with a reversed input, a reversed output and an
  output stacked on axis 1, and opset 8's batched Scan;
- sequences as exported loops keep lists: a Loop appending to a sequence
  (SequenceInsert) stacked after it (ConcatFromSequence with new_axis),
  SplitToSequence, SequenceAt, SequenceErase, SequenceLength, and an
  optional (Optional, OptionalHasElement, OptionalGetElement), SequenceMap
  over a split with a tensor input.

    /usr/bin/python3 test_control.py COVENANT WORKDIR [TARGET...]
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def vi(name, t=F, shape=None):
    return helper.make_tensor_value_info(name, t, shape)


def save(path, nodes, ins, outs, inits=(), opset=17):
    g = helper.make_graph(nodes, os.path.basename(path)[:-5], ins, outs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8

    onnx.save(m, path)


def run(cov, path, xs, work, target):
    cmd = [cov, "run", path, "--target", target]
    for i, x in enumerate(xs):
        p = os.path.join(work, "in%d.npy" % i)
        np.save(p, x)
        cmd += ["--input", p]
    out = os.path.join(work, "out_%s_%s" % (os.path.basename(path)[:-5], target))
    os.makedirs(out, exist_ok=True)
    cmd += ["-o", out]
    if target != "ref":
        cmd += ["--tolerance", "1e-2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return r, None
    outs, k = [], 0
    while os.path.exists(os.path.join(out, "output_%d.npy" % k)):
        outs.append(np.load(os.path.join(out, "output_%d.npy" % k)))
        k += 1
    return r, outs


# ---- models and references --------------------------------------------------

def while_loop(work):
    """y = x; while sum(y) < limit: y = relu(y @ W) + x * 0.5; scan: sum(y)."""
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((16, 16)) * 0.3 + 0.1).astype(np.float32)
    x = np.abs(rng.standard_normal((4, 16))).astype(np.float32) * 0.1
    limit = np.array(200.0, np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["mm"]),
         helper.make_node("Relu", ["mm"], ["r"]),
         helper.make_node("Mul", ["x", "half"], ["xh"]),
         helper.make_node("Add", ["r", "xh"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["cond_out"]),
         helper.make_node("Identity", ["s"], ["scan_s"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("y_in", F, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("y_out", F, None), vi("scan_s", F, [])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s0"], keepdims=0),
             helper.make_node("Less", ["s0", "limit"], ["c0"]),
             helper.make_node("Loop", ["", "c0", "x"], ["y", "sums"], body=body)]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(limit, "limit"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    path = os.path.join(work, "while_loop.onnx")
    save(path, nodes, [vi("x", F, [4, 16])], [vi("y", F, None), vi("sums", F, None)], inits)
    y, sums = x.astype(np.float64), []
    while y.sum() < limit:
        y = np.maximum(y @ w, 0) + x * 0.5
        sums.append(y.sum())
    assert 2 < len(sums) < 40, len(sums)
    return path, [x], [y, np.array(sums)]


def loop_if(work):
    """for i in range(5): y = (i % 2 == 0) ? y * 2 + x : y - 1  (If nested in Loop)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["y_in", "two"], ["t0"]), helper.make_node("Add", ["t0", "x"], ["t"])],
        "then", [], [vi("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Sub", ["y_in", "one"], ["e"])], "else", [],
                               [vi("e", F, None)])
    body = helper.make_graph(
        [helper.make_node("Mod", ["i", "two_i"], ["m"]),
         helper.make_node("Equal", ["m", "zero_i"], ["even"]),
         helper.make_node("If", ["even"], ["y_out"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("y_in", F, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("y_out", F, None)])
    inits = [numpy_helper.from_array(np.array(5, np.int64), "M"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(2, np.int64), "two_i"),
             numpy_helper.from_array(np.array(0, np.int64), "zero_i")]
    nodes = [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)]
    path = os.path.join(work, "loop_if.onnx")
    save(path, nodes, [vi("x", F, [2, 3])], [vi("y", F, None)], inits)
    y = x.astype(np.float64)
    for i in range(5):
        y = y * 2 + x if i % 2 == 0 else y - 1
    return path, [x], [y]


def scan(work, opset):
    """Cumulative sums over x (reversed input), the running state as scan
    output 0 (reversed) and x * state stacked on axis 1."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    s0 = np.zeros(3, np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["o0"]),
         helper.make_node("Mul", ["xi", "s_out"], ["o1"])],
        "body", [vi("s_in", F, [3]), vi("xi", F, [3])],
        [vi("s_out", F, [3]), vi("o0", F, [3]), vi("o1", F, [3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "o0", "o1"], body=body, num_scan_inputs=1,
                            scan_input_directions=[1], scan_output_directions=[1, 0],
                            scan_output_axes=[0, 1])
    path = os.path.join(work, "scan%d.onnx" % opset)
    save(path, [node], [vi("s0", F, [3]), vi("x", F, [4, 3])],
         [vi("s", F, None), vi("o0", F, None), vi("o1", F, None)], opset=opset)
    s, o0, o1 = s0.astype(np.float64), [], []
    for t in range(4):
        xi = x[3 - t]
        s = s + xi
        o0.append(s)
        o1.append(xi * s)
    return path, [s0, x], [s, np.stack(o0[::-1]), np.stack(o1, axis=1)]


def scan8(work):
    """Opset 8: a batch of 2 sequences, state and scan output per batch."""
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    s0 = np.ones((2, 3), np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["o"])],
        "body", [vi("s_in", F, [3]), vi("xi", F, [3])], [vi("s_out", F, [3]), vi("o", F, [3])])
    node = helper.make_node("Scan", ["", "s0", "x"], ["s", "o"], body=body, num_scan_inputs=1,
                            directions=[1])
    path = os.path.join(work, "scan8.onnx")
    save(path, [node], [vi("s0", F, [2, 3]), vi("x", F, [2, 4, 3])], [vi("s", F, None), vi("o", F, None)],
         opset=8)
    s = s0.astype(np.float64).copy()
    o = np.zeros((2, 4, 3))
    for b in range(2):
        for t in range(4):
            s[b] = s[b] + x[b, 3 - t]
            o[b, t] = s[b]
    return path, [s0, x], [s, o]


def for_loop(work):
    """for i in range(3): y = relu(y @ W + i)  (a constant trip count: the
    Loop is unrolled when read, its three copies of MatMul layers fused and
    compiled like any other; `covenant inspect` must show no Loop)."""
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((8, 8)) * 0.5).astype(np.float32)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["mm"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["mm", "fi"], ["a"]),
         helper.make_node("Relu", ["a"], ["y_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("y_in", F, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("y_out", F, None)])
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(3, np.int64), "M")]
    path = os.path.join(work, "for_loop.onnx")
    save(path, [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)], [vi("x", F, [2, 8])],
         [vi("y", F, None)], inits)
    y = x.astype(np.float64)
    for i in range(3):
        y = np.maximum(y @ w + i, 0)
    return path, [x], [y]


def for_cond_ignored(work):
    """Loop(M=3, no condition input) whose body's condition turns false:
    ONNX's for loop ignores it, so y = x + 3 (run driven from the host: the
    body does not pass its condition through, so it is not unrolled)."""
    x = np.arange(4, dtype=np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["y_in", "one"], ["y_out"]), helper.make_node("Not", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("y_in", F, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("y_out", F, None)])
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(3, np.int64), "M")]
    path = os.path.join(work, "for_cond_ignored.onnx")
    save(path, [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)], [vi("x", F, [4])],
         [vi("y", F, None)], inits)
    return path, [x], [x + 3.0]


def sequences(work):
    """ys = []; for i in range(4): x = x * 2 - 1; ys.append(x)
    out0 = stack(ys); parts = split(x0, [1, 2], axis=1): out1 = parts[-1] + len(erase(parts, 0));
    out2 = optional(x0) has element ? get(optional(x0)) : x0 (x0 itself)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_in", "two"], ["m"]), helper.make_node("Sub", ["m", "one"], ["x_out"]),
         helper.make_node("SequenceInsert", ["seq_in", "x_out"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("x_in", F, None),
                 helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("x_out", F, None),
         helper.make_tensor_sequence_value_info("seq_out", F, None)])
    # SequenceMap: each piece of x (split along axis 1) times x's first column
    map_body = helper.make_graph(
        [helper.make_node("Slice", ["t", "s0", "s1", "ax1"], ["col"]),
         helper.make_node("Mul", ["p", "col"], ["q"])],
        "map", [vi("p", F, None), vi("t", F, [2, 3])], [vi("q", F, None)],
        [numpy_helper.from_array(np.array([0], np.int64), "s0"),
         numpy_helper.from_array(np.array([1], np.int64), "s1"),
         numpy_helper.from_array(np.array([1], np.int64), "ax1")])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["M", "", "x", "empty"], ["xl", "ys"], body=body),
             helper.make_node("ConcatFromSequence", ["ys"], ["stacked"], axis=0, new_axis=1),
             helper.make_node("SplitToSequence", ["x", "splits"], ["parts"], axis=1),
             helper.make_node("SequenceAt", ["parts", "minus1"], ["last"]),
             helper.make_node("SequenceErase", ["parts", "zero"], ["rest"]),
             helper.make_node("SequenceLength", ["rest"], ["len"]),
             helper.make_node("Cast", ["len"], ["lenf"], to=F),
             helper.make_node("Add", ["last", "lenf"], ["out1"]),
             helper.make_node("Optional", ["x"], ["opt"]),
             helper.make_node("OptionalHasElement", ["opt"], ["has"]),
             helper.make_node("OptionalGetElement", ["opt"], ["got"]),
             helper.make_node("Cast", ["has"], ["hasf"], to=F),
             helper.make_node("Mul", ["got", "hasf"], ["out2"]),
             helper.make_node("SequenceMap", ["parts", "x"], ["mapped"], body=map_body),
             helper.make_node("ConcatFromSequence", ["mapped"], ["out3"], axis=1)]
    inits = [numpy_helper.from_array(np.array(4, np.int64), "M"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "splits"),
             numpy_helper.from_array(np.array(-1, np.int64), "minus1"),
             numpy_helper.from_array(np.array(0, np.int64), "zero")]
    path = os.path.join(work, "sequences.onnx")
    save(path, nodes, [vi("x", F, [2, 3])], [vi("stacked", F, None), vi("out1", F, None), vi("out2", F, None),
                                             vi("out3", F, None)], inits, opset=18)
    ys, y = [], x.astype(np.float64)
    for _ in range(4):
        y = y * 2 - 1
        ys.append(y)
    return path, [x], [np.stack(ys), x[:, 1:] + 1, x, x * x[:, :1]]


def main():
    cov, work = sys.argv[1:3]
    targets = sys.argv[3:] or ["ref", "npu-16x16", "npu-32x32-os"]
    os.makedirs(work, exist_ok=True)
    cases = [while_loop(work), loop_if(work), scan(work, 9), scan(work, 16), scan8(work),
             sequences(work), for_cond_ignored(work), for_loop(work)]
    r = subprocess.run([cov, "inspect", cases[-1][0]], capture_output=True, text=True)
    ops = [ln for ln in r.stdout.splitlines() if ln.startswith("operators:")]
    unrolled = r.returncode == 0 and ops and "Loop" not in ops[0] and "MatMul x3" in ops[0]
    print("%s for_loop.onnx unrolled when read (no Loop left, three MatMuls)" % ("ok  " if unrolled else "FAIL"))
    failed = not unrolled
    for path, xs, wants in cases:
        for t in targets:
            r, gots = run(cov, path, xs, work, t)
            name = "%s on %s" % (os.path.basename(path), t)
            if gots is None:
                print("FAIL %s: exit %d: %s" % (name, r.returncode, r.stderr.strip()[-2000:]))
                failed = True
                continue
            # f16 multiplicands on the NPUs: relative error well under 1e-2
            tol = 1e-5 if t == "ref" else 1e-2
            for k, (got, want) in enumerate(zip(gots, wants)):
                ok = got.shape == want.shape and got.dtype == np.float32
                err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)) if ok else -1
                print("%s %s output %d: shape %s, relative error %.3g" %
                      ("ok  " if ok and err <= tol else "FAIL", name, k, got.shape, err))
                failed |= not (ok and err <= tol)
            if len(gots) != len(wants):
                print("FAIL %s: %d outputs, expected %d" % (name, len(gots), len(wants)))
                failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
