#!/usr/bin/python3
"""tests/codelets/numpy_check.py COVENANT GROUP...: every shipped codelet run
by `covenant codelet run` against an independent numpy reference.

The references are written the numpy way (padding with np.pad, strided
slices, einsum, broadcasting), not as transcriptions of the codelets' loop
nests, and computed in float64. f32 results must match to ~1e-5; f16 and
bf16 results to about one unit in the last place of their format; integer
results exactly (including wrap-around on narrowing). Groups: conv, pool,
gemm, elementwise, activation, norm, f16, bf16, int, errors."""
import math
import sys

sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__

import numpy as np

from npy_util import Checker, main_guard, round_bf16

RNG = np.random.default_rng(20261122)
F32 = dict(rtol=1e-5, atol=1e-5)


def rand(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


# ---- references --------------------------------------------------------------

def conv2d_ref(x, w, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    pt, pl, pb, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    p = (h + pt + pb - dil[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + pl + pr - dil[1] * (s - 1) - 1) // stride[1] + 1
    y = np.zeros((n, k, p, q))
    kg = k // groups
    for g in range(groups):
        for i in range(r):
            for j in range(s):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * dil[0]:i * dil[0] + stride[0] * (p - 1) + 1:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * (q - 1) + 1:stride[1]]
                y[:, g * kg:(g + 1) * kg] += np.einsum("ncpq,kc->nkpq", patch,
                                                       w[g * kg:(g + 1) * kg, :, i, j])
    return y


def pool_windows(xp, kh, kw, stride, dil, p, q):
    for i in range(kh):
        for j in range(kw):
            yield xp[:, :, i * dil[0]:i * dil[0] + stride[0] * (p - 1) + 1:stride[0],
                     j * dil[1]:j * dil[1] + stride[1] * (q - 1) + 1:stride[1]]


def maxpool_ref(x, kh, kw, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1)):
    n, c, h, w = x.shape
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)),
                constant_values=-np.inf)
    p = (h + pt + pb - dil[0] * (kh - 1) - 1) // stride[0] + 1
    q = (w + pl + pr - dil[1] * (kw - 1) - 1) // stride[1] + 1
    return np.maximum.reduce(list(pool_windows(xp, kh, kw, stride, dil, p, q)))


def avgpool_ref(x, kh, kw, stride=(1, 1), pads=(0, 0, 0, 0), count_include_pad=0):
    n, c, h, w = x.shape
    pt, pl, pb, pr = pads
    padding = ((0, 0), (0, 0), (pt, pb), (pl, pr))
    xp = np.pad(x.astype(np.float64), padding)
    ones = np.pad(np.ones_like(x, dtype=np.float64), padding)
    p = (h + pt + pb - kh) // stride[0] + 1
    q = (w + pl + pr - kw) // stride[1] + 1
    total = sum(pool_windows(xp, kh, kw, stride, (1, 1), p, q))
    count = sum(pool_windows(ones, kh, kw, stride, (1, 1), p, q))
    return total / (kh * kw if count_include_pad else count)


def bcast4(shape):
    return (1,) * (4 - len(shape)) + tuple(shape)


def erf(x):
    return np.vectorize(math.erf)(x)


# ---- groups ------------------------------------------------------------------

def conv_attrs(stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    return dict(stride_h=stride[0], stride_w=stride[1], pad_top=pads[0], pad_left=pads[1],
                pad_bottom=pads[2], pad_right=pads[3], dilation_h=dil[0], dilation_w=dil[1],
                groups=groups)


def group_conv(ck):
    cases = [
        # label, x shape, w shape, stride, pads, dilation, groups
        ("1x1", (1, 8, 5, 5), (4, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ("3x3 pad1", (2, 3, 8, 8), (5, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
        ("3x3 stride2 pad1", (1, 4, 9, 9), (6, 4, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
        ("7x7 stride2 pad3 (resnet stem)", (1, 3, 20, 20), (8, 3, 7, 7), (2, 2), (3, 3, 3, 3),
         (1, 1), 1),
        ("pad larger than 1, asymmetric", (1, 2, 5, 6), (3, 2, 3, 3), (1, 1), (2, 3, 1, 2),
         (1, 1), 1),
        ("non-square everything", (1, 3, 7, 11), (4, 3, 2, 5), (2, 3), (1, 2, 0, 1), (1, 1), 1),
        ("dilation 2", (1, 3, 10, 9), (4, 3, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
        ("dilation 2x3 stride 2", (1, 2, 12, 13), (3, 2, 3, 2), (2, 1), (1, 0, 1, 0), (2, 3), 1),
        ("groups 2", (2, 6, 6, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
        ("groups 3 stride 2", (1, 6, 7, 7), (9, 2, 3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 3),
        ("depthwise 3x3", (1, 8, 7, 7), (8, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 8),
        ("depthwise multiplier 2 stride 2", (1, 4, 8, 8), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1),
         (1, 1), 4),
        ("1x1 input 1x1 kernel", (1, 1, 1, 1), (1, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ("kernel equals padded input", (1, 2, 3, 3), (2, 2, 5, 5), (1, 1), (1, 1, 1, 1), (1, 1),
         1),
    ]
    for label, xs, ws, st, pads, dil, g in cases:
        x, w = rand(*xs), rand(*ws)
        out = ck.run("conv2d", [("x", x), ("w", w)], conv_attrs(st, pads, dil, g))
        ck.close("conv2d " + label, out and out["y"], conv2d_ref(x, w, st, pads, dil, g), **F32,
                 dtype=np.float32)
    # a bias then relu after it, as the frontend chains them
    x, w, b = rand(1, 3, 6, 6), rand(4, 3, 3, 3), rand(4)
    y = ck.run("conv2d", [("x", x), ("w", w)], conv_attrs(pads=(1, 1, 1, 1)))
    if y:
        yb = ck.run("bias_add", [("x", y["y"]), ("b", b)])
        ck.close("bias_add after conv2d", yb and yb["y"],
                 conv2d_ref(x, w, pads=(1, 1, 1, 1)) + b.reshape(1, 4, 1, 1), **F32)
    m, bb = rand(5, 7), rand(7)
    out = ck.run("bias_add_2d", [("x", m), ("b", bb)])
    ck.close("bias_add_2d", out and out["y"], m.astype(np.float64) + bb, **F32)


def group_pool(ck):
    for label, xs, k, st, pads, dil in [
        ("3x3 stride2 pad1 (resnet stem)", (1, 3, 9, 9), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
        ("2x2 stride2 (maxpool2x2)", (2, 3, 8, 6), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
        ("2x2 stride2 odd size", (1, 2, 7, 5), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
        ("non-square asymmetric pads", (1, 2, 6, 9), (2, 4), (1, 2), (1, 0, 0, 3), (1, 1)),
        ("dilation 2", (1, 2, 9, 9), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
        ("1x1 kernel", (1, 2, 4, 4), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ]:
        # all-negative inputs: zero padding would win the max, -inf padding must not
        x = rand(*xs, lo=-5.0, hi=-0.5)
        attrs = dict(kernel_h=k[0], kernel_w=k[1], stride_h=st[0], stride_w=st[1],
                     pad_top=pads[0], pad_left=pads[1], pad_bottom=pads[2], pad_right=pads[3],
                     dilation_h=dil[0], dilation_w=dil[1])
        out = ck.run("maxpool", [("x", x)], attrs)
        ck.close("maxpool " + label, out and out["y"], maxpool_ref(x, k[0], k[1], st, pads, dil),
                 rtol=0, atol=0)
    for label, xs, k, st, pads in [
        ("3x3 stride1 pad1", (1, 3, 6, 6), (3, 3), (1, 1), (1, 1, 1, 1)),
        ("2x2 stride2", (2, 2, 8, 8), (2, 2), (2, 2), (0, 0, 0, 0)),
        ("non-square asymmetric pads", (1, 2, 5, 8), (3, 2), (2, 1), (2, 1, 1, 0)),
    ]:
        x = rand(*xs)
        for cip in (0, 1):
            attrs = dict(kernel_h=k[0], kernel_w=k[1], stride_h=st[0], stride_w=st[1],
                         pad_top=pads[0], pad_left=pads[1], pad_bottom=pads[2],
                         pad_right=pads[3], count_include_pad=cip)
            out = ck.run("avgpool", [("x", x)], attrs)
            ck.close("avgpool %s count_include_pad=%d" % (label, cip), out and out["y"],
                     avgpool_ref(x, k[0], k[1], st, pads, cip), **F32)
    for xs in [(1, 4, 7, 7), (2, 3, 1, 1), (1, 2, 3, 5)]:
        x = rand(*xs)
        out = ck.run("global_avgpool", [("x", x)])
        ck.close("global_avgpool %s" % (xs,), out and out["y"],
                 x.astype(np.float64).mean(axis=(2, 3), keepdims=True), **F32)
        out = ck.run("global_maxpool", [("x", x)])
        ck.close("global_maxpool %s" % (xs,), out and out["y"],
                 x.astype(np.float64).max(axis=(2, 3), keepdims=True), rtol=0, atol=0)


def group_gemm(ck):
    for m, k, n in [(1, 1, 1), (4, 7, 5), (16, 33, 9)]:
        a, b = rand(m, k), rand(k, n)
        out = ck.run("matmul", [("a", a), ("b", b)])
        ck.close("matmul %dx%dx%d" % (m, k, n), out and out["y"],
                 a.astype(np.float64) @ b.astype(np.float64), **F32)
    for ta in (0, 1):
        for tb in (0, 1):
            m, k, n = 5, 6, 3
            a = rand(k, m) if ta else rand(m, k)
            b = rand(n, k) if tb else rand(k, n)
            alpha = 0.75
            ref = alpha * ((a.T if ta else a).astype(np.float64) @ (b.T if tb else b))
            out = ck.run("gemm", [("a", a), ("b", b)], dict(transA=ta, transB=tb, alpha=alpha))
            ck.close("gemm transA=%d transB=%d alpha" % (ta, tb), out and out["y"], ref, **F32)
    m, k, n = 4, 5, 6
    for cs in [(m, n), (1, n), (m, 1), (1, 1)]:
        a, b, c = rand(k, m), rand(k, n), rand(*cs)
        ref = 1.5 * (a.T.astype(np.float64) @ b) + 0.5 * c
        out = ck.run("gemm_bias", [("a", a), ("b", b), ("c", c)],
                     dict(transA=1, alpha=1.5, beta=0.5))
        ck.close("gemm_bias c%s" % (cs,), out and out["y"], ref, **F32)
    for ba, bb in [(3, 3), (1, 4), (2, 1)]:
        a, b = rand(ba, 4, 5), rand(bb, 5, 3)
        out = ck.run("batch_matmul", [("a", a), ("b", b)])
        ck.close("batch_matmul batches %d,%d" % (ba, bb), out and out["y"],
                 np.matmul(a.astype(np.float64), b), **F32)


def group_elementwise(ck):
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "max": np.maximum, "min": np.minimum}
    shapes = [((2, 3, 4, 5), (2, 3, 4, 5)), ((2, 3, 4, 5), (1, 3, 1, 5)),
              ((1, 1, 1, 5), (2, 3, 4, 1)), ((3, 1, 4, 1), (1, 2, 1, 6)),
              ((2, 3, 4, 5), (1, 1, 1, 1)), ((1, 3, 1, 1), (0, 3, 2, 1))]
    for name, fn in ops.items():
        for sa, sb in shapes:
            a = rand(*sa)
            b = rand(*sb, lo=0.5, hi=2.0) if name == "div" else rand(*sb)
            out = ck.run(name, [("a", a), ("b", b)])
            ck.close("%s %s %s" % (name, sa, sb), out and out["y"],
                     fn(a.astype(np.float64), b.astype(np.float64)), **F32)
    # numpy rank broadcasting, as the frontend does it: pad both to rank 4
    a, b = rand(3, 4), rand(4)
    out = ck.run("add", [("a", a.reshape(bcast4(a.shape))), ("b", b.reshape(bcast4(b.shape)))])
    ck.close("add [3,4] + [4] padded to rank 4", out and out["y"].reshape(3, 4),
             a.astype(np.float64) + b, **F32)


def group_activation(ck):
    x = np.concatenate([rand(97, lo=-8.0, hi=8.0), np.float32([0.0, -0.0, 6.0, 7.5, -1e-3])])
    x64 = x.astype(np.float64)
    refs = {
        "relu": np.maximum(x64, 0),
        "relu6": np.minimum(np.maximum(x64, 0), 6),
        "sigmoid": 1 / (1 + np.exp(-x64)),
        "tanh": np.tanh(x64),
        "gelu": 0.5 * x64 * (1 + erf(x64 / math.sqrt(2))),
        "gelu_tanh": 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3))),
        "exp": np.exp(x64),
        "abs": np.abs(x64),
        "neg": -x64,
    }
    for name, ref in refs.items():
        out = ck.run(name, [("x", x)])
        ck.close(name, out and out["y"], ref, rtol=2e-6, atol=1e-6)
    xs = rand(50, lo=0.0, hi=100.0)
    out = ck.run("sqrt", [("x", xs)])
    ck.close("sqrt", out and out["y"], np.sqrt(xs.astype(np.float64)), rtol=1e-6, atol=0)
    out = ck.run("clip", [("x", x)], dict(lo=-0.5, hi=2.25))
    ck.close("clip lo/hi", out and out["y"], np.clip(x64, -0.5, 2.25), rtol=0, atol=0)
    out = ck.run("clip", [("x", x)], dict(hi=1))
    ck.close("clip default lo (-inf)", out and out["y"], np.minimum(x64, 1), rtol=0, atol=0)
    for alpha in (0.01, 0.2, 3.0):
        out = ck.run("leaky_relu", [("x", x)], dict(alpha=alpha))
        ck.close("leaky_relu alpha=%g" % alpha, out and out["y"],
                 np.where(x64 >= 0, x64, np.float32(alpha) * x), rtol=1e-6, atol=1e-7)


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def group_norm(ck):
    for shape, scale in [((1, 1), 1), ((3, 7), 1), ((4, 128), 3), ((2, 5), 1000)]:
        x = rand(*shape) * scale
        out = ck.run("softmax", [("x", x)])
        ck.close("softmax %s scale %g" % (shape, scale), out and out["y"], softmax_ref(x),
                 rtol=1e-5, atol=1e-7)
    for m, n, eps in [(3, 8, 1e-5), (1, 1, 1e-5), (5, 64, 1e-3)]:
        x, g, b = rand(m, n) * 3 + 1, rand(n), rand(n)
        x64 = x.astype(np.float64)
        mu = x64.mean(axis=-1, keepdims=True)
        var = ((x64 - mu) ** 2).mean(axis=-1, keepdims=True)
        ref = (x64 - mu) / np.sqrt(var + np.float32(eps)) * g + b
        out = ck.run("layernorm", [("x", x), ("scale", g), ("bias", b)], dict(epsilon=eps))
        ck.close("layernorm %dx%d eps %g" % (m, n, eps), out and out["y"], ref, rtol=1e-5,
                 atol=1e-5)
    x = rand(2, 3, 4, 5)
    g, b, mu, var = rand(3), rand(3), rand(3), rand(3, lo=0.1, hi=2.0)
    sh = (1, 3, 1, 1)
    ref = (x.astype(np.float64) - mu.reshape(sh)) / np.sqrt(var.reshape(sh) + np.float32(1e-5)) \
        * g.reshape(sh) + b.reshape(sh)
    out = ck.run("batchnorm", [("x", x), ("scale", g), ("bias", b), ("mean", mu), ("var", var)])
    ck.close("batchnorm", out and out["y"], ref, rtol=1e-5, atol=1e-5)
    # Training mode: the batch's per-channel statistics over N and the
    # spatial axis, and the running statistics' update.
    for shape, eps, mom in [((2, 3, 20), 1e-5, 0.9), ((1, 1, 1), 1e-3, 0.0), ((4, 5, 1), 0.1, 1.0),
                            ((3, 2, 7), 1e-5, 0.25)]:
        x = rand(*shape) * 2 + 0.5
        g, b, rm, rv = rand(shape[1]), rand(shape[1]), rand(shape[1]), rand(shape[1], lo=0.1)
        x64 = x.astype(np.float64)
        mu, var = x64.mean(axis=(0, 2)), x64.var(axis=(0, 2))
        sh = (1, -1, 1)
        ref = (x64 - mu.reshape(sh)) / np.sqrt(var.reshape(sh) + np.float32(eps)) \
            * g.reshape(sh) + b.reshape(sh)
        out = ck.run("batchnorm_train", [("x", x), ("scale", g), ("bias", b)], dict(epsilon=eps))
        ck.close("batchnorm_train %s" % (shape,), out and out["y"], ref, rtol=1e-5, atol=1e-5)
        m = np.float64(np.float32(mom))
        for name, run, stat in (("running_mean", rm, mu), ("running_var", rv, var)):
            out = ck.run(name, [("x", x), ("running", run)], dict(momentum=mom))
            ck.close("%s %s momentum %g" % (name, shape, mom), out and out["y"],
                     run * m + stat * (1 - m), rtol=1e-5, atol=1e-6)
    for name, extra in (("batchnorm_train", [("scale", rand(3)), ("bias", rand(3))]),
                        ("running_mean", [("running", rand(3))]),
                        ("running_var", [("running", rand(3))])):
        ck.run_fail(name, [("x", rand(0, 3, 4))] + extra, None, "empty batch")


def group_f16(ck):
    """f16 storage, f32 accumulation: results within an f16 rounding of the
    float64 reference rounded to f16."""
    h = np.float16
    tol = dict(rtol=2e-3, atol=2e-3)
    x, w = rand(1, 4, 7, 7, dtype=h), rand(6, 2, 3, 3, dtype=h)
    out = ck.run("conv2d", [("x", x), ("w", w)], conv_attrs((2, 1), (1, 1, 1, 1), (1, 1), 2))
    ref = conv2d_ref(x, w, (2, 1), (1, 1, 1, 1), (1, 1), 2).astype(h)
    ck.close("f16 conv2d groups 2", out and out["y"], ref.astype(np.float64), **tol, dtype=h)
    a, b = rand(8, 40, dtype=h), rand(40, 5, dtype=h)
    out = ck.run("matmul", [("a", a), ("b", b)])
    ck.close("f16 matmul", out and out["y"], (a.astype(np.float64) @ b).astype(h), **tol, dtype=h)
    x = rand(3, 9, dtype=h) * 4
    out = ck.run("softmax", [("x", x)])
    ck.close("f16 softmax", out and out["y"], softmax_ref(x).astype(h), **tol, dtype=h)
    x = rand(64, dtype=h) * 4
    out = ck.run("gelu", [("x", x)])
    x64 = x.astype(np.float64)
    ck.close("f16 gelu", out and out["y"], (0.5 * x64 * (1 + erf(x64 / math.sqrt(2)))).astype(h),
             **tol, dtype=h)
    x = rand(1, 2, 6, 6, dtype=h)
    out = ck.run("maxpool", [("x", x)], dict(kernel_h=3, kernel_w=3, stride_h=2, stride_w=2,
                                             pad_top=1, pad_left=1, pad_bottom=1, pad_right=1))
    ck.close("f16 maxpool", out and out["y"],
             maxpool_ref(x, 3, 3, (2, 2), (1, 1, 1, 1)).astype(h), rtol=0, atol=0, dtype=h)
    # one rounding: a sum that f16 accumulation would get wrong
    a = np.full((1, 2048), 1.0, dtype=h)
    b = np.full((2048, 1), 1.0, dtype=h)
    out = ck.run("matmul", [("a", a), ("b", b)])
    ck.close("f16 matmul accumulates in f32 (2048 ones)", out and out["y"], np.float64([[2048]]),
             rtol=0, atol=0, dtype=h)


def group_bf16(ck):
    tol = dict(rtol=1e-2, atol=1e-2)
    a, b = round_bf16(rand(6, 20)), round_bf16(rand(20, 4))
    out = ck.run("matmul", [("a", a), ("b", b)], bf16=True)
    ck.close("bf16 matmul", out and out["y"], round_bf16(a @ b), **tol)
    x, w = round_bf16(rand(1, 3, 5, 5)), round_bf16(rand(2, 3, 3, 3))
    out = ck.run("conv2d", [("x", x), ("w", w)], conv_attrs(pads=(1, 1, 1, 1)), bf16=True)
    ck.close("bf16 conv2d", out and out["y"], round_bf16(conv2d_ref(x, w, pads=(1, 1, 1, 1))),
             **tol)


def group_int(ck):
    i8 = np.int8
    a = RNG.integers(-128, 128, size=(5, 9)).astype(i8)
    b = RNG.integers(-128, 128, size=(9, 4)).astype(i8)
    out = ck.run("matmul", [("a", a), ("b", b)])
    # i32 accumulation, then the store to i8 wraps (as numpy's astype)
    ck.exact("i8 matmul wraps like astype(int8)", out and out["y"],
             (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32).astype(i8))
    x = RNG.integers(-1000, 1000, size=(1, 2, 6, 6)).astype(np.int32)
    w = RNG.integers(-50, 50, size=(3, 2, 3, 3)).astype(np.int32)
    out = ck.run("conv2d", [("x", x), ("w", w)], conv_attrs((2, 2), (1, 1, 1, 1)))
    ck.exact("i32 conv2d", out and out["y"],
             conv2d_ref(x, w, (2, 2), (1, 1, 1, 1)).round().astype(np.int32))
    x = RNG.integers(-128, 0, size=(1, 1, 5, 5)).astype(i8)
    out = ck.run("maxpool", [("x", x)], dict(kernel_h=3, kernel_w=3, pad_top=1, pad_left=1,
                                             pad_bottom=1, pad_right=1))
    ck.exact("i8 maxpool: -inf padding saturates to -128", out and out["y"],
             maxpool_ref(x, 3, 3, pads=(1, 1, 1, 1)).astype(i8))
    a = RNG.integers(-100, 100, size=(2, 1, 3, 1)).astype(np.int32)
    b = RNG.integers(-100, 100, size=(1, 4, 1, 5)).astype(np.int32)
    for name, fn in [("add", np.add), ("mul", np.multiply), ("max", np.maximum)]:
        out = ck.run(name, [("a", a), ("b", b)])
        ck.exact("i32 %s broadcast" % name, out and out["y"], fn(a, b))
    b = RNG.integers(1, 9, size=(1, 4, 1, 5)).astype(np.int32) * RNG.choice([-1, 1], (1, 4, 1, 5)).astype(np.int32)
    out = ck.run("div", [("a", a), ("b", b)])
    ck.exact("i32 div truncates toward zero", out and out["y"],
             np.trunc(a.astype(np.float64) / b).astype(np.int32))
    x = RNG.integers(-128, 128, size=(40,)).astype(i8)
    out = ck.run("relu6", [("x", x)])
    ck.exact("i8 relu6", out and out["y"], np.clip(x, 0, 6).astype(i8))
    out = ck.run("clip", [("x", x)], dict(lo=-1e30, hi=3.5))
    ck.exact("i8 clip with float bounds saturating", out and out["y"], np.minimum(x, 3).astype(i8))
    u = RNG.integers(0, 256, size=(1, 1, 4, 4)).astype(np.uint8)
    out = ck.run("global_avgpool", [("x", u)])
    ck.exact("u8 global_avgpool (integer division)", out and out["y"],
             (u.astype(np.int64).sum(axis=(2, 3), keepdims=True) // 16).astype(np.uint8))


def group_errors(ck):
    x, w = rand(1, 4, 5, 5), rand(2, 3, 3, 3)
    ck.run_fail("conv2d", [("x", x), ("w", w)], {}, "input channels C must equal weight channels")
    ck.run_fail("conv2d", [("x", rand(1, 3, 2, 2)), ("w", w)], {},
                "the dilated kernel must fit in the padded input")
    ck.run_fail("conv2d", [("x", rand(1, 3, 5, 5)), ("w", w)], dict(stride=2),
                "has no attribute 'stride' (did you mean 'stride_h'?)")
    ck.run_fail("maxpool", [("x", x)], {}, "missing required attribute 'kernel_h'")
    ck.run_fail("matmul", [("a", rand(2, 3)), ("b", rand(4, 2))], {}, "dim K is 4 in input 'b'")
    ck.run_fail("matmul", [("a", rand(2, 3)), ("b", rand(3, 2).astype(np.float16))], {},
                "input 'b' is f16, but input 'a' made T f32")
    ck.run_fail("softmax", [("x", np.zeros((2, 2), np.int32))], {},
                "input 'x' is i32, but T must be f32, f16 or bf16")
    ck.run_fail("add", [("a", rand(2, 3, 1, 1)), ("b", rand(3, 3, 1, 1))], {},
                "axis 0 does not broadcast")


GROUPS = {"conv": group_conv, "pool": group_pool, "gemm": group_gemm,
          "elementwise": group_elementwise, "activation": group_activation, "norm": group_norm,
          "f16": group_f16, "bf16": group_bf16, "int": group_int, "errors": group_errors}


def main():
    ck = Checker(sys.argv[1])
    for g in sys.argv[2:] or GROUPS:
        GROUPS[g](ck)
    return ck.summary()


if __name__ == "__main__":
    main_guard(main)
