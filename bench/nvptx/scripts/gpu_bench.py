#!/usr/bin/env python3
"""bench/nvptx/scripts/gpu_bench.py: covenant's NVPTX kernels on an NVIDIA GPU, in one run:
(a) correctness of every compiled layer against torch on N random inputs each,
    and of the example ConvNet (layer1 -> layer2, weights from the ONNX file);
(b) throughput of covenant's kernels against torch (cuBLAS / cuDNN) on the same
    shapes, as covenant/vendor ratios, and the fused conv+relu+maxpool kernel
    against torch's unfused conv -> relu -> max_pool2d.

The PTX and manifest.json come from `covenant gpu compile ... --target nvptx-sm90`
on a machine with LLVM; covrun.so (bench/nvptx/scripts/covrun.c, covenant's dlopen'ed
driver layer) launches them on torch's buffers (both use the primary context).

usage: gpu_bench.py --payload DIR --lib covrun.so --out DIR [--trials N] [--onnx convnet.onnx]
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

# the reference is fp32 on fp16-exact inputs: no TF32, no reduced-precision reductions
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
torch.backends.cudnn.benchmark = True
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


class Cov:
    def __init__(self, lib, payload):
        self.lib = ctypes.CDLL(lib)
        self.lib.covrun_load.restype = ctypes.c_void_p
        self.lib.covrun_load.argtypes = [ctypes.c_char_p]
        self.lib.covrun_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint),
                                           ctypes.POINTER(ctypes.c_uint), ctypes.c_uint,
                                           ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_float)]
        U3, U4 = ctypes.c_uint * 3, ctypes.c_ulonglong * 4
        self.lib.covrun_launch2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint),
                                            ctypes.POINTER(ctypes.c_uint), ctypes.c_uint,
                                            ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_char_p,
                                            ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                                            ctypes.c_uint, ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_float)]
        self.lib.covrun_tensor_map_2d.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_ulonglong,
                                                  ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint]
        self.lib.covrun_graph_time.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                               ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                                               ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_ulonglong),
                                               ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        self.ws = {}
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # the primary context exists before covrun uses it
        if self.lib.covrun_open() != 0:
            sys.exit("covrun: no usable NVIDIA GPU")
        self.payload = payload
        self.mods = {}

    def module(self, k):
        if k["file"] not in self.mods:
            m = self.lib.covrun_load(os.path.join(self.payload, k["file"]).encode())
            if not m:
                raise RuntimeError("cannot load " + k["file"])
            self.mods[k["file"]] = m
        return self.mods[k["file"]]

    def graph_time(self, k, launches, iters):
        """Mean time of one pass of `launches` [(kernel entry, 4 pointers)],
        `iters` passes captured in one CUDA graph and replayed (covrun.c), as
        torch is timed."""
        n = len(launches)
        names = (ctypes.c_char_p * n)(*[e["kernel"].encode() for e, _ in launches])
        grids = (ctypes.c_uint * (3 * n))(*[x for e, _ in launches for x in e["grid"]])
        blocks = (ctypes.c_uint * (3 * n))(*[x for e, _ in launches for x in e["block"]])
        smem = (ctypes.c_uint * n)(*[e["shared_bytes"] for e, _ in launches])
        ptrs = (ctypes.c_ulonglong * (4 * n))(*[x for _, p in launches for x in p])
        ms = ctypes.c_float(0)
        torch.cuda.synchronize()
        if self.lib.covrun_graph_time(self.module(k), n, names, grids, blocks, smem, ptrs, iters, ctypes.byref(ms)) != 0:
            raise RuntimeError("graph timing of %s failed" % k["kernel"])
        return ms.value

    def run(self, k, a, b, out, bias, iters=0, graph=False):
        """A layer as covenant runs it: channels-last convolutions first
        transform the input (NCHW -> NHWC, covenant's kernel, into a
        workspace; timed with the convolution); `b` is then the weights as
        [R][S][C][K] (weights(k, w)). Kernels of channels-last tensors
        (`NAME@cl`, manifest "out_layout": "nhwc") have no transform: `a` is
        then NHWC in memory (nhwc_input(k, a)), `out` NHWC f16."""
        if k.get("layout") != "nhwc" or "pre" not in k:
            return self.launch(k, [a, b, out, bias], iters, graph)
        pre = k["pre"]
        nbytes = pre["workspace_bytes"]
        if nbytes not in self.ws:
            self.ws[nbytes] = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda")
        ws = self.ws[nbytes]
        p0 = (ctypes.c_ulonglong * 4)(a.data_ptr(), 0, ws.data_ptr(), 0)
        p1 = (ctypes.c_ulonglong * 4)(ws.data_ptr(), b.data_ptr(), out.data_ptr(), bias.data_ptr() if bias is not None else 0)
        if graph:
            return self.graph_time(k, [(pre, list(p0)), (k, list(p1))], iters)
        U3 = ctypes.c_uint * 3
        ms = ctypes.c_float(0)
        torch.cuda.synchronize()
        rc = self.lib.covrun_launch2(self.module(k), pre["kernel"].encode(), U3(*pre["grid"]), U3(*pre["block"]),
                                     pre["shared_bytes"], p0, k["kernel"].encode(), U3(*k["grid"]), U3(*k["block"]),
                                     k["shared_bytes"], p1, iters, ctypes.byref(ms))
        if rc != 0:
            raise RuntimeError("launch of %s failed" % k["kernel"])
        return ms.value

    def time_pre(self, k, a, iters):
        """The channels-last transform alone."""
        pre = dict(k["pre"], file=k["file"])
        ws = self.ws[pre["workspace_bytes"]]
        return self.launch(pre, [a, None, ws, None], iters, graph=True)

    def time_conv(self, k, b, out, bias, iters):
        """The channels-last convolution alone, on the input its transform
        left in the workspace: what runs when the input is already NHWC,
        as cuDNN's channels-last calls take it."""
        ws = self.ws[k["pre"]["workspace_bytes"]]
        p1 = [ws.data_ptr(), b.data_ptr(), out.data_ptr(), bias.data_ptr() if bias is not None else 0]
        return self.graph_time(k, [(k, p1)], iters)

    def tma_maps(self, k, a, b):
        """A plan.tma kernel takes the CUtensorMaps of A and B (built by the
        driver on the host from the manifest's "tma" sizes, copied to the
        device) in place of the operands' addresses."""
        raw = (ctypes.c_ubyte * (256 + 64))()
        off = (-ctypes.addressof(raw)) % 64
        bf = 1 if k["dtype"] == "bf16" else 0
        for i, (x, d) in enumerate(((a, k["tma"]["a"]), (b, k["tma"]["b"]))):
            if self.lib.covrun_tensor_map_2d(ctypes.addressof(raw) + off + 128 * i, x.data_ptr(), bf, *d) != 0:
                raise RuntimeError("tensor map of %s failed" % k["kernel"])
        maps = torch.frombuffer(bytearray(bytes(raw)[off:off + 256]), dtype=torch.uint8).to("cuda")
        torch.cuda.synchronize()
        return maps

    def launch(self, k, bufs, iters=0, graph=False):
        maps = None
        if k.get("tma"):
            maps = self.tma_maps(k, bufs[0], bufs[1])
            ptrs = (ctypes.c_ulonglong * 4)(maps.data_ptr(), maps.data_ptr() + 128,
                                            *[b.data_ptr() if b is not None else 0 for b in bufs[2:]])
        else:
            ptrs = (ctypes.c_ulonglong * 4)(*[b.data_ptr() if b is not None else 0 for b in bufs])
        if graph:
            return self.graph_time(k, [(k, list(ptrs))], iters)
        return self.launch_ptrs(k, ptrs, iters)

    def launch_ptrs(self, k, ptrs, iters):
        if k["file"] not in self.mods:
            m = self.lib.covrun_load(os.path.join(self.payload, k["file"]).encode())
            if not m:
                raise RuntimeError("cannot load " + k["file"])
            self.mods[k["file"]] = m
        grid = (ctypes.c_uint * 3)(*k["grid"])
        block = (ctypes.c_uint * 3)(*k["block"])
        ms = ctypes.c_float(0)
        torch.cuda.synchronize()
        rc = self.lib.covrun_launch(self.mods[k["file"]], k["kernel"].encode(), grid, block, k["shared_bytes"],
                                    ptrs, iters, ctypes.byref(ms))
        if rc != 0:
            raise RuntimeError("launch of %s failed" % k["kernel"])
        return ms.value

    def info(self, k):
        regs, local = ctypes.c_int(0), ctypes.c_int(0)
        if self.lib.covrun_info(ctypes.c_void_p(self.mods[k["file"]]), k["kernel"].encode(), ctypes.byref(regs),
                                ctypes.byref(local)) != 0:
            return None, None
        return regs.value, local.value


def weights(k, w):
    """Channels-last convolutions take the weights as [R][S][C][K]: reordered
    once, as constants are at load time (not timed)."""
    return w.permute(2, 3, 1, 0).contiguous() if k.get("layout") == "nhwc" else w


def channels_last_io(k):
    """`NAME@cl` kernels: NHWC input as given, NHWC f16 output (cuDNN's
    channels-last convention)."""
    return k.get("out_layout") == "nhwc"


def nhwc_input(k, a):
    """The input as the kernel reads it: NHWC memory for channels-last
    tensors (a channels_last torch tensor's storage), else as is."""
    return a.contiguous(memory_format=torch.channels_last) if channels_last_io(k) else a


def as_nchw(k, out):
    """The output viewed NCHW for the reference."""
    return out.permute(0, 3, 1, 2) if channels_last_io(k) else out


def shapes(k):
    if k["kind"] == "maxpool":
        return [k["N"], k["C"], k["H"], k["W"]], None, [k["N"], k["C"], k["OH"], k["OW"]], None
    if k["kind"] == "matmul":
        return [k["batch"], k["M"], k["K"]], [k["batch"], k["K"], k["N"]], [k["batch"], k["M"], k["N"]], k["N"]
    oh, ow = (k["OH"] // 2, k["OW"] // 2) if k["maxpool2x2"] else (k["OH"], k["OW"])
    return ([k["N"], k["C"], k["H"], k["W"]], [k["K"], k["C"] // k["groups"], k["R"], k["S"]],
            [k["N"], oh, ow, k["K"]] if channels_last_io(k) else [k["N"], k["K"], oh, ow], k["K"])


def epilogue(k, y, bias):
    if k["bias"]:
        y = y + (bias.view(1, -1, 1, 1) if k["kind"] == "conv2d" else bias)
    if k["act"] == "relu":
        y = F.relu(y)
    elif k["act"] == "clip":
        y = y.clamp(k["clip_lo"], k["clip_hi"])
    elif k["act"] == "gelu":
        y = F.gelu(y)
    if k["maxpool2x2"]:
        y = F.max_pool2d(y, 2)
    if k.get("softmax"):
        y = torch.softmax(y, -1)
    return y


def reference(k, a, b, bias):
    if k["kind"] == "maxpool":
        return F.max_pool2d(a.float(), (k["R"], k["S"]), k["stride"], k["pad"])
    if k["kind"] == "matmul":
        y = torch.matmul(a.float(), b.float())
    else:
        y = F.conv2d(a.float(), b.float(), None, k["stride"], k["pad"], k["dilation"], k["groups"])
    return epilogue(k, y, bias)


def out_dtype(k):
    """f32, or f16 for kernels compiled with f16 outputs (the :ws...h
    schedules, NAME@cl convs; the vendor's output type): rounded once from f32, so within
    2^-11 of the value, below the 1e-3 relative bound."""
    return torch.float16 if k.get("out_dtype") == "f16" else torch.float32


def check(cov, k, trials, gen):
    sa, sb, so, nb = shapes(k)
    dt = DT[k["dtype"]]
    worst = 0.0
    for _ in range(trials):
        a = (torch.rand(sa, device="cuda", generator=gen) * 2 - 1).to(dt)
        b = (torch.rand(sb, device="cuda", generator=gen) * 2 - 1).to(dt) if sb else None
        bias = torch.rand(nb, device="cuda", generator=gen) * 2 - 1 if nb else None
        # NaN-filled: every output element must be written (the atomic
        # pooled epilogue of NCHW-gather convs needs zeros)
        out = torch.zeros(so, device="cuda") if k.get("maxpool2x2") and k.get("layout") != "nhwc" else \
            torch.full(so, float("nan"), device="cuda", dtype=out_dtype(k))
        cov.run(k, nhwc_input(k, a), weights(k, b) if b is not None else None, out, bias)
        ref = reference(k, a, b, bias)
        err = ((as_nchw(k, out).float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
        worst = max(worst, err) if not math.isnan(err) else float("nan")
        if math.isnan(worst):
            break
    return worst


def time_torch(fn, iters):
    """Mean time of one call of fn, replayed from a CUDA graph: `iters` calls
    captured once (after warm-up on a side stream, so cuDNN's algorithm
    search and the allocator stay outside the capture), the graph replayed
    once between two events. A Python loop of torch calls would time Python
    dispatch (several us per call), not the vendor's kernels."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    g.replay()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    g.replay()
    e.record()
    e.synchronize()
    del g
    return s.elapsed_time(e) / iters


def bench(cov, k, iters, reps):
    sa, sb, so, nb = shapes(k)
    dt = DT[k["dtype"]]
    a = (torch.rand(sa, device="cuda") * 2 - 1).to(dt)
    b = (torch.rand(sb, device="cuda") * 2 - 1).to(dt) if sb else None
    bias = torch.rand(nb, device="cuda") * 2 - 1 if nb else None
    bw = weights(k, b) if b is not None else None
    out = torch.zeros(so, device="cuda", dtype=out_dtype(k))
    a_cov = nhwc_input(k, a)
    fused = None
    if k["kind"] == "maxpool":
        macs = k["N"] * k["C"] * k["OH"] * k["OW"] * k["R"] * k["S"]  # compares, for the record
        vendor = lambda: F.max_pool2d(a, (k["R"], k["S"]), k["stride"], k["pad"])
    elif k["kind"] == "matmul":
        macs = k["batch"] * k["M"] * k["N"] * k["K"]
        if k.get("softmax"):  # torch's sequence: cuBLAS matmul, then softmax (fp16)
            vendor = lambda: torch.softmax(torch.matmul(a, b), -1)
        else:
            vendor = lambda: torch.matmul(a, b)  # cuBLAS, fp16 in, fp32 accumulate
    else:
        macs = k["N"] * k["K"] * k["OH"] * k["OW"] * (k["C"] // k["groups"]) * k["R"] * k["S"]
        b16 = bias.to(dt)
        vendor = lambda: F.conv2d(a, b, b16, k["stride"], k["pad"], k["dilation"], k["groups"])  # cuDNN
        def fused():  # torch's unfused sequence of what covenant's kernel fuses
            y = F.conv2d(a, b, b16 if k["bias"] else None, k["stride"], k["pad"], k["dilation"], k["groups"])
            if k["act"] == "relu":
                y = F.relu(y)
            elif k["act"] == "clip":
                y = y.clamp(k["clip_lo"], k["clip_hi"])
            if k["maxpool2x2"]:
                y = F.max_pool2d(y, 2)
            return y
    # covenant and vendor alternate, `reps` times each; medians (a run's
    # clock and the libraries' algorithm choices vary from one to the next)
    # cuDNN on channels-last tensors too (its native layout; torch's
    # conversion not timed): the stricter comparison for channels-last
    # kernels, whose time includes their NCHW -> NHWC transform
    vendor_cl = None
    if k["kind"] == "conv2d" and k.get("layout") == "nhwc":
        a_cl, b_cl = a.to(memory_format=torch.channels_last), b.to(memory_format=torch.channels_last)
        b16 = bias.to(dt)
        vendor_cl = lambda: F.conv2d(a_cl, b_cl, b16, k["stride"], k["pad"], k["dilation"], k["groups"])
    # covenant's figure: its launches replayed from a CUDA graph like the
    # vendor's; covenant_launch_ms: the same launches issued back to back
    # from C (the figure until 24 Nov 2026)
    cs, vs, fs, cls, ls, ks = [], [], [], [], [], []
    for _ in range(reps):
        if vendor_cl is not None:
            cls.append(time_torch(vendor_cl, iters))
        cs.append(cov.run(k, a_cov, bw, out, bias, iters, graph=True))
        if vendor_cl is not None and not channels_last_io(k):
            ks.append(cov.time_conv(k, bw, out, bias, iters))
        ls.append(cov.run(k, a_cov, bw, out, bias, iters))
        vs.append(time_torch(vendor, iters))
        if fused is not None and (k["act"] != "none" or k["maxpool2x2"]):
            fs.append(time_torch(fused, iters))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    cov_ms, v_ms = med(cs), med(vs)
    r = {"name": k["name"], "macs": macs, "covenant_ms": cov_ms, "vendor_ms": v_ms,
         "covenant_tflops": 2 * macs / cov_ms / 1e9, "vendor_tflops": 2 * macs / v_ms / 1e9,
         "ratio": v_ms / cov_ms, "covenant_launch_ms": med(ls), "ratio_launched": v_ms / med(ls)}
    if cls:
        r["vendor_nhwc_ms"] = med(cls)
        r["ratio_vs_nhwc_vendor"] = med(cls) / cov_ms
        r["conv_ms"] = med(ks) if ks else cov_ms  # NHWC in, without the transform
        r["ratio_conv_vs_nhwc_vendor"] = med(cls) / r["conv_ms"]
    if channels_last_io(k):
        # like with like: both read NHWC f16 and write NHWC f16 (+ bias)
        r["io"] = "channels-last f16 in and out"
        r["ratio_channels_last"] = med(cls) / cov_ms
    elif k.get("layout") == "nhwc":  # the transform's share of covenant's time
        r["layout"] = "nhwc"
        r["transform_ms"] = cov.time_pre(k, a, iters)
    if fs:
        f_ms = med(fs)
        r["torch_sequence_ms"] = f_ms
        r["ratio_vs_sequence"] = f_ms / cov_ms
    return r


def convnet(cov, kernels, onnx_path, trials, gen):
    """The example ConvNet: covenant's layer1 (conv+bias+relu+maxpool) then layer2
    (conv+bias+relu) with the ONNX weights, against torch on the same fp16-rounded
    input, weights and intermediate (the kernels' precision contract)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(onnx_path)
    w = {t.name: torch.tensor(numpy_helper.to_array(t)).cuda() for t in m.graph.initializer}
    k1, k2 = kernels["convnet_layer1"], kernels["convnet_layer2"]
    w1, b1 = w["conv1.weight"].half(), w["conv1.bias"].float()
    w2, b2 = w["conv2.weight"].half(), w["conv2.bias"].float()
    worst = 0.0
    for _ in range(trials):
        x = (torch.rand([1, 3, 32, 32], device="cuda", generator=gen) * 2 - 1).half()
        h = torch.zeros([1, 10, 15, 15], device="cuda")
        cov.run(k1, x, weights(k1, w1), h, b1)
        y = torch.zeros([1, 10, 11, 11], device="cuda")
        h16 = h.half()
        cov.run(k2, h16, weights(k2, w2), y, b2)
        rh = F.max_pool2d(F.relu(F.conv2d(x.float(), w1.float(), b1)), 2)
        ry = F.relu(F.conv2d(rh.half().float(), w2.float(), b2))
        worst = max(worst, ((y - ry).abs().max() / ry.abs().max().clamp_min(1e-30)).item())
    return worst


def attn_check(cov, k, args, gen):
    """fused attention (kind "attention"): attn_bench.py's check, 1000 random
    inputs at batch 1, 10 at batch 32 (at least --big-trials)"""
    import attn_bench  # it imports this module: loaded only when needed
    n = max(args.big_trials, 10) if k["B"] > 1 else args.trials
    err, terr = attn_bench.check(cov, k, n, gen)
    regs, local = cov.info(k)
    ok = err <= 2e-3
    print("check %-32s %s  max rel err %.3g (torch SDPA %.3g) over %d inputs  [%s regs, %s B local]" %
          (k["name"], "ok  " if ok else "FAIL", err, terr, n, regs, local), flush=True)
    return {"name": k["name"], "trials": n, "max_rel_err": err, "torch_sdpa_max_rel_err": terr, "ok": ok,
            "registers": regs, "spill_bytes": local}


def attn_time(cov, k, args):
    """fused attention against torch's scaled_dot_product_attention, both
    replayed from CUDA graphs, alternating repetitions (at least 7), medians"""
    import attn_bench
    r = attn_bench.bench(cov, k, max(args.iters, 50), max(args.reps, 7))
    r.update({"vendor": "torch SDPA", "vendor_ms": r["torch_sdpa_ms"], "vendor_tflops": r["torch_tflops"]})
    print("bench %-30s covenant %8.4f ms %7.1f TFLOP/s | torch SDPA %8.4f ms %7.1f TFLOP/s | covenant/vendor %5.1f%%" %
          (r["name"], r["covenant_ms"], r["covenant_tflops"], r["vendor_ms"], r["vendor_tflops"], 100 * r["ratio"]),
          flush=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--payload", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--big-trials", type=int, default=3, help="trials for layers of over 1e9 MACs")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5, help="alternating timing repetitions; medians are reported")
    ap.add_argument("--onnx")
    ap.add_argument("--only", help="comma-separated kernel names")
    args = ap.parse_args()
    man = json.load(open(os.path.join(args.payload, "manifest.json")))
    cov = Cov(args.lib, args.payload)
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    kernels = {k["name"]: k for k in man["kernels"]}
    only = set(args.only.split(",")) if args.only else None
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    results = {"check": [], "bench": []}
    t0 = time.time()
    for k in man["kernels"]:
        if only and k["name"] not in only:
            continue
        if k["kind"] == "attention":  # fused attention: attn_bench.py's check against torch
            results["check"].append(attn_check(cov, k, args, gen))
            continue
        macs = shapes(k)
        big = (k.get("M", 1) * k.get("N", 1) * k.get("K", 1) > 1e9) if k["kind"] == "matmul" else k["N"] > 1
        n = args.big_trials if big else args.trials
        try:
            err = check(cov, k, n, gen)
        except RuntimeError as e:  # a kernel the driver refuses: reported, the run goes on
            print("check %-32s FAIL  %s" % (k["name"], e), flush=True)
            results["check"].append({"name": k["name"], "trials": n, "ok": False, "error": str(e)})
            continue
        ok = err <= 1e-3
        regs, local = cov.info(k)
        results["check"].append({"name": k["name"], "trials": n, "max_rel_err": err, "ok": ok,
                                 "unfused_not_checked": k["unfused"], "registers": regs, "spill_bytes": local})
        print("check %-32s %s  max rel err %.3g over %d inputs  [%s regs, %s B local]%s" %
              (k["name"], "ok  " if ok else "FAIL", err, n, regs, local,
               ("  (contraction+fused epilogue; '%s' not part of the kernel)" % k["unfused"]) if k["unfused"] else ""),
              flush=True)
    if args.onnx and "convnet_layer1" in kernels and "convnet_layer2" in kernels:
        err = convnet(cov, kernels, args.onnx, args.trials, gen)
        results["convnet"] = {"trials": args.trials, "max_rel_err": err, "ok": err <= 2e-3}
        print("check %-32s %s  max rel err %.3g over %d inputs" % ("examples/convnet.onnx", "ok  " if err <= 2e-3 else "FAIL",
                                                                  err, args.trials), flush=True)
    print("checks took %.1f s" % (time.time() - t0), flush=True)
    for k in man["kernels"]:
        if only and k["name"] not in only:
            continue
        if k["kind"] == "matmul" and not k["name"].startswith("gemm_") and not k.get("softmax"):
            continue
        if k["kind"] == "conv2d" and k["N"] == 1:
            continue
        if any(c["name"] == k["name"] and not c["ok"] for c in results["check"]):
            continue  # only kernels that computed the right result are timed
        if k["kind"] == "attention":
            results["bench"].append(attn_time(cov, k, args))
            continue
        r = bench(cov, k, args.iters, args.reps)
        results["bench"].append(r)
        line = "bench %-30s covenant %8.3f ms %7.1f TFLOP/s | vendor %8.3f ms %7.1f TFLOP/s | covenant/vendor %5.1f%%" % (
            r["name"], r["covenant_ms"], r["covenant_tflops"], r["vendor_ms"], r["vendor_tflops"], 100 * r["ratio"])
        line += " | launched, not replayed: %.3f ms %5.1f%%" % (r["covenant_launch_ms"], 100 * r["ratio_launched"])
        if "ratio_channels_last" in r:
            line += " | channels-last f16 in/out like cuDNN's: cuDNN %.3f ms, covenant/cuDNN %5.1f%%" % (
                r["vendor_nhwc_ms"], 100 * r["ratio_channels_last"])
        elif "vendor_nhwc_ms" in r:
            line += " | cuDNN channels-last %.3f ms: %5.1f%%, NHWC conv alone %.3f ms: %5.1f%%" % (
                r["vendor_nhwc_ms"], 100 * r["ratio_vs_nhwc_vendor"], r["conv_ms"], 100 * r["ratio_conv_vs_nhwc_vendor"])
        if "transform_ms" in r:
            line += " | incl. NHWC transform %.3f ms" % r["transform_ms"]
        if "ratio_vs_sequence" in r:
            line += " | vs torch sequence %.3f ms: %5.1f%%" % (r["torch_sequence_ms"], 100 * r["ratio_vs_sequence"])
        print(line, flush=True)
    # GEMMs: the planner's kernel (gemm_MxNxK; gemm_MxNxK_f16: the same
    # layer with f16 outputs, compiled as gemm_MxNxK:f16) and hand-fixed
    # schedules (gemm_MxNxK_t<schedule>), a geomean for each schedule kind
    # present on every shape, and for the best kernel per shape
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    by_shape = {}
    for r in results["bench"]:
        if r["name"].startswith("gemm_"):
            shape, _, sched = r["name"].partition("_t")
            # the schedule's kind: planner, wg..., ws (bulk tensor copies) with
            # its flags; f16-output kernels (h, _f16) are their own kind
            kind = "planner" if not sched else sched[sched.index("w", sched.index("s")):] if "ws" in sched else "wg"
            kind = "ws f16 out" if kind.startswith("ws") and kind.endswith("h") else "ws" if kind.startswith("ws") else kind
            if shape.endswith("_f16"):
                shape, kind = shape[:-4], "planner f16 out"
            by_shape.setdefault(shape, {}).setdefault(kind, []).append(r["ratio"])
    if by_shape:
        kinds = set.intersection(*[set(v) for v in by_shape.values()])
        results["gemm_geomean_by_kind"] = {kd: geo([max(v[kd]) for v in by_shape.values()]) for kd in sorted(kinds)}
        results["gemm_geomean_best"] = geo([max(max(x) for x in v.values()) for v in by_shape.values()])
        # the headline: the compiler's own picks writing f16, as cuBLAS does
        # (like with like), else f32 outputs
        by_kind = results["gemm_geomean_by_kind"]
        results["gemm_geomean_ratio"] = by_kind.get("planner f16 out", by_kind.get("planner", results["gemm_geomean_best"]))
        for kd, x in results["gemm_geomean_by_kind"].items():
            print("GEMM geomean covenant/cuBLAS over %d shapes, %s kernels (best of each kind per shape): %.2fx" %
                  (len(by_shape), kd, x))
        print("GEMM geomean covenant/cuBLAS over %d shapes, best kernel per shape: %.2fx" %
              (len(by_shape), results["gemm_geomean_best"]))
    os.makedirs(args.out, exist_ok=True)
    json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)
    bad = [c["name"] for c in results["check"] if not c["ok"]]
    if "convnet" in results and not results["convnet"]["ok"]:
        bad.append("convnet")
    print("FAILED: " + ", ".join(bad) if bad else "all checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
