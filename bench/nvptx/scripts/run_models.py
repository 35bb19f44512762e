#!/usr/bin/env python3
"""bench/nvptx/scripts/run_models.py: compiled models on the GPU machine (see run_models.sh).

For every artifact listed in PART/models.txt ("NAME BATCH FILE" per line):
  * correctness: --cases random inputs (uniform [-1, 1) for float inputs,
    token ids in [0, vocab) for integer ones; seeded), run by covenant-run
    in one process (--cases DIR: weights loaded once), compared with
    onnxruntime (CPU) on the same inputs: per case max|covenant - ort| /
    max|ort| over every output, the worst case reported; PASS at --tol
    (1e-2: covenant's kernels take f16 operands); a quantized model
    (Q/DQ or QLinear nodes) passes only when bit-exact with covenant's
    reference interpreter on the same inputs (--refs: outputs ref_cases.py
    computed where the artifact was compiled), else with
    tests/models/qdq_exact.py where it takes the model (float64 sums), else
    with onnxruntime with its graph optimisations off; onnxruntime's own
    distance from the exact evaluation is reported beside (its float32 sums
    land one step off near a rounding boundary);
  * latency: covenant-run --iters N --warmup W (CUDA events around replays
    of one CUDA graph of every step), next to torch eager on the same ONNX
    graph (its nodes as torch calls, fp16 on the GPU) captured in a
    torch.cuda.CUDAGraph and replayed the same way (never a Python loop of
    torch calls), the two timed alternately --reps times, medians; torch's
    own outputs are checked against onnxruntime too, so the time is of a
    model that computes the right thing;
  * torch.compile (--compile models): the torch module the export was made
    from (torchvision's or tests/models/export_real.py's; fp16, random
    weights) compiled by inductor (--compile-mode, inductor's default
    unless told), its kernels captured in a CUDA graph and replayed like
    eager's (mode reduce-overhead replays its own graphs: one call per
    replay), timed alternately with the eager module and covenant-run in a
    fresh process; checked against the eager module on the same input.
One model's failure is reported on its row; the others go on.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "runtime"))
import artifact  # noqa: E402  (runtime/artifact.py: the manifest reader)


QUANT_OPS = ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
             "QLinearAdd", "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear")


def log(*a):
    print(*a, flush=True)


# ---- the ONNX models (materialized from the tracked skeletons) ------------

def onnx_path(name, batch, cache):
    """The ONNX file the artifact was compiled from, materialized again here."""
    os.makedirs(cache, exist_ok=True)
    if name in ("convnet", "encoder"):
        src = os.path.join(ROOT, "examples", "convnet.onnx") if name == "convnet" else \
            os.path.join(ROOT, "tests", "frontend", "models", "encoder.onnx")
        if batch == 1:
            return src
        exported = os.path.join(ROOT, "tests", "frontend", "models", "%s_b%d.onnx" % (name, batch))
        if os.path.exists(exported):  # the encoder's batch-32 export (compile_models.sh takes it too)
            return exported
        dst = os.path.join(cache, "%s_b%d.onnx" % (name, batch))
        if not os.path.exists(dst):
            make_batch(src, batch, dst)
        return dst
    stem = name if batch == 1 else "%s_b%d" % (name, batch)
    dst = os.path.join(cache, stem + ".onnx")
    if os.path.exists(dst):
        return dst
    if batch == 1 or os.path.exists(os.path.join(ROOT, "tests", "models", stem + ".skel.onnx")):
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "models", "materialize.py"), cache, stem],
                       check=True, stdout=subprocess.DEVNULL)
        return dst
    make_batch(onnx_path(name, 1, cache), batch, dst)
    return dst


def make_batch(src, n, dst):
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "nvptx", "scripts", "make_batch.py"), src, str(n), dst],
                   check=True)


def random_inputs(manifest, model, rng):
    """One input per manifest input: floats in [-1, 1), ints in [0, vocab)."""
    import onnx
    from onnx import numpy_helper
    vocab = {}
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[0] in inits:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            n = numpy_helper.to_array(inits[node.input[0]]).shape[axis]
            vocab[node.input[1]] = min(vocab.get(node.input[1], n), n)
    out = []
    for io in manifest["inputs"]:
        shape = io["shape"]
        if io["dtype"] in ("f32", "f16"):
            out.append(rng.uniform(-1, 1, size=shape).astype(np.float32 if io["dtype"] == "f32" else np.float16))
        elif io["dtype"] == "bool":
            out.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        else:
            hi = vocab.get(io["name"], 2)
            types = {"i64": np.int64, "i32": np.int32, "i8": np.int8, "u8": np.uint8}
            out.append(rng.integers(0, hi, size=shape).astype(types[io["dtype"]]))
    return out


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.size != want.size:
        return float("inf")
    d = np.max(np.abs(got.reshape(-1) - want.reshape(-1))) if got.size else 0.0
    s = np.max(np.abs(want)) if want.size else 0.0
    e = d / max(s, 1e-30)
    return float("inf") if not np.isfinite(e) else float(e)


# ---- torch eager from the ONNX graph, in a CUDA graph ----------------------

class TorchGraph:
    """The ONNX graph's nodes as torch calls (fp16 on the GPU). Values that
    depend on no model input (shapes, constants, masks) are computed once
    in the first (eager) run and reused, so the captured run holds only the
    model's kernels."""

    def __init__(self, model, torch, device="cuda", half=True):
        from onnx import numpy_helper
        self.t = torch
        self.model = model
        self.dev = torch.device(device)
        self.ft = torch.float16 if half else torch.float32
        self.static = {}
        for i in model.graph.initializer:
            self.static[i.name] = self._const(numpy_helper.to_array(i))
        self.inputs = [i.name for i in model.graph.input if i.name not in self.static]
        self.outputs = [o.name for o in model.graph.output]
        self.frozen = False
        self.dcache = {}
        self.scalars = {}

    def _const(self, a):
        t = self.t
        if a.dtype.kind == "f":
            return t.from_numpy(np.ascontiguousarray(a)).to(self.dev, self.ft)
        return t.from_numpy(np.ascontiguousarray(a))  # ints and bools stay on the CPU (shapes, axes)

    def D(self, x):
        """x on the GPU; a CPU value's copy is made once (in the eager runs:
        a capture may not copy from the host) and reused."""
        if x.device.type == self.dev.type:
            return x
        hit = self.dcache.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        xg = x.to(self.dev)
        self.dcache[id(x)] = (x, xg)
        return xg

    @staticmethod
    def ints(x):
        return [int(v) for v in x.reshape(-1).tolist()]

    def run(self, feeds):
        t = self.t
        F = t.nn.functional
        env = dict(self.static)
        env.update(feeds)
        dyn = set(feeds)
        for node in self.model.graph.node:
            outs = node.output
            if self.frozen and all(o in self.static for o in outs):
                for o in outs:
                    env[o] = self.static[o]
                continue
            a = {x.name: x for x in node.attribute}

            def A(k, d=None):
                if k not in a:
                    return d
                x = a[k]
                from onnx import helper
                return helper.get_attribute_value(x)
            ins = [env[i] if i else None for i in node.input]
            op = node.op_type
            D = self.D
            r = None
            if op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Mod"):
                x, y = ins
                if x.device.type != "cpu" or y.device.type != "cpu":
                    x, y = D(x), D(y)
                if op == "Add": r = x + y
                elif op == "Sub": r = x - y
                elif op == "Mul": r = x * y
                elif op == "Div": r = x / y if x.is_floating_point() else t.div(x, y, rounding_mode="trunc")
                elif op == "Pow": r = t.pow(x, y)
                elif op == "Equal": r = x == y
                else: r = t.fmod(x, y) if A("fmod", 0) else t.remainder(x, y)
            elif op == "Reciprocal": r = t.reciprocal(ins[0])
            elif op == "Sqrt": r = t.sqrt(ins[0])
            elif op == "Erf": r = t.erf(ins[0])
            elif op == "Tanh": r = t.tanh(ins[0])
            elif op == "Sigmoid": r = t.sigmoid(ins[0])
            elif op == "Relu": r = F.relu(ins[0])
            elif op == "Clip":
                # bounds read once, in the eager run: .item() on a GPU
                # constant inside the capture would synchronize and break it
                # (mobilenet_v2's ReLU6)
                if id(node) not in self.scalars:
                    self.scalars[id(node)] = tuple(
                        float(ins[k].item()) if len(ins) > k and ins[k] is not None else None for k in (1, 2))
                lo, hi = self.scalars[id(node)]
                r = t.clamp(ins[0], lo, hi)
            elif op == "Where":
                c, x, y = ins
                if any(v.device.type != "cpu" for v in ins) or x.is_floating_point():
                    c, x, y = D(c), D(x), D(y)
                r = t.where(c, x, y)
            elif op == "Cast":
                to = A("to")
                dt = {1: self.ft, 10: self.ft, 11: self.ft, 6: t.int32, 7: t.int64, 9: t.bool}[to]
                r = ins[0].to(dt)
            elif op == "Identity": r = ins[0]
            elif op == "Constant":
                from onnx import numpy_helper
                r = self._const(numpy_helper.to_array(A("value")))
            elif op == "ConstantOfShape":
                from onnx import numpy_helper
                v = A("value")
                val = numpy_helper.to_array(v) if v is not None else np.zeros(1, np.float32)
                r = self._const(np.full(self.ints(ins[0]), val.reshape(-1)[0], dtype=val.dtype))
            elif op == "Shape": r = t.tensor(list(ins[0].shape), dtype=t.int64)
            elif op == "Gather":
                x, idx = ins
                axis = A("axis", 0) % max(x.dim(), 1)
                if x.device.type != "cpu" or x.is_floating_point(): x, idx = D(x), D(idx)
                elif idx.device.type != "cpu": x = D(x)
                idx = t.where(idx < 0, idx + x.shape[axis], idx)
                r = t.index_select(x, axis, idx.reshape(-1)).reshape(
                    tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1:]))
            elif op == "Unsqueeze":
                axes = self.ints(ins[1]) if len(ins) > 1 else A("axes")
                r = ins[0]
                for ax in sorted(ax % (r.dim() + len(axes)) for ax in axes):
                    r = r.unsqueeze(ax)
            elif op == "Squeeze":
                axes = self.ints(ins[1]) if len(ins) > 1 and ins[1] is not None else A("axes")
                r = ins[0]
                if axes is None:
                    r = r.squeeze()
                else:
                    for ax in sorted((ax % r.dim() for ax in axes), reverse=True):
                        r = r.squeeze(ax)
            elif op == "Concat":
                xs = ins
                if any(v.device.type != "cpu" or v.is_floating_point() for v in xs):
                    xs = [D(v) for v in xs]
                r = t.cat(xs, A("axis"))
            elif op == "Slice":
                x = ins[0]
                starts, ends = self.ints(ins[1]), self.ints(ins[2])
                axes = self.ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
                steps = self.ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
                sl = [slice(None)] * x.dim()
                for s, e, ax, st in zip(starts, ends, axes, steps):
                    n = x.shape[ax]
                    s = max(0, min(n, s + n if s < 0 else s))
                    e = max(0, min(n, e + n if e < 0 else e))
                    if st < 0:
                        raise NotImplementedError("Slice with a negative step")
                    sl[ax % x.dim()] = slice(s, e, st)
                r = x[tuple(sl)]
            elif op == "Split":
                x = ins[0]
                axis = A("axis", 0)
                if len(ins) > 1 and ins[1] is not None:
                    sizes = self.ints(ins[1])
                else:
                    k = len(outs)
                    n = x.shape[axis]
                    sizes = [(n + k - 1) // k] * (k - 1) + [n - (n + k - 1) // k * (k - 1)]
                r = list(t.split(x, sizes, axis))
            elif op == "Reshape":
                shape = self.ints(ins[1])
                x = ins[0]
                shape = [x.shape[i] if s == 0 and not A("allowzero", 0) else s for i, s in enumerate(shape)]
                r = x.reshape(shape)
            elif op == "Flatten":
                ax = A("axis", 1)
                x = ins[0]
                r = x.reshape(int(np.prod(x.shape[:ax])), -1)
            elif op == "Transpose":
                perm = A("perm") or list(range(ins[0].dim()))[::-1]
                r = ins[0].permute(*perm)
            elif op == "Expand":
                x = ins[0]
                r = t.broadcast_to(x, t.broadcast_shapes(tuple(x.shape), tuple(self.ints(ins[1]))))
            elif op == "Conv":
                x, w = ins[0], ins[1]
                b = ins[2] if len(ins) > 2 else None
                pads = A("pads", [0] * 4)
                if pads[0] != pads[2] or pads[1] != pads[3]:
                    x = F.pad(x, (pads[1], pads[3], pads[0], pads[2]))
                    pads = [0, 0, 0, 0]
                r = F.conv2d(x, w, b, A("strides", [1, 1]), (pads[0], pads[1]), A("dilations", [1, 1]), A("group", 1))
            elif op == "BatchNormalization":
                x, sc, bi, mean, var = ins
                r = F.batch_norm(x, mean, var, sc, bi, False, 0.0, A("epsilon", 1e-5))
            elif op == "MaxPool":
                k = A("kernel_shape")
                pads = A("pads", [0] * 4)
                x = ins[0]
                if pads[0] != pads[2] or pads[1] != pads[3]:
                    x = F.pad(x, (pads[1], pads[3], pads[0], pads[2]), value=-float("inf"))
                    pads = [0, 0, 0, 0]
                r = F.max_pool2d(x, k, A("strides", k), (pads[0], pads[1]), A("dilations", [1, 1]),
                                 ceil_mode=bool(A("ceil_mode", 0)))
            elif op == "GlobalAveragePool": r = ins[0].mean(dim=(2, 3), keepdim=True)
            elif op == "ReduceMean":
                axes = A("axes") if A("axes") is not None else (self.ints(ins[1]) if len(ins) > 1 else None)
                r = ins[0].mean(dim=tuple(axes) if axes else None, keepdim=bool(A("keepdims", 1)))
            elif op == "Gemm":
                x, w = ins[0], ins[1]
                if A("transA", 0): x = x.t()
                if A("transB", 0): w = w.t()
                r = A("alpha", 1.0) * (x @ w)
                if len(ins) > 2 and ins[2] is not None:
                    r = r + A("beta", 1.0) * ins[2]
            elif op == "MatMul": r = t.matmul(D(ins[0]), D(ins[1]))
            elif op == "Softmax": r = t.softmax(ins[0], A("axis", -1))
            elif op == "LayerNormalization":
                x, sc = ins[0], ins[1]
                b = ins[2] if len(ins) > 2 else None
                axis = A("axis", -1) % x.dim()
                r = F.layer_norm(x, tuple(x.shape[axis:]), sc, b, A("epsilon", 1e-5))
            elif op == "Resize":
                x = ins[0]
                scales = ins[2] if len(ins) > 2 and ins[2] is not None and ins[2].numel() else None
                sizes = ins[3] if len(ins) > 3 and ins[3] is not None and ins[3].numel() else None
                mode = A("mode", b"nearest")
                mode = mode.decode() if isinstance(mode, bytes) else mode
                if mode != "nearest":
                    raise NotImplementedError("Resize mode %s" % mode)
                if sizes is not None:
                    r = F.interpolate(x, size=self.ints(sizes)[2:], mode="nearest")
                else:
                    sc = [float(v) for v in scales.reshape(-1).tolist()]
                    r = F.interpolate(x, scale_factor=sc[2:], mode="nearest")
            else:
                raise NotImplementedError("no torch equivalent here for ONNX %s" % op)
            rs = r if isinstance(r, list) else [r]
            # input shapes are fixed: what derives from shapes alone is static
            is_dyn = op != "Shape" and any(i in dyn for i in node.input if i)
            for o, v in zip(outs, rs):
                env[o] = v
                if is_dyn:
                    dyn.add(o)
                elif not self.frozen:
                    self.static[o] = v
        return [env[o] for o in self.outputs]

    def feeds(self, feeds_np):
        t = self.t
        return {k: (t.from_numpy(v).to(self.dev, self.ft) if v.dtype.kind == "f" else t.from_numpy(v).to(self.dev))
                for k, v in feeds_np.items()}

    def capture(self, feeds_np):
        """The graph captured after an eager run and three warm-up runs: (graph,
        its outputs, the eager run's outputs)."""
        t = self.t
        feeds = self.feeds(feeds_np)
        with t.no_grad():
            outs = self.run(feeds)  # eager, records what depends on no input
            self.frozen = True
            for k in list(self.static):  # static data the kernels read goes to the GPU now
                v = self.static[k]
                if v.device.type == "cpu" and (v.is_floating_point() or v.dtype == t.bool):
                    self.static[k] = v.to(self.dev)
            g, gouts = cuda_graph(t, lambda: self.run(feeds))
        return g, gouts, outs


def cuda_graph(t, fn):
    """fn's kernels captured in a torch.cuda.CUDAGraph after three warm-up
    calls on a side stream (torch's recipe): (graph, fn's outputs in it)."""
    side = t.cuda.Stream()
    side.wait_stream(t.cuda.current_stream())
    with t.cuda.stream(side):
        for _ in range(3):
            fn()
    t.cuda.current_stream().wait_stream(side)
    g = t.cuda.CUDAGraph()
    with t.cuda.graph(g):
        outs = fn()
    return g, outs


class CallLoop:
    """replay() calls fn: for torch.compile's reduce-overhead mode, whose
    every call replays the CUDA graph torch recorded for it."""

    def __init__(self, fn):
        self.replay = fn


def replay_ms(t, g, warmup, iters):
    """Mean ms of iters replays of g (CUDA events), after warmup replays."""
    for _ in range(warmup):
        g.replay()
    t.cuda.synchronize()
    s, e = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        g.replay()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / iters


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def covenant_ms(opt, art_path):
    """One timing of covenant-run (--iters CUDA-graph replays): (ms, device)."""
    out = run_covenant(opt.runtime, [art_path, "--iters", str(opt.iters), "--warmup", str(opt.warmup)], opt.timeout)
    m = re.search(r"time: ([0-9.]+) ms per run", out)
    dev = next((l[len("device: "):] for l in out.splitlines() if l.startswith("device: ")), "?")
    return (float(m.group(1)) if m else None), dev


# ---- one artifact -----------------------------------------------------------

class QuantRef:
    """The reference an int8 artifact must match bit for bit. onnxruntime
    sums a QDQ model's float Conv/Gemm in float32 in its own order, so near
    a QuantizeLinear's rounding boundary it can land one step away from
    ONNX's exact meaning; tests/models/qdq_exact.py evaluates the QDQ
    operators it takes exactly (float64 sums, which hold the float32
    products exactly, so no order dependence). Where it takes the model,
    it is the reference and onnxruntime (optimisations off) is compared
    with it too (ort_steps: how far, in output units, and how often);
    elsewhere (QLinear operators) onnxruntime with optimisations off is."""

    def __init__(self, model, noopt):
        self.model, self.noopt, self.what = model, noopt, "onnxruntime, graph optimisations off"
        self.ort_max, self.ort_diff, self.ort_total = 0.0, 0, 0
        sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
        import qdq_exact
        self.qdq = qdq_exact
        self.exact_ok = True

    def run(self, names, feeds):
        ort_out = self.noopt.run(names, feeds)
        if not self.exact_ok or len(self.model.graph.input) != 1:
            return ort_out
        try:
            got = self.qdq.run(self.model, feeds)
        except (SystemExit, KeyError):  # an operator it does not take
            self.exact_ok = False
            return ort_out
        self.what = "tests/models/qdq_exact.py (exact QDQ evaluation)"
        for a, b in zip(ort_out, got):
            d = np.abs(a.astype(np.float64) - np.asarray(b, np.float64))
            self.ort_max = max(self.ort_max, float(d.max()) if d.size else 0.0)
            self.ort_diff += int(np.count_nonzero(d))
            self.ort_total += int(d.size)
        return got

    def ort_steps(self):
        if self.what.startswith("onnxruntime"):
            return {}
        return {"ort_noopt_vs_exact_max_abs": self.ort_max, "ort_noopt_vs_exact_elements": [self.ort_diff, self.ort_total]}


def run_covenant(rt, args, timeout):
    p = subprocess.run([rt] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("covenant-run %s: exit %d: %s" % (" ".join(args), p.returncode, p.stdout.strip()[-800:]))
    return p.stdout


def one(opt, name, batch, art_path, cache):
    import onnx
    import onnxruntime as ort
    row = {"model": name, "batch": batch, "artifact": os.path.basename(art_path)}
    manifest, _ = artifact.read(art_path)
    row["steps"] = len(manifest["steps"])
    onnx_file = onnx_path(name, batch, cache)
    model = onnx.load(onnx_file)
    sess = ort.InferenceSession(onnx_file, providers=["CPUExecutionProvider"])
    # onnxruntime's optimised graph fuses Q/DQ pairs into integer kernels
    # that round differently from ONNX's definition; with its graph
    # optimisations off it computes each Q/DQ as written, which an int8
    # artifact must match bit for bit
    exact = None
    if any(n.op_type in QUANT_OPS for n in model.graph.node):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        exact = ort.InferenceSession(onnx_file, so, providers=["CPUExecutionProvider"])
        exact = QuantRef(model, exact)
    ort_inputs = [i.name for i in sess.get_inputs()]
    names = [io["name"] for io in manifest["inputs"]]
    if sorted(ort_inputs) != sorted(names):
        raise RuntimeError("inputs differ: artifact %s, onnx %s" % (names, ort_inputs))
    n_cases = opt.cases if batch == 1 else opt.b32_cases
    refs = None  # the reference interpreter's outputs on these inputs (ref_cases.py), where they came along
    ref_file = os.path.join(opt.refs or "", "ref", "%s.b%d.npz" % (name, batch))
    if exact and opt.refs and os.path.exists(ref_file):
        refs = np.load(ref_file)
        if len(refs.files) != n_cases * len(manifest["outputs"]):
            raise RuntimeError("%s holds %d arrays, not %d cases x %d outputs (compile and run with the same --cases)"
                               % (ref_file, len(refs.files), n_cases, len(manifest["outputs"])))
    rng = np.random.default_rng(opt.seed)
    cases = tempfile.mkdtemp(prefix="covcases_")
    try:
        all_in = []
        for c in range(n_cases):
            ins = random_inputs(manifest, model, rng)
            all_in.append(ins)
            os.makedirs(os.path.join(cases, str(c)))
            for k, x in enumerate(ins):
                np.save(os.path.join(cases, str(c), "in%d.npy" % k), x)
        t0 = time.time()
        run_covenant(opt.runtime, [art_path, "--cases", cases], opt.timeout)
        row["covenant_cases_s"] = round(time.time() - t0, 2)
        worst, worst_case, worst_exact = 0.0, -1, 0.0
        out_names = [o["name"] for o in manifest["outputs"]]
        for c, ins in enumerate(all_in):
            want = sess.run(out_names, dict(zip(names, ins)))
            noopt = exact.run(out_names, dict(zip(names, ins))) if exact else [None] * len(want)
            if exact:
                row["int8_reference"] = exact.what
            if exact and refs is not None:
                noopt = [refs["out%d_%d" % (c, k)] for k in range(len(want))]
                row["int8_reference"] = "covenant --target ref on the same inputs (ref_cases.py)"
            for k, (w, x) in enumerate(zip(want, noopt)):
                got = np.load(os.path.join(cases, str(c), "out%d.npy" % k))
                e = rel_err(got, w)
                if not (e <= worst):
                    worst, worst_case = e, c
                if x is not None:
                    d = float(np.max(np.abs(got.astype(np.float64) - x.astype(np.float64)))) if x.size else 0.0
                    if not (d <= worst_exact):
                        worst_exact = d
        ok = worst <= opt.tol
        if exact:
            row["max_abs_err_vs_int8_reference"] = worst_exact
            row.update(exact.ort_steps())
            ok = worst_exact == 0.0
        row.update(cases=n_cases, max_rel_err=worst, worst_case=worst_case, passed=bool(ok))
    finally:
        shutil.rmtree(cases, ignore_errors=True)
    # latency: covenant-run and torch eager (the ONNX graph as torch calls,
    # on the first case's inputs, in a CUDA graph) alternately, opt.reps
    # times each; medians
    cov_runs, torch_runs, g = [], [], None
    try:
        import torch
        if any(n.op_type.startswith("Q") or n.op_type == "DequantizeLinear" for n in model.graph.node):
            raise NotImplementedError("quantized model: no fp16 torch eager equivalent")
        tg = TorchGraph(model, torch)
        g, gouts, _ = tg.capture(dict(zip(names, all_in[0])))
        g.replay()  # a capture computes nothing: the outputs checked are a replay's
        torch.cuda.synchronize()
        want = sess.run([o["name"] for o in manifest["outputs"]], dict(zip(names, all_in[0])))
        res = [o.float().cpu().numpy() for o in gouts]
        row["torch"] = "the ONNX graph as torch calls"
        row["torch_rel_err"] = max(rel_err(a, w) for a, w in zip(res, want))
    except Exception as e:  # the covenant results stand without the anchor
        row["torch_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    for _ in range(opt.reps):
        ms, row["device"] = covenant_ms(opt, art_path)
        cov_runs.append(ms)
        if g is not None:
            try:  # a torch failure (a device assert) loses the anchor, not covenant's row
                torch_runs.append(replay_ms(torch, g, opt.warmup, opt.iters))
            except Exception as e:  # noqa: BLE001
                row["torch_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
                g, torch_runs = None, []
    row["covenant_runs_ms"] = cov_runs
    row["covenant_ms"] = median(cov_runs) if None not in cov_runs else None
    if torch_runs:
        row["torch_runs_ms"] = torch_runs
        row["torch_ms"] = median(torch_runs)
    shape = manifest["inputs"][0]["shape"]
    if name in (opt.compile or ()):
        try:
            r = module_ms_fresh(opt, name, shape, art_path)
            row["compile"] = r
            row["compile_ms"] = r["compiled_ms"]
        except Exception as e3:
            row["compile_error"] = "%s: %s" % (type(e3).__name__, str(e3)[:400])
    if not torch_runs and (name in TORCHVISION or name in MODULES):
        # the module itself is the anchor (timed by the torch.compile call
        # already where there was one)
        try:
            row["torch_ms"] = row["compile"]["module_ms"] if "compile" in row else \
                module_ms_fresh(opt, name, shape, None)["module_ms"]
            row["torch"] = ("torchvision.models.%s" % name if name in TORCHVISION else MODULES[name]) + \
                " (random weights; not checked)"
            row["torch_rel_err"] = float("nan")
        except Exception as e2:
            row["torch_error"] += "; torchvision: %s: %s" % (type(e2).__name__, str(e2)[:200])
    # torch eager's time: the faster of its two forms timed here (the ONNX
    # graph as torch calls, the module itself), each replayed from a CUDA graph
    anchors = [(row["torch_ms"], row.get("torch", "")) if row.get("torch_ms") else None,
               (row["compile"]["module_ms"], "the torch module") if "compile" in row else None]
    anchors = [a for a in anchors if a]
    if anchors:
        row["eager_ms"], row["eager"] = min(anchors)
    return row


# the coverage exports' modules (tests/models/export_coverage.py), anchors
# where the ONNX graph holds ops the torch replay above does not have
COVERAGE = {"unet_tiny": "UNetTiny", "deeplab_tiny": "DeepLabTiny", "lstm_kws": "KWS"}
TIMM = {"convnext_atto": "convnext_atto"}
TORCHVISION = ("squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "resnet18", "resnet50", "efficientnet_b0")
# the torch modules the other exports were made from (tests/models/export_real.py,
# tests/frontend/models/export_models.py): the anchor where the ONNX graph
# could not be replayed as torch calls
MODULES = {"yolo_tiny": "export_real.YoloTiny", "vit_tiny": "export_real.ViTTiny", "gpt2_tiny": "export_real.GPT2Tiny",
           "small_cnn": "export_real.SmallCNN", "unet_tiny": "export_coverage.UNetTiny",
           "deeplab_tiny": "export_coverage.DeepLabTiny", "lstm_kws": "export_coverage.KWS",
           "mobilenet_v3_small_64": "torchvision.models.mobilenet_v3_small",
           "convnext_atto": "timm convnext_atto",
           "encoder": "nn.TransformerEncoderLayer(64, 4, 128, relu, batch_first) as export_models builds it"}


def module_of(name, torch):
    """The torch module (eval, random weights) an export was made from."""
    if name in TORCHVISION:
        import torchvision
        return getattr(torchvision.models, name)(weights=None)
    if name == "encoder":
        return torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
                                                activation="relu", batch_first=True)
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    if name in TIMM:  # tests/models/export_coverage.py's timm exports
        import timm
        return timm.create_model(TIMM[name], pretrained=False)
    saved = sys.argv
    sys.argv = sys.argv[:1]  # export_real / export_coverage read their OUT from argv at import
    try:
        import export_real
        if name in COVERAGE:
            import export_coverage
            return getattr(export_coverage, COVERAGE[name])()
    finally:
        sys.argv = saved
    if name == "mobilenet_v3_small_64":
        return export_real.tv("mobilenet_v3_small")
    return export_real.MODELS[name][0]()


def module_ms_fresh(opt, name, shape, art_path):
    """module_ms in a new process: a capture that failed in this one leaves
    its CUDA context unusable for another capture ("Offset increment outside
    graph capture"), which is how mobilenet_v2 lost its anchor in the first
    runs; and each torch.compile starts from a clean dynamo state."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys, json; sys.path.insert(0, %r); import run_models as r; "
            "print(json.dumps(r.module_ms(%r, %r, %r, %r, %d, %d, %d, %r)))" %
            (here, opt.runtime, name, list(shape), art_path, opt.warmup, opt.iters, opt.reps, opt.compile_mode))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr.strip()[-400:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def module_ms(runtime, name, shape, art_path, warmup, iters, reps, mode):
    """The torch module itself (torchvision's, or the one the export was made
    from; fp16, eval, random weights), in a CUDA graph: the anchor where the
    ONNX graph could not be replayed as torch calls. With an artifact, also
    torch.compile(module, mode) (inductor; its warm-up calls compile it,
    then its kernels are captured in a CUDA graph like eager's), timed
    alternately with the eager module and covenant-run, medians of reps.
    Token inputs (gpt2_tiny) are random ids below its vocabulary (512)."""
    import torch
    net = module_of(name, torch).eval().half().cuda()
    if name == "gpt2_tiny":
        x = torch.randint(0, 512, tuple(shape), device="cuda", dtype=torch.long)
    else:
        x = torch.rand(*shape, device="cuda", dtype=torch.float16) * 2 - 1
    r = {}
    with torch.no_grad():
        g, ref = cuda_graph(torch, lambda: net(x))
        graphs = {"module_ms": g}
        if art_path:
            cnet = torch.compile(net, mode=None if mode == "default" else mode)
            t0 = time.time()
            cnet(x)
            torch.cuda.synchronize()
            r["compile_s"] = round(time.time() - t0, 1)
            if mode == "reduce-overhead":
                # this mode records and replays its own CUDA graphs (cudagraph
                # trees), which cannot be captured inside another graph: each
                # call is one replay of torch's graph, so a loop of calls is
                # the graph-replay time this mode gives its users
                for _ in range(3):
                    torch.compiler.cudagraph_mark_step_begin()
                    outc = cnet(x)
                gc = CallLoop(lambda: (torch.compiler.cudagraph_mark_step_begin(), cnet(x)))
                outc = cnet(x)
                outc = outc.clone() if hasattr(outc, "clone") else outc
            else:
                gc, outc = cuda_graph(torch, lambda: cnet(x))
                gc.replay()
            g.replay()
            torch.cuda.synchronize()
            a, b = (ref[0] if isinstance(ref, tuple) else ref), (outc[0] if isinstance(outc, tuple) else outc)
            # the compiled module against the eager one, same weights and input
            r["compiled_vs_eager"] = float((a.float() - b.float()).abs().max() / a.float().abs().max().clamp_min(1e-30))
            r["mode"] = mode
            graphs["compiled_ms"] = gc
        runs = {k: [] for k in graphs}
        cov = []
        for _ in range(reps):
            if art_path:
                cov.append(run_covenant_ms(runtime, art_path, warmup, iters))
            for k, gg in graphs.items():
                runs[k].append(replay_ms(torch, gg, warmup, iters))
    for k, v in runs.items():
        r[k] = median(v)
        r[k.replace("_ms", "_runs_ms")] = v
    if cov:
        r["covenant_ms"] = median(cov)
        r["covenant_runs_ms"] = cov
    return r


def run_covenant_ms(runtime, art_path, warmup, iters):
    out = run_covenant(runtime, [art_path, "--iters", str(iters), "--warmup", str(warmup)], 600)
    return float(re.search(r"time: ([0-9.]+) ms per run", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", help="a folder from compile_models.sh (models.txt + *.cvx)")
    ap.add_argument("--runtime", default=os.path.join(ROOT, "build-rt", "covenant-run"))
    ap.add_argument("--cases", type=int, default=100, help="random inputs per batch-1 model (default 100)")
    ap.add_argument("--b32-cases", type=int, default=100, help="random inputs per batch-32 model (default 100)")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3, help="alternating timings of each side; medians (default 3)")
    ap.add_argument("--compile", nargs="*", default=["resnet50", "mobilenet_v2", "encoder"],
                    help="models also timed as torch.compile(module) in a CUDA graph (default resnet50 "
                         "mobilenet_v2 encoder)")
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile mode (default: inductor's default; e.g. max-autotune-no-cudagraphs)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per covenant-run call")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--only", nargs="*", help="model names to run (default: all in models.txt)")
    ap.add_argument("--refs", help="the part as carried, holding ref/NAME.bBATCH.npz (ref_cases.py) for int8 models")
    opt = ap.parse_args()
    rows = [l.split() for l in open(os.path.join(opt.part, "models.txt")) if l.strip()]
    cache = os.path.join(tempfile.gettempdir(), "covenant_models_onnx")
    results = []
    log("covenant artifacts on the GPU: %d artifact(s) from %s; %d/%d random inputs (batch 1/32) vs onnxruntime, "
        "tolerance %g; latency = median of %d alternating timings, each the mean of %d CUDA-graph replays after %d; "
        "torch.compile (mode %s) for %s" %
        (len(rows), opt.part, opt.cases, opt.b32_cases, opt.tol, opt.reps, opt.iters, opt.warmup, opt.compile_mode,
         " ".join(opt.compile or []) or "none"))
    for name, batch, art in rows:
        if opt.only and name not in opt.only:
            continue
        t0 = time.time()
        try:
            r = one(opt, name, int(batch), os.path.join(opt.part, art), cache)
        except Exception as e:
            r = {"model": name, "batch": int(batch), "error": "%s: %s" % (type(e).__name__, str(e)[:600])}
            traceback.print_exc(limit=2)
        r["seconds"] = round(time.time() - t0, 1)
        r["artifact"] = art  # one model may be listed twice (e.g. --dtype f32 beside the default)
        results.append(r)
        if opt.json:  # after every model: a run stopped at its time limit keeps the rows it has
            with open(opt.json, "w") as f:
                json.dump(results, f, indent=1)
        if "error" in r:
            log("%-20s b%-3d %s ERROR %s" % (name, int(batch), art, r["error"]))
        else:
            tm = ("torch graph %.4f ms (%s; vs onnxruntime %.1e)" % (r["torch_ms"], r["torch"], r["torch_rel_err"])
                  if "torch_ms" in r else "torch: " + r.get("torch_error", "?"))
            if "compile" in r:
                c = r["compile"]
                tm += "; module eager %.4f, torch.compile %.4f ms (covenant %.4f in that call; compiled in %.0f s, " \
                      "vs eager %.1e)" % (c["module_ms"], c["compiled_ms"], c["covenant_ms"], c["compile_s"],
                                          c["compiled_vs_eager"])
            elif "compile_error" in r:
                tm += "; torch.compile: " + r["compile_error"]
            log("%-20s b%-3d %s %s  %d cases, max rel err %.2e  covenant %.4f ms  %s  [%.0f s]" %
                (name, int(batch), art, "PASS" if r["passed"] else "FAIL", r["cases"], r["max_rel_err"],
                 r["covenant_ms"] if r["covenant_ms"] is not None else float("nan"), tm, r["seconds"]))
    log("")
    log("| model | batch | inputs | max rel err vs onnxruntime | result | covenant ms | torch eager (CUDA graph) ms | "
        "torch / covenant (>1: covenant faster) | torch.compile (CUDA graph) ms | compile / covenant |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            log("| %s | %d | - | - | ERROR: %s | - | - | - | - | - |" % (r["model"], r["batch"], r["error"][:120].replace("|", "/")))
            continue
        tms = r.get("eager_ms")
        log("| %s | %d | %d | %.2e | %s | %.4f | %s | %s | %s | %s |" %
            (r["model"], r["batch"], r["cases"], r["max_rel_err"], "PASS" if r["passed"] else "FAIL",
             r["covenant_ms"] or float("nan"), "%.4f" % tms if tms else "n/a (%s)" % r.get("torch_error", "")[:60],
             "%.2fx" % (tms / r["covenant_ms"]) if tms and r["covenant_ms"] else "-",
             "%.4f" % r["compile"]["compiled_ms"] if "compile" in r else "-",
             "%.2fx" % (r["compile"]["compiled_ms"] / r["compile"]["covenant_ms"]) if "compile" in r else "-"))
    if opt.json:
        with open(opt.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = sum(1 for r in results if "error" in r or not r.get("passed"))
    log("%d of %d artifact(s) passed" % (len(results) - bad, len(results)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
