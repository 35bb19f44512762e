#!/usr/bin/env python3
"""LSTM, GRU and RNN against a numpy reference written from the ONNX
operator definitions: every direction, sequence_lens (as a run-time input and
as a constant), initial_h/initial_c, LSTM peepholes and input_forget, GRU's
linear_before_reset, layout 0 and 1, clip, the eleven activations with their
alpha/beta, a symbolic batch, constant weights (folded) and weights fed at
run time. The reference runs each batch row on its own for exactly its
sequence length (a loop per row, no masks), in float64. Every case and the
keyword spotter run on `--target ref` twice: unrolled into nodes, and with
--recurrent-cells (each step one lstm_cell / gru_cell / rnn_cell call where
the cells state the node, as GPU targets compile it).

Each case also runs on the first NPU target named (within 1e-2: f16
multiplicands). Then a keyword spotter (Conv1d + ReLU + two LSTM layers + Linear on the last
step, shaped as PyTorch exports it) on `--target ref` and on every target
named after WORKDIR (npu-16x16, npu-32x32-os), within 1e-4 of numpy on ref
and 1e-2 on an NPU (f16 multiplicands, as for the real exports).

    /usr/bin/python3 test_rnn.py COVENANT WORKDIR [TARGET ...]
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, F64, I32 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32
NT = {np.dtype(np.float32): F32, np.dtype(np.float64): F64, np.dtype(np.int32): I32}
USES = {"affine": (1, 1), "leakyrelu": (1, 0), "thresholdedrelu": (1, 0), "scaledtanh": (1, 1),
        "hardsigmoid": (1, 1), "elu": (1, 0)}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


# ---- reference --------------------------------------------------------------

def act(fn, x):
    name, a, b = fn
    n = name.lower()
    if n == "relu":
        return np.maximum(x, 0)
    if n == "tanh":
        return np.tanh(x)
    if n == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if n == "affine":
        return a * x + b
    if n == "leakyrelu":
        return np.where(x >= 0, x, a * x)
    if n == "thresholdedrelu":
        return np.where(x > a, x, 0)
    if n == "scaledtanh":
        return a * np.tanh(b * x)
    if n == "hardsigmoid":
        return np.clip(a * x + b, 0, 1)
    if n == "elu":
        return np.where(x >= 0, x, a * (np.exp(x) - 1))
    if n == "softsign":
        return x / (1 + np.abs(x))
    if n == "softplus":
        return np.log(np.exp(x) + 1)
    raise ValueError(name)


def cell(op, x, h, c, w, r, b, p, fns, clip, input_forget, lbr):
    """One step of one batch row (vectors), the operator's equations."""
    H = r.shape[1]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    wb, rb = b[:len(b) // 2], b[len(b) // 2:]
    if op == "RNN":
        return act(fns[0], cl(w @ x + r @ h + wb + rb)), c
    if op == "GRU":
        s = [slice(k * H, (k + 1) * H) for k in range(3)]
        z = act(fns[0], cl(w[s[0]] @ x + r[s[0]] @ h + wb[s[0]] + rb[s[0]]))
        rr = act(fns[0], cl(w[s[1]] @ x + r[s[1]] @ h + wb[s[1]] + rb[s[1]]))
        if lbr:
            hh = act(fns[1], cl(w[s[2]] @ x + rr * (r[s[2]] @ h + rb[s[2]]) + wb[s[2]]))
        else:
            hh = act(fns[1], cl(w[s[2]] @ x + r[s[2]] @ (rr * h) + rb[s[2]] + wb[s[2]]))
        return (1 - z) * hh + z * h, c
    g = w @ x + r @ h + wb + rb
    i, o, f, cc = (g[k * H:(k + 1) * H] for k in range(4))
    pi, po, pf = p[:H], p[H:2 * H], p[2 * H:]
    i = act(fns[0], cl(i + pi * c))
    f = 1 - i if input_forget else act(fns[0], cl(f + pf * c))
    cn = f * c + i * act(fns[1], cl(cc))
    o = act(fns[0], cl(o + po * cn))
    return o * act(fns[2], cn), cn


def reference(op, X, W, R, B=None, lens=None, h0=None, c0=None, P=None, direction="forward",
              layout=0, clip=None, input_forget=0, lbr=0, fns=None):
    X, W, R = (a.astype(np.float64) for a in (X, W, R))
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, N, _ = X.shape
    D, H = W.shape[0], R.shape[2]
    B = np.zeros((D, 2 * GATES[op] * H)) if B is None else B.astype(np.float64)
    P = np.zeros((D, 3 * H)) if P is None else P.astype(np.float64)
    n_fn = len(DEFAULT_ACTS[op])
    fns = fns or [(a, 0, 0) for a in DEFAULT_ACTS[op]] * D
    Y, Yh, Yc = np.zeros((T, D, N, H)), np.zeros((D, N, H)), np.zeros((D, N, H))
    for d in range(D):
        back = direction == "reverse" or d == 1
        for n in range(N):
            L = T if lens is None else int(lens[n])
            h = np.zeros(H) if h0 is None else h0[d, n].astype(np.float64)
            c = np.zeros(H) if c0 is None else c0[d, n].astype(np.float64)
            for t in (range(L - 1, -1, -1) if back else range(L)):
                h, c = cell(op, X[t, n], h, c, W[d], R[d], B[d], P[d], fns[d * n_fn:(d + 1) * n_fn],
                            clip, input_forget, lbr)
                Y[t, d, n] = h
            Yh[d, n], Yc[d, n] = h, c
    if layout:
        return [Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)]
    return [Y, Yh, Yc]


# ---- models -----------------------------------------------------------------

def attrs_of(fns):
    names, alphas, betas = [], [], []
    for name, a, b in fns:
        names.append(name)
        ua, ub = USES.get(name.lower(), (0, 0))
        if ua:
            alphas.append(a)
        if ub:
            betas.append(b)
    out = {"activations": names}
    if alphas:
        out["activation_alpha"] = alphas
    if betas:
        out["activation_beta"] = betas
    return out


def build(path, op, feeds, consts, n_out, attrs, opset=14, dims=None):
    """feeds/consts: lists of (slot name, array); absent slots ''. dims:
    declared shapes of fed inputs by name (symbolic dims as strings)."""
    slots = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    have = dict(feeds + consts)
    last = max(slots.index(k) for k in have)
    ins = [k if k in have else "" for k in slots[:last + 1]]
    outs = ["Y", "Y_h", "Y_c"][:n_out]
    node = helper.make_node(op, ins, outs, name="rnn", **attrs)
    g = helper.make_graph(
        [node], "rnn",
        [helper.make_tensor_value_info(k, NT[a.dtype], (dims or {}).get(k, list(a.shape)))
         for k, a in feeds],
        [helper.make_tensor_value_info(o, NT[feeds[0][1].dtype], None) for o in outs],
        initializer=[numpy_helper.from_array(a, k) for k, a in consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)


def run(cov, model, feeds, work, target="ref", tol=None):
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    cells = target == "ref+cells"
    cmd = [cov, "run", model, "--target", "ref" if cells else target, "-o", out]
    if cells:
        cmd.append("--recurrent-cells")
    for i, (_, a) in enumerate(feeds):
        p = os.path.join(work, "in%d.npy" % i)
        np.save(p, a)
        cmd += ["--input", p]
    if tol is not None:
        cmd += ["--tolerance", str(tol)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None, r.stderr.strip()
    k, got = 0, []
    while os.path.exists(os.path.join(out, "output_%d.npy" % k)):
        got.append(np.load(os.path.join(out, "output_%d.npy" % k)))
        k += 1
    return got, ""


def rel_err(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(np.max(np.abs(want)), 1.0))


def case_arrays(rng, op, T, N, I, H, D, dt, layout):
    G = GATES[op]
    X = rng.standard_normal((N, T, I) if layout else (T, N, I)).astype(dt)
    W = (rng.standard_normal((D, G * H, I)) * 0.5).astype(dt)
    R = (rng.standard_normal((D, G * H, H)) * 0.5).astype(dt)
    B = (rng.standard_normal((D, 2 * G * H)) * 0.3).astype(dt)
    h0 = rng.standard_normal((N, D, H) if layout else (D, N, H)).astype(dt)
    c0 = rng.standard_normal((N, D, H) if layout else (D, N, H)).astype(dt)
    P = (rng.standard_normal((D, 3 * H)) * 0.3).astype(dt)
    return dict(X=X, W=W, R=R, B=B, initial_h=h0, initial_c=c0, P=P)


CASES = [
    # name, op, T, N, I, H, direction, options
    ("lstm_bidir_lens", "LSTM", 5, 3, 4, 3, "bidirectional",
     dict(use=["B", "sequence_lens", "initial_h", "initial_c", "P"], lens=[5, 2, 3])),
    ("lstm_reverse_layout1_clip", "LSTM", 4, 2, 3, 5, "reverse",
     dict(use=["B", "initial_h", "initial_c"], layout=1, clip=0.7, input_forget=1)),
    ("lstm_const_weights", "LSTM", 6, 2, 3, 4, "forward",
     dict(use=["B", "P"], const=["W", "R", "B", "P"], n_out=3)),
    ("lstm_const_lens_layout1", "LSTM", 4, 3, 2, 3, "bidirectional",
     dict(use=["B", "sequence_lens"], const=["W", "R", "B", "sequence_lens"], lens=[4, 1, 0],
          layout=1)),
    ("lstm_acts", "LSTM", 3, 2, 3, 2, "forward",
     dict(use=["B", "initial_h", "initial_c"],
          fns=[("HardSigmoid", 0.3, 0.4), ("Elu", 0.9, 0), ("ScaledTanh", 1.1, 0.8)])),
    ("gru_bidir_lbr_lens", "GRU", 5, 3, 4, 3, "bidirectional",
     dict(use=["B", "sequence_lens", "initial_h"], lens=[3, 5, 1], lbr=1)),
    ("gru_reverse_acts", "GRU", 4, 2, 3, 3, "reverse",
     dict(use=["B"], fns=[("HardSigmoid", 0.25, 0.45), ("Softsign", 0, 0)])),
    ("gru_lbr_nobias_layout1_clip", "GRU", 4, 2, 3, 2, "forward",
     dict(use=["initial_h"], lbr=1, layout=1, clip=0.5)),
    ("gru_lbr_bias_zero_state", "GRU", 3, 2, 3, 2, "forward", dict(use=["B"], lbr=1)),
    ("rnn_relu_affine_bidir", "RNN", 4, 2, 3, 3, "bidirectional",
     dict(use=["B", "initial_h", "sequence_lens"], lens=[2, 4],
          fns=[("Relu", 0, 0), ("Affine", 0.5, 0.1)])),
    ("rnn_leaky_thresholded", "RNN", 4, 2, 3, 3, "bidirectional",
     dict(use=["B"], fns=[("LeakyRelu", 0.2, 0), ("ThresholdedRelu", 0.3, 0)])),
    ("rnn_softplus_sigmoid", "RNN", 3, 2, 3, 3, "bidirectional",
     dict(use=["B"], fns=[("Softplus", 0, 0), ("sigmoid", 0, 0)])),
    ("rnn_f64_symbolic_batch", "RNN", 4, 3, 3, 3, "forward",
     dict(use=["B", "initial_h"], dtype=np.float64, symbolic=True)),
    # the default activations (what the cells of --recurrent-cells state)
    ("rnn_tanh_bidir_lens_clip", "RNN", 4, 3, 3, 4, "bidirectional",
     dict(use=["B", "initial_h", "sequence_lens"], lens=[4, 1, 3], clip=0.8)),
    ("lstm_reverse_peep_clip", "LSTM", 4, 2, 3, 3, "reverse", dict(use=["B", "initial_h", "P"], clip=0.6)),
    ("gru_lbr_const_lens", "GRU", 4, 3, 2, 3, "bidirectional",
     dict(use=["B", "sequence_lens", "initial_h"], const=["sequence_lens"], lens=[2, 4, 0], lbr=1)),
    ("gru_bidir_lens_clip", "GRU", 5, 3, 4, 3, "bidirectional",
     dict(use=["B", "sequence_lens", "initial_h"], lens=[3, 5, 1], clip=0.9)),
    ("gru_const_lens_zero_state", "GRU", 4, 3, 2, 3, "reverse",
     dict(use=["B", "sequence_lens"], const=["sequence_lens"], lens=[4, 1, 3])),
]


def one_case(cov, work, rng, spec, targets=()):
    name, op, T, N, I, H, direction, o = spec
    D = 2 if direction == "bidirectional" else 1
    dt = o.get("dtype", np.float32)
    layout = o.get("layout", 0)
    arr = case_arrays(rng, op, T, N, I, H, D, dt, layout)
    if "lens" in o:
        arr["sequence_lens"] = np.array(o["lens"], np.int32)
    use = ["X", "W", "R"] + o["use"]
    const = o.get("const", [])
    feeds = [(k, arr[k]) for k in use if k not in const]
    consts = [(k, arr[k]) for k in use if k in const]
    fns = [(n, np.float32(a), np.float32(b)) for n, a, b in o.get("fns", [])]
    if len(fns) == len(DEFAULT_ACTS[op]):  # the same functions for each direction
        fns = fns * D
    attrs = dict(direction=direction, hidden_size=H, layout=layout)
    if fns:
        attrs.update(attrs_of(fns))
    for k in ("clip", "input_forget"):
        if k in o:
            attrs[k] = o[k]
    if "lbr" in o:
        attrs["linear_before_reset"] = o["lbr"]
    n_out = o.get("n_out", 3 if op == "LSTM" else 2)
    dims = None
    if o.get("symbolic"):
        dims = {"X": [T, "batch", I], "initial_h": [D, "batch", H]}
    path = os.path.join(work, name + ".onnx")
    build(path, op, feeds, consts, n_out, attrs, dims=dims)
    want = reference(op, arr["X"], arr["W"], arr["R"], arr.get("B") if "B" in use else None,
                     arr.get("sequence_lens"), arr["initial_h"] if "initial_h" in use else None,
                     arr["initial_c"] if "initial_c" in use else None,
                     arr["P"] if "P" in use else None, direction, layout, o.get("clip"),
                     o.get("input_forget", 0), o.get("lbr", 0), fns or None)
    worst = {}
    for target in ["ref", "ref+cells"] + list(targets):
        on_npu = not target.startswith("ref")
        got, err = run(cov, path, feeds, work, target, 1e-2 if on_npu else None)
        if got is None:
            return "%s on %s: covenant run failed: %s" % (name, target, err[-2000:])
        tol = 1e-2 if on_npu else 1e-12 if dt == np.float64 else 2e-6
        for k in range(n_out):
            if got[k].dtype != dt or got[k].shape != want[k].shape:
                return "%s on %s: output %d is %s%s, want %s%s" % (
                    name, target, k, got[k].dtype, got[k].shape, np.dtype(dt), want[k].shape)
            e = rel_err(got[k], want[k])
            worst[target] = max(worst.get(target, 0.0), e)
            if e > tol:
                return "%s on %s: output %d differs by %.3g (tolerance %g)" % (name, target, k, e,
                                                                             tol)
    print("ok %-30s outputs %s, error %s" % (name, [tuple(g.shape) for g in got],
                                             ", ".join("%s %.2g" % kv for kv in worst.items())))
    return None


# ---- a keyword spotter ------------------------------------------------------

def kws_model(path, rng, N=2, C=40, T=49, K=32, H=32, classes=12):
    """Conv1d(C->K, 3, pad 1) + ReLU, [N, K, T] -> [T, N, K], LSTM(H) twice
    (the second with zero initial states given as constants, as PyTorch
    writes them), the last step, Linear(H->classes)."""
    p = dict(w1=rng.standard_normal((K, C, 3)) * 0.2, b1=rng.standard_normal(K) * 0.1,
             W1=rng.standard_normal((1, 4 * H, K)) * 0.3, R1=rng.standard_normal((1, 4 * H, H)) * 0.3,
             B1=rng.standard_normal((1, 8 * H)) * 0.1,
             W2=rng.standard_normal((1, 4 * H, H)) * 0.3, R2=rng.standard_normal((1, 4 * H, H)) * 0.3,
             B2=rng.standard_normal((1, 8 * H)) * 0.1, h0=np.zeros((1, N, H)), c0=np.zeros((1, N, H)),
             wf=rng.standard_normal((classes, H)) * 0.3, bf=rng.standard_normal(classes) * 0.1)
    p = {k: v.astype(np.float32) for k, v in p.items()}
    ints = {"ax1": np.array([1], np.int64), "last": np.array(T - 1, np.int64)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1], kernel_shape=[3]),
        helper.make_node("Relu", ["c"], ["cr"]),
        helper.make_node("Transpose", ["cr"], ["seq"], perm=[2, 0, 1]),
        helper.make_node("LSTM", ["seq", "W1", "R1", "B1"], ["y1"], hidden_size=H, name="lstm1"),
        helper.make_node("Squeeze", ["y1", "ax1"], ["s1"]),
        helper.make_node("LSTM", ["s1", "W2", "R2", "B2", "", "h0", "c0"], ["y2", "yh2"],
                         hidden_size=H, name="lstm2"),
        helper.make_node("Squeeze", ["y2", "ax1"], ["s2"]),
        helper.make_node("Gather", ["s2", "last"], ["lastst"], axis=0),
        helper.make_node("Gemm", ["lastst", "wf", "bf"], ["logits"], transB=1),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in list(p.items()) + list(ints.items())]
    g = helper.make_graph(nodes, "kws", [helper.make_tensor_value_info("x", F32, [N, C, T])],
                          [helper.make_tensor_value_info("logits", F32, [N, classes])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.save(m, path)
    x = rng.standard_normal((N, C, T)).astype(np.float32)
    # numpy: the convolution as its sum, then the two LSTMs per the reference above
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1)))
    conv = np.stack([sum(np.einsum("oc,nct->not", p["w1"][:, :, k], xp[:, :, k:k + T])
                         for k in range(3))], 0)[0] + p["b1"][None, :, None]
    seq = np.maximum(conv, 0).transpose(2, 0, 1)
    y1 = reference("LSTM", seq, p["W1"], p["R1"], p["B1"])[0][:, 0]
    y2 = reference("LSTM", y1, p["W2"], p["R2"], p["B2"], h0=p["h0"], c0=p["c0"])[0][:, 0]
    return x, y2[-1] @ p["wf"].T.astype(np.float64) + p["bf"]


def main():
    cov, work = sys.argv[1], sys.argv[2]
    targets = sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    # the cases on the first NPU too (f64 stays on ref: its groups run on
    # the CPU there)
    fails = [f for f in (one_case(cov, work, rng, spec,
                                  targets[:1] if spec[-1].get("dtype") is None else ())
                         for spec in CASES) if f]
    path = os.path.join(work, "kws.onnx")
    x, want = kws_model(path, rng)
    for target in ["ref", "ref+cells"] + targets:
        on_ref = target.startswith("ref")
        tol = 1e-4 if on_ref else 1e-2  # NPUs: f16 multiplicands, f32 sums
        got, err = run(cov, path, [("x", x)], work, target, None if on_ref else tol)
        if got is None:
            fails.append("kws on %s: covenant run failed: %s" % (target, err[-2000:]))
            continue
        e = rel_err(got[0], want)
        print("kws on %-14s error %.3g" % (target, e))
        if e > tol:
            fails.append("kws on %s: differs by %.3g (tolerance %g)" % (target, e, tol))
    for f in fails:
        print("FAIL", f)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
