#!/usr/bin/env python3
"""Einsum, InstanceNormalization, GroupNormalization (opsets 18 and 21),
LpNormalization and f64 tensors against numpy: each model is built here with
onnx.helper, run with `covenant run --target ref`, and compared with numpy
computed in float64 (np.einsum; the normalizations written out from the
ONNX definitions). f64 models must keep f64 precision (errors far below
what f32 could give); on npu-16x16 an f64 group runs on the CPU with the
reason given, and its values are still right.

    /usr/bin/python3 test_norm_einsum.py COVENANT WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

ONNX_T = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
          np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int32): TensorProto.INT32}
# max |got - want| / max(|want|, 1e-30) allowed per dtype
TOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13, np.dtype(np.float16): 2e-3,
       np.dtype(np.int32): 0}


def model(path, node, xs, opset, out_dtype=None):
    ins = [helper.make_tensor_value_info("x%d" % i, ONNX_T[x.dtype], list(x.shape))
           for i, x in enumerate(xs)]
    dt = ONNX_T[np.dtype(out_dtype or xs[0].dtype)]
    outs = [helper.make_tensor_value_info("y", dt, None)]
    g = helper.make_graph([node], os.path.basename(path)[:-5], ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)


def run(cov, path, xs, work, target="ref"):
    cmd = [cov, "run", path, "--target", target]
    for i, x in enumerate(xs):
        p = os.path.join(work, "in%d.npy" % i)
        np.save(p, x)
        cmd += ["--input", p]
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    cmd += ["-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    got = np.load(os.path.join(out, "output_0.npy")) if r.returncode == 0 else None
    return r, got


# ---- references -------------------------------------------------------------

def instance_norm(x, s, b, eps):
    eps = float(np.float32(eps))  # the attribute is a float
    x = x.astype(np.float64)
    ax = tuple(range(2, x.ndim))
    y = (x - x.mean(ax, keepdims=True)) / np.sqrt(x.var(ax, keepdims=True) + eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y * s.reshape(shape) + b.reshape(shape)


def group_norm(x, s, b, groups, eps, per_group):
    eps = float(np.float32(eps))
    x = x.astype(np.float64)
    n, c = x.shape[:2]
    xr = x.reshape(n, groups, -1)
    y = ((xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + eps)).reshape(x.shape)
    if per_group:
        s, b = np.repeat(s, c // groups), np.repeat(b, c // groups)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * s.reshape(shape) + b.reshape(shape)


def lp_norm(x, axis, p):
    x = x.astype(np.float64)
    norm = np.sum(np.abs(x) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    return x / norm


# ---- cases ------------------------------------------------------------------

def einsum_cases(rng):
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    cases = [
        ("bij,bjk->bik", [r(2, 3, 4), r(2, 4, 5)]),
        ("bhid,bhjd->bhij", [r(2, 3, 4, 5), r(2, 3, 6, 5)]),
        ("ij->ji", [r(3, 4)]),
        ("i,i->", [r(7), r(7)]),
        ("i,i", [r(7), r(7)]),
        ("bn,anm,bm->ba", [r(2, 3), r(4, 3, 5), r(2, 5)]),
        ("i,j->ij", [r(3), r(4)]),
        ("ij->i", [r(3, 4)]),
        ("ij->", [r(3, 4)]),
        ("ii->i", [r(4, 4)]),
        ("ii", [r(4, 4)]),
        ("bii->bi", [r(2, 3, 3)]),
        ("...ii->...i", [r(2, 3, 4, 4)]),
        ("...ij,...jk->...ik", [r(2, 1, 3, 4), r(5, 4, 6)]),
        ("bij,bjk", [r(2, 3, 4), r(2, 4, 5)]),
        ("ijk->kji", [r(2, 3, 4)]),
        ("ij,ij->ij", [r(3, 4), r(3, 4)]),
        ("Ab,bc->cA", [r(3, 4), r(4, 2)]),
        ("bshd,bthd->bhst", [r(1, 5, 2, 3), r(1, 4, 2, 3)]),
        ("ij,jk->ik", [rng.integers(-5, 5, (3, 4)).astype(np.int32),
                       rng.integers(-5, 5, (4, 2)).astype(np.int32)]),
        ("ij,jk->ik", [r(5, 6).astype(np.float16), r(6, 3).astype(np.float16)]),
        ("bij,bjk->bik", [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))]),
    ]
    for eq, xs in cases:
        want = np.einsum(eq, *[x.astype(np.float64) if x.dtype != np.int32 else x for x in xs])
        node = helper.make_node("Einsum", ["x%d" % i for i in range(len(xs))], ["y"], name="ein",
                                equation=eq)
        yield "einsum %s %s" % (eq, xs[0].dtype), node, xs, 12, want, None


def norm_cases(rng):
    r = lambda *s: rng.standard_normal(s)  # noqa: E731
    f32 = np.float32
    for shape, dt, eps in [((2, 3, 4, 5), f32, 1e-5), ((2, 3, 7), np.float64, 1e-2),
                           ((1, 4, 2, 3, 2), f32, 1e-5)]:
        x, s, b = r(*shape).astype(dt), r(shape[1]).astype(dt), r(shape[1]).astype(dt)
        node = helper.make_node("InstanceNormalization", ["x0", "x1", "x2"], ["y"], name="inorm",
                                epsilon=eps)
        yield ("instancenorm %s %s" % (shape, np.dtype(dt)), node, [x, s, b], 6,
               instance_norm(x, s, b, eps), None)
    for shape, groups, opset, dt in [((2, 6, 3, 3), 3, 18, f32), ((2, 6, 4), 2, 21, f32),
                                     ((1, 4, 5), 4, 18, f32), ((3, 4, 2, 2), 1, 21, f32),
                                     ((2, 6, 3), 3, 21, np.float64), ((2, 4), 2, 18, f32)]:
        per_group = opset < 21
        k = groups if per_group else shape[1]
        x, s, b = r(*shape).astype(dt), r(k).astype(dt), r(k).astype(dt)
        node = helper.make_node("GroupNormalization", ["x0", "x1", "x2"], ["y"], name="gnorm",
                                num_groups=groups, epsilon=1e-4)
        yield ("groupnorm opset %d %s G=%d %s" % (opset, shape, groups, np.dtype(dt)), node,
               [x, s, b], opset, group_norm(x, s, b, groups, 1e-4, per_group), None)
    for shape, axis, p, dt in [((2, 3, 4), 1, 1, f32), ((2, 3, 4), -1, 2, f32),
                               ((3, 5), 0, 2, f32), ((4, 6), 1, 2, np.float64), ((7,), 0, 1, f32)]:
        x = r(*shape).astype(dt)
        node = helper.make_node("LpNormalization", ["x0"], ["y"], name="lp", axis=axis, p=p)
        yield ("lpnorm axis %d p %d %s" % (axis, p, np.dtype(dt)), node, [x], 13,
               lp_norm(x, axis, p), None)
    # LpNormalization's defaults: axis -1, p 2.
    x = r(3, 4).astype(f32)
    yield ("lpnorm defaults", helper.make_node("LpNormalization", ["x0"], ["y"], name="lp"), [x],
           13, lp_norm(x, -1, 2), None)


def f64_cases(rng):
    """Values whose f32 arithmetic would be visibly wrong."""
    x = np.array([1.0, 1e-10, -3.0, 2.0 ** -40], np.float64)
    y = np.array([1e-12, 1.0, 3.0 + 1e-9, 1.0], np.float64)
    yield ("f64 add", helper.make_node("Add", ["x0", "x1"], ["y"], name="add"), [x, y], 13,
           x + y, None)
    yield ("f64 reducesum", helper.make_node("ReduceSum", ["x0"], ["y"], name="rs", keepdims=0),
           [x], 11, np.sum(x), None)
    a = rng.standard_normal((8, 16))
    yield ("f64 matmul", helper.make_node("MatMul", ["x0", "x1"], ["y"], name="mm"),
           [a, a.T.copy()], 13, a @ a.T, None)
    yield ("f64 softmax", helper.make_node("Softmax", ["x0"], ["y"], name="sm"), [a * 20], 13,
           np.exp(a * 20 - (a * 20).max(-1, keepdims=True)) /
           np.exp(a * 20 - (a * 20).max(-1, keepdims=True)).sum(-1, keepdims=True), None)
    c = np.array([1.0 + 2.0 ** -30, 1e300, -2.5], np.float64)
    with np.errstate(over="ignore"):
        c32 = c.astype(np.float32)
    yield ("f64 cast to f32", helper.make_node("Cast", ["x0"], ["y"], name="cast", to=1), [c], 13,
           c32, np.float32)
    yield ("f64 cast to f16", helper.make_node("Cast", ["x0"], ["y"], name="cast", to=10),
           [np.array([1.0 + 2.0 ** -11 + 2.0 ** -40, 65519.99, 0.1], np.float64)], 13,
           np.array([1.0 + 2.0 ** -11 + 2.0 ** -40, 65519.99, 0.1], np.float64).astype(np.float16),
           np.float16)


def check(name, got, want, dt):
    want = np.asarray(want)
    if got is None:
        return "no output"
    if got.dtype != np.dtype(dt) or got.shape != want.shape:
        return "got %s%s, expected %s%s" % (got.dtype, got.shape, np.dtype(dt), want.shape)
    if np.dtype(dt) in (np.dtype(np.float16), np.dtype(np.float32)) and want.dtype == dt:
        exact = np.array_equal(got, want) or np.array_equal(got.view(np.uint16 if dt == np.float16
                                                                     else np.uint32),
                                                            want.view(np.uint16 if dt == np.float16
                                                                      else np.uint32))
        return None if exact else "not bit-exact: %s vs %s" % (got, want)
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0))
    scale = max(float(np.max(np.abs(want), initial=0)), 1e-30)
    if err / scale > TOL[np.dtype(dt)]:
        return "max rel err %.3g > %.3g" % (err / scale, TOL[np.dtype(dt)])
    return None


def main():
    cov, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(17)
    fails = 0
    cases = list(einsum_cases(rng)) + list(norm_cases(rng)) + list(f64_cases(rng))
    for i, (name, node, xs, opset, want, out_dt) in enumerate(cases):
        path = os.path.join(work, "case%d.onnx" % i)
        dt = np.dtype(out_dt or xs[0].dtype)
        model(path, node, xs, opset, dt)
        r, got = run(cov, path, xs, work)
        if r.returncode != 0:
            print("FAIL %s: exit %d\n%s" % (name, r.returncode, r.stderr))
            fails += 1
            continue
        if want.dtype != dt and dt in (np.dtype(np.float32), np.dtype(np.float64)):
            want = want.astype(np.float64)
        why = check(name, got, want, dt)
        print("%s %s%s" % ("FAIL" if why else "ok  ", name, ": " + why if why else ""))
        fails += why is not None
    # f64 on an NPU: the group runs on the CPU, saying why, with f64 results.
    a = rng.standard_normal((4, 8))
    path = os.path.join(work, "npu_f64.onnx")
    model(path, helper.make_node("MatMul", ["x0", "x1"], ["y"], name="mm64"), [a, a.T.copy()], 13)
    r, got = run(cov, path, [a, a.T.copy()], work, "npu-16x16")
    why = "exit %d: %s" % (r.returncode, r.stderr) if r.returncode else None
    if not why and "input 0 is f64" not in r.stdout:
        why = "the CPU fallback's reason is not reported:\n" + r.stdout
    why = why or check("npu f64", got, a @ a.T, np.float64)
    print("%s f64 MatMul on npu-16x16 (CPU fallback)%s" % ("FAIL" if why else "ok  ",
                                                          ": " + why if why else ""))
    fails += why is not None
    # f64 computed from f32 data on a GPU target: refused, naming the group.
    n_checks = len(cases) + 1
    targets = subprocess.run([cov, "targets"], capture_output=True, text=True).stdout
    if "amdgpu-gfx942" in targets:
        n_checks += 1
        nodes = [helper.make_node("Cast", ["x"], ["a"], name="to64", to=TensorProto.DOUBLE),
                 helper.make_node("Mul", ["a", "a"], ["b"], name="sq64"),
                 helper.make_node("Cast", ["b"], ["y"], name="to32", to=TensorProto.FLOAT)]
        g = helper.make_graph(nodes, "gpu_f64", [helper.make_tensor_value_info("x", 1, [2, 8])],
                              [helper.make_tensor_value_info("y", 1, [2, 8])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        path = os.path.join(work, "gpu_f64.onnx")
        onnx.save(m, path)
        r = subprocess.run([cov, "compile", path, "--target", "amdgpu-gfx942", "-o",
                            os.path.join(work, "gpu_f64.covart")], capture_output=True, text=True)
        why = None
        if r.returncode != 1 or "sq64" not in r.stderr or "its result is f64" not in r.stderr:
            why = "exit %d, expected 1 naming 'sq64' and f64:\n%s" % (r.returncode, r.stderr)
        print("%s f64 group refused on amdgpu-gfx942%s" % ("FAIL" if why else "ok  ",
                                                           ": " + why if why else ""))
        fails += why is not None
    print("%d cases, %d failures" % (n_checks, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
