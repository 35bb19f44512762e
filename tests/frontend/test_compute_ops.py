#!/usr/bin/env python3
"""The signal, normalisation, sampling and integer-dtype operators against
numpy on cases the ONNX conformance data does not cover.

    /usr/bin/python3 test_compute_ops.py COVENANT WORKDIR TARGET...

Each one-node model is fed its inputs as graph inputs and run on every
TARGET (ref, and NPU targets, where a call the NPU path cannot take falls
back to the CPU); the outputs are compared with a numpy computation: exactly
for integers, within 1e-4 relative (1e-3 for f16) for floats. Every case
runs; the exit status is 1 if any failed.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

T = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
     np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int64): TensorProto.INT64,
     np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int16): TensorProto.INT16,
     np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.uint16): TensorProto.UINT16,
     np.dtype(np.uint32): TensorProto.UINT32, np.dtype(np.uint64): TensorProto.UINT64}
RNG = np.random.RandomState(7)
CASES = []


def case(name, op, inputs, want, attrs=None, opset=17, decl=None):
    """inputs: name -> array (graph inputs, declared with the array's type
    unless decl names another); want: list of expected arrays."""
    CASES.append((name, op, inputs, want if isinstance(want, list) else [want], attrs or {},
                  opset, decl or {}))


def run_case(cov, work, target, name, op, inputs, want, attrs, opset, decl):
    outs = ["y%d" % i for i in range(len(want))]
    node = helper.make_node(op, list(inputs), outs, **attrs)
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info(k, decl.get(k, T[v.dtype]), v.shape)
                           for k, v in inputs.items()],
                          [helper.make_tensor_value_info(o, 0, None) for o in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    cmd = [cov, "run", path, "--target", target]
    for k, v in inputs.items():
        p = os.path.join(work, "%s_%s.npy" % (name, k))
        np.save(p, v)
        cmd += ["--input", "%s=%s" % (k, p)]
    od = os.path.join(work, name + "_" + target)
    os.makedirs(od, exist_ok=True)
    cmd += ["-o", od]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.strip()[-500:])
    for i, w in enumerate(want):
        got = np.load(os.path.join(od, "output_%d.npy" % i))
        if got.dtype != w.dtype or got.shape != w.shape:
            return "output %d: %s%s, expected %s%s" % (i, got.dtype, got.shape, w.dtype, w.shape)
        if np.issubdtype(w.dtype, np.integer):
            if not np.array_equal(got, w):
                return "output %d: %d elements differ" % (i, np.count_nonzero(got != w))
        else:
            rt = 1e-3 if w.dtype == np.float16 else 1e-4
            if not np.allclose(got.astype(np.float64), w.astype(np.float64), rtol=rt, atol=rt):
                return "output %d: max error %g" % (i, np.abs(got.astype(np.float64) - w).max())
    return None


def int_dtype_cases():
    big = np.array([2 ** 64 - 1, 2 ** 63, 5, 2 ** 63 - 1], np.uint64)
    small = np.array([3, 2 ** 63 + 1, 7, 2 ** 63], np.uint64)
    case("u64_max", "Max", {"a": big, "b": small}, np.maximum(big, small), opset=13)
    case("u64_min", "Min", {"a": big, "b": small}, np.minimum(big, small), opset=13)
    case("u64_div", "Div", {"a": big, "b": small}, big // small, opset=14)
    case("u64_mod", "Mod", {"a": big, "b": small}, big % small, opset=13)
    case("u64_less", "Less", {"a": big, "b": small}, big < small, opset=13)
    a32 = np.array([4000000000, 7, 2 ** 32 - 1], np.uint32)
    b32 = np.array([500000000, 9, 2], np.uint32)
    case("u32_add_wraps", "Add", {"a": a32, "b": b32}, a32 + b32, opset=14)
    a16 = np.array([-30000, 200, 32767], np.int16)
    b16 = np.array([3, -200, 2], np.int16)
    case("i16_mul_wraps", "Mul", {"a": a16, "b": b16}, a16 * b16, opset=14)
    u16 = np.array([1, 60000, 5], np.uint16)
    case("u16_sub_wraps", "Sub", {"a": u16, "b": u16[::-1].copy()}, u16 - u16[::-1], opset=14)
    i32 = np.array([-70000, -1, 65537, 2 ** 31 - 1], np.int32)
    case("cast_i32_u16", "Cast", {"x": i32}, i32.astype(np.uint16), {"to": TensorProto.UINT16}, 13)
    case("cast_i32_i16", "Cast", {"x": i32}, i32.astype(np.int16), {"to": TensorProto.INT16}, 13)
    case("cast_u64_i64", "Cast", {"x": big}, big.astype(np.int64), {"to": TensorProto.INT64}, 13)
    case("cast_i64_u32", "Cast", {"x": np.array([-1, 2 ** 40 + 3], np.int64)},
         np.array([2 ** 32 - 1, 3], np.uint32), {"to": TensorProto.UINT32}, 13)
    case("cast_u64_f64", "Cast", {"x": big}, big.astype(np.float64), {"to": TensorProto.DOUBLE}, 13)
    case("cast_u16_f32", "Cast", {"x": u16}, u16.astype(np.float32), {"to": TensorProto.FLOAT}, 13)
    x = np.array([1, 2 ** 63 + 5, 3, 7], np.uint64)
    s = np.array([63, 1, 64, 70], np.uint64)
    left = np.array([2 ** 63, 10, 0, 0], np.uint64)
    right = np.array([0, 2 ** 62 + 2, 0, 0], np.uint64)
    case("bitshift_u64_left", "BitShift", {"x": x, "s": s}, left, {"direction": "LEFT"}, 11)
    case("bitshift_u64_right", "BitShift", {"x": x, "s": s}, right, {"direction": "RIGHT"}, 11)
    x8 = np.array([[255], [1]], np.uint8)
    s8 = np.array([0, 7, 8], np.uint8)
    case("bitshift_u8_broadcast", "BitShift", {"x": x8, "s": s8},
         np.array([[255, 128, 0], [1, 128, 0]], np.uint8), {"direction": "LEFT"}, 11)


def norm_cases():
    x = RNG.randn(2, 5, 3, 2).astype(np.float32)
    size, alpha, beta, bias = 4, 0.02, 0.6, 2.0
    sq = np.zeros_like(x, dtype=np.float64)
    for c in range(5):
        lo, hi = max(0, c - (size - 1) // 2), min(4, c + size // 2)
        sq[:, c] = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
    case("lrn_even_size", "LRN", {"x": x}, (x / (bias + alpha / size * sq) ** beta).astype(np.float32),
         {"size": size, "alpha": alpha, "beta": beta, "bias": bias}, 13)
    m = x.mean(axis=(0, 3), keepdims=True)
    sd = np.sqrt(((x - m) ** 2).mean(axis=(0, 3), keepdims=True))
    case("mvn_axes_0_3", "MeanVarianceNormalization", {"x": x}, ((x - m) / (sd + 1e-9)).astype(np.float32),
         {"axes": [0, 3]}, 13)
    y = np.where(x < 0, 2.0 * (np.exp(x / 2.0) - 1), x).astype(np.float32)
    case("celu_alpha_2", "Celu", {"x": x}, y, {"alpha": 2.0}, 12)
    xs = RNG.randn(3, 4, 2, 5).astype(np.float32)
    lens = np.array([4, 1, 2], np.int64)
    want = xs.copy()
    for b in range(3):
        want[b, :lens[b]] = xs[b, :lens[b]][::-1]
    case("reversesequence_rank4", "ReverseSequence", {"x": xs, "l": lens}, want,
         {"batch_axis": 0, "time_axis": 1}, 10)
    d = RNG.randn(2, 3, 5, 5).astype(np.float64)
    d[0, 1, 4] = d[0, 1, 0]  # a singular matrix
    case("det_f64_batched", "Det", {"x": d}, np.linalg.det(d), opset=11)


def signal_cases():
    x = RNG.randn(2, 6, 1).astype(np.float32)
    n = np.array(9, np.int64)
    f = np.fft.fft(np.pad(x[..., 0], ((0, 0), (0, 3))), axis=1)
    case("dft_padded", "DFT", {"x": x, "n": n}, np.stack([f.real, f.imag], -1).astype(np.float32),
         {"axis": 1}, 17)
    n4 = np.array(4, np.int64)
    f = np.fft.fft(x[:, :4, 0], axis=1)[:, :3]
    case("dft_truncated_onesided", "DFT", {"x": x, "n": n4},
         np.stack([f.real, f.imag], -1).astype(np.float32), {"axis": 1, "onesided": 1}, 17)
    xc = RNG.randn(3, 7, 2, 2).astype(np.float64)
    z = xc[..., 0] + 1j * xc[..., 1]
    f = np.fft.ifft(z, axis=0)
    ax = np.array(0, np.int64)
    case("dft_complex_axis0_inverse_20", "DFT", {"x": xc, "n": np.array(3, np.int64), "a": ax},
         np.stack([f.real, f.imag], -1), {"inverse": 1}, 20)
    sig = RNG.randn(2, 40, 2).astype(np.float32)
    w = np.hanning(10).astype(np.float32)
    z = sig[..., 0] + 1j * sig[..., 1]
    frames = [(z[:, s:s + 10] * w) for s in range(0, 31, 7)]
    f = np.stack([np.fft.fft(fr, axis=1) for fr in frames], 1)
    case("stft_complex_twosided", "STFT", {"s": sig, "step": np.array(7, np.int64), "w": w},
         np.stack([f.real, f.imag], -1).astype(np.float32), {"onesided": 0}, 17)
    k = np.arange(12)
    case("hann_f64", "HannWindow", {"n": np.array(12, np.int32)},
         0.5 - 0.5 * np.cos(2 * np.pi * k / 12), {"output_datatype": TensorProto.DOUBLE}, 17)
    case("blackman_f16_symmetric", "BlackmanWindow", {"n": np.array(12, np.int64)},
         (0.42 - 0.5 * np.cos(2 * np.pi * k / 11) + 0.08 * np.cos(4 * np.pi * k / 11)).astype(np.float16),
         {"output_datatype": TensorProto.FLOAT16, "periodic": 0}, 17)
    case("melweight", "MelWeightMatrix",
         {"m": np.array(5, np.int64), "d": np.array(64, np.int64), "r": np.array(16000, np.int64),
          "lo": np.array(100, np.float32), "hi": np.array(7000, np.float32)},
         mel_reference(5, 64, 16000, np.float32(100), np.float32(7000)), opset=17)


def mel_reference(num_mel_bins, dft_length, sample_rate, lower, upper):
    """onnx's reference (backend/test/case/node/melweightmatrix.py)."""
    bins = np.arange(0, num_mel_bins + 2)
    lo = 2595 * np.log10(1 + lower / 700)
    hi = 2595 * np.log10(1 + upper / 700)
    step = (hi - lo) / bins.shape[0]
    f = 700 * (np.power(10, (bins * step + lo) / 2595) - 1)
    f = (((dft_length + 1) * f) // sample_rate).astype(int)
    out = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for i in range(num_mel_bins):
        a, c, b = f[i], f[i + 1], f[i + 2]
        if c == a:
            out[c, i] = 1
        else:
            for j in range(a, c + 1):
                out[j, i] = (j - a) / (c - a)
        if b > c:
            for j in range(c, b):
                out[j, i] = (b - j) / (b - c)
    return out.astype(np.float32)


def pool_cases():
    x = RNG.randn(2, 3, 7, 6).astype(np.float32)
    k, s, d = (3, 2), (2, 1), (1, 2)
    ph = (7 - (k[0] - 1) * d[0] - 1) // s[0] + 1
    pw = (6 - (k[1] - 1) * d[1] - 1) // s[1] + 1
    vals = np.zeros((2, 3, ph, pw), np.float32)
    idx = np.zeros((2, 3, ph, pw), np.int64)
    for n in range(2):
        for c in range(3):
            for i in range(ph):
                for j in range(pw):
                    best, bi = -np.inf, 0
                    for r in range(k[0]):
                        for t in range(k[1]):
                            h, w = i * s[0] + r * d[0], j * s[1] + t * d[1]
                            if x[n, c, h, w] > best:
                                best, bi = x[n, c, h, w], ((n * 3 + c) * 6 + w) * 7 + h
                    vals[n, c, i, j], idx[n, c, i, j] = best, bi
    case("maxpool_indices_colmajor", "MaxPool", {"x": x}, [vals, idx],
         {"kernel_shape": list(k), "strides": list(s), "dilations": list(d), "storage_order": 1}, 12)
    xi = RNG.randn(1, 2, 2, 2).astype(np.float32)
    ind = np.array([0, 3, 9, 14, 16, 21, 27, 30], np.int64).reshape(1, 2, 2, 2)
    want = np.zeros((1, 2, 5, 5), np.float32)
    for v, j in zip(xi.ravel(), ind.ravel()):
        c, r = divmod(int(j), 16)
        want[0, c, r // 4, r % 4] = v
    case("maxunpool_output_shape", "MaxUnpool",
         {"x": xi, "i": ind, "s": np.array([1, 2, 5, 5], np.int64)}, want,
         {"kernel_shape": [2, 2], "strides": [2, 2]}, 11)


def convt3d_reference(x, w, b, stride, pads, group):
    """ConvTranspose as its definition: each input element scatters its
    weighted kernel into the output, then the pads are cropped."""
    n, c, d, h, wd = x.shape
    mg, k = w.shape[1], w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + k[i] for i in range(3)]
    y = np.zeros((n, mg * group) + tuple(full))
    cg = c // group
    for ni in range(n):
        for ci in range(c):
            g = ci // cg
            for i in range(d):
                for j in range(h):
                    for q in range(wd):
                        o = (i * stride[0], j * stride[1], q * stride[2])
                        y[ni, g * mg:(g + 1) * mg, o[0]:o[0] + k[0], o[1]:o[1] + k[1],
                          o[2]:o[2] + k[2]] += x[ni, ci, i, j, q] * w[ci]
    y = y[:, :, pads[0]:full[0] - pads[3], pads[1]:full[1] - pads[4], pads[2]:full[2] - pads[5]]
    return (y + b.reshape(1, -1, 1, 1, 1)).astype(np.float32)


def roi_align_reference(x, rois, bidx, oh, ow, ratio, scale, half, mode):
    """onnxruntime's RoiAlign (roialign.cc), written as plain loops."""
    n_r, c = rois.shape[0], x.shape[1]
    h, w = x.shape[2:]
    y = np.zeros((n_r, c, oh, ow), np.float64)
    for r in range(n_r):
        off = 0.5 if half else 0.0
        x1, y1, x2, y2 = [float(v) * scale for v in rois[r]]
        sw, sh = x1 - off, y1 - off
        rw, rh = x2 - off - sw, y2 - off - sh
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        cnt = max(gh * gw, 1)
        for ph in range(oh):
            for pw in range(ow):
                vals = []
                for iy in range(gh):
                    yy = sh + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = sw + pw * bw + (ix + 0.5) * bw / gw
                        if yy < -1.0 or yy > h or xx < -1.0 or xx > w:
                            vals.append(np.zeros((4, c)))
                            continue
                        yy2, xx2 = max(yy, 0.0), max(xx, 0.0)
                        yl, xl = int(yy2), int(xx2)
                        if yl >= h - 1:
                            yl = yh = h - 1
                            yy2 = float(yl)
                        else:
                            yh = yl + 1
                        if xl >= w - 1:
                            xl = xh = w - 1
                            xx2 = float(xl)
                        else:
                            xh = xl + 1
                        ly, lx = yy2 - yl, xx2 - xl
                        hy, hx = 1 - ly, 1 - lx
                        img = x[bidx[r]]
                        vals.append(np.stack([hy * hx * img[:, yl, xl], hy * lx * img[:, yl, xh],
                                              ly * hx * img[:, yh, xl], ly * lx * img[:, yh, xh]]))
                v = np.stack(vals)  # [points, 4, C]
                y[r, :, ph, pw] = v.max(axis=(0, 1)) if mode == "max" else v.sum(axis=(0, 1)) / cnt
    return y.astype(np.float32)


def misc_cases():
    x = RNG.randn(2, 3, 9, 11).astype(np.float32)
    rois = np.array([[0.5, 1.0, 7.0, 6.5], [-2.0, -1.0, 4.0, 12.0], [3.0, 2.0, 3.4, 2.2]],
                    np.float32)
    bidx = np.array([1, 0, 1], np.int64)
    for mode in ("avg", "max"):
        for ratio, half in ((0, True), (2, False)):
            case("roialign_%s_ratio%d_%s" % (mode, ratio, "half" if half else "output_half"),
                 "RoiAlign", {"x": x, "r": rois, "b": bidx},
                 roi_align_reference(x, rois, bidx, 3, 4, ratio, 0.75, half, mode),
                 {"mode": mode, "output_height": 3, "output_width": 4, "sampling_ratio": ratio,
                  "spatial_scale": 0.75,
                  "coordinate_transformation_mode": "half_pixel" if half else "output_half_pixel"},
                 16)
    x = RNG.randn(1, 4, 2, 3, 2).astype(np.float32)
    w = RNG.randn(4, 3, 2, 3, 2).astype(np.float32)
    b = RNG.randn(6).astype(np.float32)
    stride, pads = (2, 1, 2), (1, 0, 0, 0, 1, 1)
    case("convtranspose_3d_groups", "ConvTranspose", {"x": x, "w": w, "b": b},
         convt3d_reference(x, w, b, stride, pads, 2),
         {"strides": list(stride), "pads": list(pads), "group": 2}, 11)
    f = RNG.randn(3, 4).astype(np.float32)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)  # bf16 values, as their bits
    case("bf16_input_as_u16", "Cast", {"x": bits},
         (bits.astype(np.uint32) << 16).view(np.float32), {"to": TensorProto.FLOAT}, 13,
         decl={"x": TensorProto.BFLOAT16})


def main():
    cov, work, targets = sys.argv[1], sys.argv[2], sys.argv[3:] or ["ref"]
    os.makedirs(work, exist_ok=True)
    for make in (int_dtype_cases, norm_cases, signal_cases, pool_cases, misc_cases):
        make()
    fails = 0
    for target in targets:
        for name, op, inputs, want, attrs, opset, decl in CASES:
            why = run_case(cov, work, target, name, op, inputs, want, attrs, opset, decl)
            if why:
                print("FAIL %s on %s: %s" % (name, target, why))
                fails += 1
    print("%d cases on %s, %d failures" % (len(CASES), ", ".join(targets), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
