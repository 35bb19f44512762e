#!/usr/bin/env python3
"""int8 quantized models against numpy: QLinearConv, ConvInteger,
QLinearMatMul, MatMulInteger, QuantizeLinear, DequantizeLinear and QDQ
graphs, built here with onnx.helper, run with `covenant run` on each target
given, compared bit for bit with an independent numpy implementation of
onnxruntime's integer semantics (i32 accumulation of (x - xz)(w - wz),
requantisation as f32(acc) * f32(x_scale * w_scale / y_scale), rounded half
to even, plus the zero point, saturated). Bad inputs must be refused with a
located error naming the node.

    /usr/bin/python3 test_quant.py COVENANT WORKDIR [TARGET...]   (default: ref)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32
NP2ONNX = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
           np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float32): TensorProto.FLOAT}


def qrange(dt):
    return (-128, 127) if np.dtype(dt) == np.int8 else (0, 255)


def requant_ref(acc, m, zp, dt):
    """onnxruntime: f32(acc) * m in f32, round half to even, + zp, saturate."""
    f = acc.astype(F32) * m.astype(F32)
    lo, hi = qrange(dt)
    return np.clip(np.rint(f) + np.int64(zp), lo, hi).astype(dt)


def conv_acc_ref(x, w, strides, pads, dilations, group):
    """sum x*w in int64 over NCHW / MCRS with zero padding (x, w centred)."""
    n, c, h, wd = x.shape
    m, cg, r, s = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    p = (xp.shape[2] - dilations[0] * (r - 1) - 1) // strides[0] + 1
    q = (xp.shape[3] - dilations[1] * (s - 1) - 1) // strides[1] + 1
    out = np.zeros((n, m, p, q), np.int64)
    mg = m // group
    for g in range(group):
        for i in range(r):
            for j in range(s):
                win = xp[:, g * cg:(g + 1) * cg,
                         i * dilations[0]: i * dilations[0] + strides[0] * (p - 1) + 1: strides[0],
                         j * dilations[1]: j * dilations[1] + strides[1] * (q - 1) + 1: strides[1]]
                out[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", win,
                                                         w[g * mg:(g + 1) * mg, :, i, j].astype(np.int64))
    return out


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def vi(name, arr_or_dt, shape=None):
    dt = np.dtype(arr_or_dt.dtype if shape is None else arr_or_dt)
    return helper.make_tensor_value_info(name, NP2ONNX[dt],
                                         list(arr_or_dt.shape if shape is None else shape))


def save(path, nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, path)


# ---- cases ------------------------------------------------------------------

def case_qlinearconv(rng, xdt, wdt, ydt, per_channel, pads, strides, group, wz_nonzero,
                     dil=(1, 1), bias=True, shape=(1, 8, 9, 9), m=16, k=3, big_w=False,
                     yz_min=False):
    lo, hi = qrange(xdt)
    x = rng.integers(lo, hi + 1, shape).astype(xdt)
    wlo, whi = qrange(wdt)
    w = rng.integers(wlo, whi + 1, (m, shape[1] // group, k, k)).astype(wdt)
    if not big_w and np.dtype(wdt) == np.int8:
        w = np.clip(w, -127, 127).astype(wdt)
    xs, ys = F32(0.02), F32(0.15)
    xz = np.array(rng.integers(lo, hi + 1), xdt)
    ws = (rng.random(m if per_channel else 1) * 0.01 + 0.001).astype(F32)
    if not per_channel:
        ws = ws.reshape(())
    if wz_nonzero:
        wz = np.array(rng.integers(wlo, whi + 1, m if per_channel else ()), wdt)
    else:
        wz = np.zeros(m if per_channel else (), wdt)
    yz = np.array(rng.integers(*qrange(ydt)), ydt)
    if yz_min:  # as after a ReLU: the zero point is the type's minimum
        yz = np.array(qrange(ydt)[0], ydt)
    b = rng.integers(-5000, 5000, m).astype(np.int32)
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias else [])
    inits = [init("xs", xs), init("xz", xz), init("w", w), init("ws", ws), init("wz", wz),
             init("ys", ys), init("yz", yz)] + ([init("b", b)] if bias else [])
    node = helper.make_node("QLinearConv", names, ["y"], name="qconv", pads=list(pads),
                            strides=list(strides), group=group, dilations=list(dil))
    wzb = wz.reshape(-1, 1, 1, 1) if wz.ndim else wz
    acc = conv_acc_ref(x.astype(np.int64) - np.int64(xz), w.astype(np.int64) - wzb.astype(np.int64),
                       strides, pads, dil, group)
    if bias:
        acc = acc + b.reshape(1, -1, 1, 1)
    mult = (xs * np.broadcast_to(ws, (m,)).astype(F32)) / ys
    y = requant_ref(acc, mult.reshape(1, -1, 1, 1), yz, ydt)
    return [node], [vi("x", x)], [vi("y", ydt, y.shape)], inits, [x], [y]


def case_convinteger(rng, pads):
    x = rng.integers(0, 256, (1, 3, 7, 7)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    xz, wz = np.array(131, np.uint8), np.array(7, np.uint8)  # w - wz leaves i8
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], name="cint",
                            pads=list(pads))
    acc = conv_acc_ref(x.astype(np.int64) - 131, w.astype(np.int64) - 7, (1, 1), pads, (1, 1), 1)
    return ([node], [vi("x", x)], [vi("y", np.int32, acc.shape)],
            [init("w", w), init("xz", xz), init("wz", wz)], [x], [acc.astype(np.int32)])


def case_qlinearmatmul(rng, adt, bdt, ydt, per_col, ashape, bshape, bz_nonzero=True):
    a = rng.integers(*qrange(adt), ashape, endpoint=True).astype(adt)
    b = rng.integers(*qrange(bdt), bshape, endpoint=True).astype(bdt)
    n = bshape[-1]
    az = np.array(rng.integers(*qrange(adt), endpoint=True), adt)
    bz = (np.array(rng.integers(*qrange(bdt), n if per_col else (), endpoint=True), bdt)
          if bz_nonzero else np.zeros(n if per_col else (), bdt))
    as_, ys = F32(0.03), F32(0.2)
    bs = (rng.random(n if per_col else 1) * 0.02 + 0.001).astype(F32)
    if not per_col:
        bs = bs.reshape(())
    yz = np.array(rng.integers(*qrange(ydt), endpoint=True), ydt)
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                            ["y"], name="qmm")
    acc = np.matmul(a.astype(np.int64) - np.int64(az), b.astype(np.int64) - bz.astype(np.int64))
    mult = (as_ * np.broadcast_to(bs, (n,)).astype(F32)) / ys
    y = requant_ref(acc, mult, yz, ydt)
    inits = [init("as", as_), init("az", az), init("b", b), init("bs", bs), init("bz", bz),
             init("ys", ys), init("yz", yz)]
    return [node], [vi("a", a)], [vi("y", ydt, y.shape)], inits, [a], [y]


def case_matmulinteger_rows(rng):
    a = rng.integers(0, 256, (4, 6)).astype(np.uint8)
    b = rng.integers(-128, 128, (6, 5)).astype(np.int8)
    az = rng.integers(0, 256, 4).astype(np.uint8)  # per row: centred in i32
    bz = np.array(3, np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmi")
    acc = (a.astype(np.int64) - az.reshape(-1, 1)) @ (b.astype(np.int64) - 3)
    return ([node], [vi("a", a)], [vi("y", np.int32, acc.shape)],
            [init("b", b), init("az", az), init("bz", bz)], [a], [acc.astype(np.int32)])


def case_qdq(rng, axis):
    x = (rng.standard_normal((2, 4, 5)) * 3).astype(F32)
    s = (rng.random(4) * 0.05 + 0.01).astype(F32) if axis else F32(0.037)
    zp = rng.integers(-20, 20, 4).astype(np.int8) if axis else np.array(-3, np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="q", axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], name="dq", axis=1)]
    sb = s.reshape(1, -1, 1) if axis else s
    zb = zp.reshape(1, -1, 1).astype(np.int64) if axis else np.int64(zp)
    q = np.clip(np.rint(x / sb) + zb, -128, 127).astype(np.int8)
    y = ((q.astype(F32) - zb.astype(F32)) * sb).astype(F32)
    return (nodes, [vi("x", x)], [vi("q", np.int8, q.shape), vi("y", F32, y.shape)],
            [init("s", s), init("zp", zp)], [x], [q, y])


def case_qdq_no_zero_point(rng):
    """QuantizeLinear and DequantizeLinear without a zero point: a u8
    result (the default), saturated at 0 and 255, and an i8 input
    dequantized around 0."""
    x = (rng.standard_normal((3, 7)) * 4).astype(F32)
    i = rng.integers(-128, 128, (3, 7)).astype(np.int8)
    s = F32(0.043)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["i", "s"], ["y"], name="dq")]
    q = np.clip(np.rint(x / s), 0, 255).astype(np.uint8)
    y = (i.astype(F32) * s).astype(F32)
    return (nodes, [vi("x", x), vi("i", i)], [vi("q", np.uint8, q.shape), vi("y", F32, y.shape)],
            [init("s", s)], [x, i], [q, y])


def as_qdq(case, bias_scale=True, act=None):
    """The same integer layer written as QDQ (DQ -> Conv/MatMul -> Q), which
    the frontend must turn back into it: same expected output, bit for bit.
    act: a Relu or Clip between the op and Q that cannot change a quantized
    value (the case saturates at its bounds), which the frontend drops."""
    def make(rng):
        nodes, ins, outs, inits, xs, want = case(rng)
        node = nodes[0]
        iv = {t.name: numpy_helper.to_array(t) for t in inits}
        i = list(node.input)
        conv = node.op_type == "QLinearConv"
        if conv:
            x, xs_, xz, w, ws, wz, ys, yz = i[:8]
            b = i[8] if len(i) > 8 else None
        else:
            x, xs_, xz, w, ws, wz, ys, yz = i
            b = None
        wsv = iv[ws]
        dq_w = helper.make_node("DequantizeLinear", [w, ws, wz], ["wf"], axis=0 if conv else 1)
        qn = [helper.make_node("DequantizeLinear", [x, xs_, xz], ["xf"]), dq_w]
        fin = ["xf", "wf"]
        if b:
            bsc = (iv[xs_] * np.broadcast_to(wsv, iv[b].shape)).astype(F32)
            inits = inits + [init("bs", bsc), init("bz", np.zeros(iv[b].shape, np.int32))]
            qn.append(helper.make_node("DequantizeLinear", [b, "bs", "bz"], ["bf"], axis=0))
            fin.append("bf")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        qn.append(helper.make_node("Conv" if conv else "MatMul", fin, ["yf"], name="layer", **attrs))
        if act == "Relu":
            qn.append(helper.make_node("Relu", ["yf"], ["ya"]))
        elif act == "Clip":  # bounds past the quantized range on both sides
            inits = inits + [init("clo", np.array(-1e4, F32)), init("chi", np.array(1e4, F32))]
            qn.append(helper.make_node("Clip", ["yf", "clo", "chi"], ["ya"]))
        qn.append(helper.make_node("QuantizeLinear", ["ya" if act else "yf", ys, yz],
                                   [node.output[0]]))
        return qn, ins, outs, inits, xs, want
    return make


CASES = {
    "qconv_u8_i8_pc_pad": lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, True, (1, 1, 1, 1), (1, 1), 1, False),
    "qconv_u8_i8_pt_stride": lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, False, (1, 0, 2, 1), (2, 2), 1, False),
    "qconv_i8_i8_pc_nopad": lambda r: case_qlinearconv(r, np.int8, np.int8, np.int8, True, (0, 0, 0, 0), (1, 1), 1, False),
    "qconv_i8_u8w_wz": lambda r: case_qlinearconv(r, np.int8, np.uint8, np.int8, False, (1, 1, 1, 1), (1, 1), 1, True),
    "qconv_u8_u8_wz_big": lambda r: case_qlinearconv(r, np.uint8, np.uint8, np.uint8, True, (2, 2, 2, 2), (1, 1), 1, True),
    "qconv_depthwise": lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, True, (1, 1, 1, 1), (1, 1), 8, False, m=8),
    "qconv_grouped_dil_nobias": lambda r: case_qlinearconv(r, np.int8, np.int8, np.uint8, True, (2, 2, 2, 2), (1, 1), 2, False, dil=(2, 2), bias=False),
    "qconv_wide": lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, True, (1, 1, 1, 1), (1, 1), 1, False, shape=(1, 64, 10, 10), m=40),
    # 128 * 3 * 3 = 1152 terms per output: past what f16 x f16 -> f32 holds exactly
    "qconv_deep": lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, True, (1, 1, 1, 1), (1, 1), 1, False, shape=(1, 128, 6, 6), m=8),
    "convinteger_pad": lambda r: case_convinteger(r, (1, 1, 1, 1)),
    "qmatmul_u8_i8_pc": lambda r: case_qlinearmatmul(r, np.uint8, np.int8, np.uint8, True, (6, 40), (40, 24)),
    "qmatmul_i8_i8_3d": lambda r: case_qlinearmatmul(r, np.int8, np.int8, np.int8, False, (2, 5, 16), (16, 12), False),
    "qmatmul_batch_bcast": lambda r: case_qlinearmatmul(r, np.uint8, np.uint8, np.uint8, False, (2, 1, 3, 8), (3, 8, 4)),
    "matmulinteger_rows": case_matmulinteger_rows,
    "qdq_conv_u8_pc_pad": as_qdq(lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, True, (1, 1, 1, 1), (1, 1), 1, False)),
    "qdq_conv_i8_stride": as_qdq(lambda r: case_qlinearconv(r, np.int8, np.int8, np.int8, True, (1, 0, 2, 1), (2, 2), 1, False)),
    "qdq_conv_relu": as_qdq(lambda r: case_qlinearconv(r, np.int8, np.int8, np.int8, True, (1, 1, 1, 1), (1, 1), 1, False, yz_min=True), act="Relu"),
    "qdq_conv_clip": as_qdq(lambda r: case_qlinearconv(r, np.uint8, np.int8, np.uint8, True, (0, 0, 0, 0), (1, 1), 1, False), act="Clip"),
    "qdq_matmul_pc": as_qdq(lambda r: case_qlinearmatmul(r, np.uint8, np.int8, np.uint8, True, (6, 40), (40, 24), False)),
    "qdq_tensor": lambda r: case_qdq(r, False),
    "qdq_axis": lambda r: case_qdq(r, True),
    "quantize_no_zero_point": case_qdq_no_zero_point,
}


# ---- bad inputs: each must be refused with the node named -------------------

def bad_cases():
    x = vi("x", np.uint8, [1, 2, 4, 4])
    y = vi("y", np.uint8, [1, 2, 4, 4])
    w = np.ones((2, 2, 1, 1), np.int8)
    base = {"xs": F32(0.1), "xz": np.array(1, np.uint8), "w": w, "ws": F32(0.1),
            "wz": np.array(0, np.int8), "ys": F32(0.1), "yz": np.array(0, np.uint8)}

    def qconv(**over):
        p = dict(base, **over)
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                                ["y"], name="badconv")
        return [node], [x], [y], [init(k, v) for k, v in p.items()]
    yield "zp_dtype", qconv(xz=np.array(1, np.int8)), "badconv", "zero point 'xz' is i8 but 'x' is u8"
    yield "scale_shape", qconv(ws=np.ones(3, F32)), "badconv", "weight scale 'ws'"
    yield "x_zp_per_channel", qconv(xz=np.ones(2, np.uint8)), "badconv", "input zero point 'xz'"
    a = vi("a", np.uint8, [2, 3])
    mm = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"],
                          name="badmm")
    yield ("per_row_a_scale",
           ([mm], [a], [vi("y", np.uint8, [2, 2])],
            [init("as", np.ones(2, F32)), init("az", np.array(0, np.uint8)),
             init("b", np.ones((3, 2), np.int8)), init("bs", F32(1)), init("bz", np.array(0, np.int8)),
             init("ys", F32(1)), init("yz", np.array(0, np.uint8))]),
           "badmm", "A's scale 'as'")
    q = helper.make_node("QuantizeLinear", ["f", "s", "zp"], ["y"], name="badq", axis=3)
    yield ("unsupported_axis",
           ([q], [vi("f", F32, [2, 3])], [vi("y", np.uint8, [2, 3])],
            [init("s", np.ones(3, F32)), init("zp", np.zeros(3, np.uint8))]),
           "badq", "axis")
    dq = helper.make_node("DequantizeLinear", ["i", "s"], ["y"], name="baddq")
    yield ("nonconst_scale_bad_dtype",
           ([dq], [vi("i", np.uint8, [4]), vi("s", np.int32, [])], [vi("y", F32, [4])], []),
           "baddq", "input 's' has dtype i32")


# Cases whose multiply-accumulates must run on an integer array (every
# w - wz fits in i8 and the input's zero point is one number); the others
# are centred in i32, which the NPUs do not multiply, and run on the CPU.
ON_INT8_ARRAY = {"qconv_u8_i8_pc_pad", "qconv_u8_i8_pt_stride", "qconv_i8_i8_pc_nopad",
                 "qconv_depthwise", "qconv_grouped_dil_nobias", "qconv_wide", "qconv_deep",
                 "qmatmul_i8_i8_3d", "qdq_conv_u8_pc_pad", "qdq_conv_i8_stride", "qdq_matmul_pc"}

# i8 activations in and constant parameters: graph_qprep.c makes them integer
# layers that each run as one NPU program (u8 graph inputs stay as they are)
FUSED = {"qconv_i8_i8_pc_nopad", "qconv_grouped_dil_nobias", "qdq_conv_i8_stride",
         "qdq_conv_relu"}


def run(cov, model, target, inputs, work):
    cmd = [cov, "run", model, "--target", target]
    for i, a in enumerate(inputs):
        p = os.path.join(work, "in%d.npy" % i)
        np.save(p, a)
        cmd += ["--input", p]
    outdir = os.path.join(work, "out_" + target)
    os.makedirs(outdir, exist_ok=True)
    cmd += ["-o", outdir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, outdir


def main():
    cov, work = sys.argv[1], sys.argv[2]
    targets = sys.argv[3:] or ["ref"]
    os.makedirs(work, exist_ok=True)
    fails = 0
    for name, make in CASES.items():
        rng = np.random.default_rng(abs(hash(name)) % (1 << 31) if False else sum(map(ord, name)))
        nodes, ins, outs, inits, xs, want = make(rng)
        path = os.path.join(work, name + ".onnx")
        save(path, nodes, ins, outs, inits)
        if name.startswith("qdq_") and "tensor" not in name and "axis" not in name:
            r = subprocess.run([cov, "inspect", path], capture_output=True, text=True)
            if "QLinear" not in r.stdout and "Integer" not in r.stdout:
                print("FAIL %s: the QDQ pattern did not become an integer operator:\n%s" %
                      (name, r.stdout + r.stderr))
                fails += 1
        for t in targets:
            r, outdir = run(cov, path, t, xs, work)
            if r.returncode != 0:
                print("FAIL %s on %s: exit %d\n%s" % (name, t, r.returncode, r.stderr))
                fails += 1
                continue
            rows = [ln for ln in r.stdout.splitlines() if "_acc " in ln or "_acc+" in ln]
            if t == "npu-32x32-os" and name in ON_INT8_ARRAY and (
                    not rows or any("npu, " not in ln for ln in rows)):
                print("FAIL %s on %s: the integer multiply-accumulates did not run on the "
                      "int8 array:\n%s" % (name, t, "\n".join(rows)))
                fails += 1
            # the integer layers the frontend prepares (graph_qprep.c) run as
            # one program each, requantisation included: no CPU rows
            if t.startswith("npu") and name in FUSED and (
                    not rows or any("npu, fused" not in ln for ln in rows) or
                    any("requant" in ln and "cpu:" in ln for ln in r.stdout.splitlines())):
                print("FAIL %s on %s: the integer layer (requantisation included) was not one "
                      "NPU program:\n%s" % (name, t, r.stdout))
                fails += 1
            for i, wnt in enumerate(want):
                got = np.load(os.path.join(outdir, "output_%d.npy" % i))
                if got.dtype != wnt.dtype or got.shape != wnt.shape:
                    print("FAIL %s on %s: output %d is %s%s, expected %s%s" %
                          (name, t, i, got.dtype, got.shape, wnt.dtype, wnt.shape))
                    fails += 1
                elif not np.array_equal(got, wnt):
                    bad = np.count_nonzero(got != wnt)
                    d = np.abs(got.astype(np.float64) - wnt.astype(np.float64)).max()
                    print("FAIL %s on %s: output %d: %d of %d elements differ (max %g)" %
                          (name, t, i, bad, wnt.size, d))
                    fails += 1
                else:
                    print("ok   %s on %s: output %d bit-exact (%d elements)" % (name, t, i, wnt.size))
    for name, (nodes, ins, outs, inits), node, text in bad_cases():
        path = os.path.join(work, "bad_" + name + ".onnx")
        save(path, nodes, ins, outs, inits)
        r = subprocess.run([cov, "inspect", path], capture_output=True, text=True)
        if r.returncode != 1 or ("node '%s'" % node) not in r.stderr or text not in r.stderr:
            print("FAIL bad %s: exit %d, expected exit 1 naming node '%s' and '%s':\n%s" %
                  (name, r.returncode, node, text, r.stderr))
            fails += 1
        else:
            print("ok   bad %s: %s" % (name, r.stderr.strip().splitlines()[0]))
    print("%d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
