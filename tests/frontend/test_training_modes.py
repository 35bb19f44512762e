#!/usr/bin/env python3
"""BatchNormalization in training mode and Dropout in training mode with
ratio 0 against numpy, on `--target ref` and on every target named after
WORKDIR (npu-16x16, npu-32x32-os).

BatchNormalization with training_mode=1 normalizes with the batch's own
statistics (mean and biased variance over every axis but the channel one)
and gives the running statistics input * momentum + batch * (1 - momentum);
the reference below is written from the ONNX definition in float64. Shapes
of rank 2, 3 and 4, the Y output alone or with the running statistics, an
f16 X with f32 statistics (opset 15's T and T2), and a Conv before it (which
must not be folded into the Conv as inference mode is). Dropout with
training_mode true and ratio 0 drops nothing: the output is the input, the
mask all true, whether the two are constants or fed at run time.

    /usr/bin/python3 test_training_modes.py COVENANT WORKDIR [TARGET ...]
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
     np.dtype(np.bool_): TensorProto.BOOL}


def bn_train(x, s, b, m, v, eps, mom):
    x64 = x.astype(np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    mean, var = x64.mean(axis=axes), x64.var(axis=axes)
    sh = (1, -1) + (1,) * (x.ndim - 2)
    y = (x64 - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * s.reshape(sh) + b.reshape(sh)
    return y, m * mom + mean * (1 - mom), v * mom + var * (1 - mom)


def save(path, nodes, feeds, consts, outs, opset):
    ins = [helper.make_tensor_value_info(k, T[a.dtype], list(a.shape)) for k, a in feeds]
    g = helper.make_graph(nodes, os.path.basename(path)[:-5], ins,
                          [helper.make_tensor_value_info(o, 0, None) for o in outs],
                          initializer=[numpy_helper.from_array(a, k) for k, a in consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)


def run(cov, path, feeds, n_out, target):
    work = os.path.dirname(path)
    base = os.path.basename(path)[:-5]
    cmd = [cov, "run", path, "--target", target]
    for i, (_, a) in enumerate(feeds):
        p = os.path.join(work, "%s_in%d.npy" % (base, i))
        np.save(p, a)
        cmd += ["--input", p]
    out = os.path.join(work, "%s_%s" % (base, target))
    os.makedirs(out, exist_ok=True)
    r = subprocess.run(cmd + ["-o", out], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.strip()[-600:]), None
    return None, [np.load(os.path.join(out, "output_%d.npy" % k)) for k in range(n_out)]


def close(got, want, tol):
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    err = np.abs(got.astype(np.float64) - want).max() if want.size else 0.0
    scale = max(np.abs(want).max() if want.size else 0.0, 1.0)
    return None if err <= tol * scale else "max error %.3g (tolerance %.3g)" % (err, tol * scale)


def bn_case(rng, name, shape, n_out, xdt=np.float32, eps=1e-5, mom=0.9, conv=False):
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(xdt)
    s, b, m = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    v = rng.uniform(0.5, 2.0, c).astype(np.float32)
    if xdt != np.float32 and n_out == 1:  # opset 15: scale/B as X's type, stats another
        s, b = s.astype(xdt), b.astype(xdt)
    feeds = [("x", x)]
    consts = [("s", s), ("b", b), ("m", m), ("v", v)]
    nodes, src = [], "x"
    want_x = x
    if conv:  # a 1x1 Conv with constant weights in front
        w = rng.standard_normal((c, c, 1, 1)).astype(np.float32)
        consts.append(("w", w))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["cx"]))
        src = "cx"
        want_x = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype(np.float64), x)
    outs = ["y", "rm", "rv"][:n_out]
    nodes.append(helper.make_node("BatchNormalization", [src, "s", "b", "m", "v"], outs,
                                  training_mode=1, epsilon=eps, momentum=mom))
    y, rm, rv = bn_train(want_x, s.astype(np.float64), b.astype(np.float64), m.astype(np.float64),
                         v.astype(np.float64), np.float64(np.float32(eps)),
                         np.float64(np.float32(mom)))
    return name, nodes, feeds, consts, outs, [y, rm, rv][:n_out], 15 if xdt != np.float32 else 14


def dropout_cases(rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    r0, t1 = np.array(0, np.float32), np.array(True)
    mask = np.ones(x.shape, np.bool_)
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "z"])
    return [("dropout_const_ratio0", [node], [("x", x)], [("r", r0), ("t", t1)], ["y", "z"],
             [x, mask], 13),
            ("dropout_fed_ratio0", [node], [("x", x), ("r", r0), ("t", t1)], [], ["y", "z"],
             [x, mask], 13),
            ("dropout_const_ratio0_y", [helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
             [("x", x)], [("r", r0), ("t", t1)], ["y"], [x], 13)]


def main():
    cov, work = sys.argv[1], sys.argv[2]
    targets = ["ref"] + sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261207)
    cases = [bn_case(rng, "bn_rank4_all", (2, 3, 4, 5), 3, eps=1e-3, mom=0.8),
             bn_case(rng, "bn_rank3_y", (4, 2, 7), 1),
             bn_case(rng, "bn_rank2_all", (6, 3), 3, mom=0.0),
             bn_case(rng, "bn_f16_x_f32_stats", (2, 4, 3, 3), 3, xdt=np.float16),
             bn_case(rng, "bn_after_conv_y", (2, 3, 4, 4), 1, conv=True)]
    cases += dropout_cases(rng)
    fails = 0
    for name, nodes, feeds, consts, outs, want, opset in cases:
        path = os.path.join(work, name + ".onnx")
        save(path, nodes, feeds, consts, outs, opset)
        for target in targets:
            why, got = run(cov, path, feeds, len(outs), target)
            for k in range(len(outs)):
                if why:
                    break
                if want[k].dtype == np.bool_:
                    ok = got[k].dtype == np.bool_ and np.array_equal(got[k], want[k])
                    why = None if ok else "output %d: the mask differs" % k
                    continue
                # an f16 X: the batch statistics are f16 too (its running
                # statistics in f32 carry their rounding)
                f16 = feeds[0][1].dtype == np.float16
                tol = 4e-3 if f16 else 1e-5 if target == "ref" else 2e-2
                w = want[k]
                why = close(got[k], w, tol)
                why = why and "output %d: %s" % (k, why)
            print("%s %s on %s%s" % ("FAIL" if why else "ok  ", name, target,
                                     ": " + why if why else ""))
            fails += bool(why)
    print("%d training-mode cases on %d targets, %d failures" % (len(cases), len(targets), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
