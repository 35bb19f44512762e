#!/usr/bin/env python3
"""bench/nvptx/kernel_summary.py GPU_RESULTS [ATTN_RESULTS]: the kernel summary table
from one device run: the GEMMs (the compiler's picks with f32 and with f16
outputs, their geomeans), QK^T + softmax, fused attention against torch
SDPA, the convolutions against cuDNN (NCHW, channels-last with covenant's
transform, the conv alone on NHWC input), depthwise, and the fused
conv + relu + pool kernels against torch's sequence. GPU_RESULTS is
gpu_bench.py's results.json, ATTN_RESULTS attn_bench.py's; ratios are
vendor time / covenant time (> 1: covenant faster), both sides replayed from
CUDA graphs, medians of alternating repetitions (the benches' own figures;
this script only arranges them). Prints a markdown table."""
import json
import math
import sys

GEMMS = ["gemm_1024x1024x1024", "gemm_4096x4096x4096", "gemm_8192x8192x8192", "gemm_512x2304x768",
         "gemm_4096x3072x768"]


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fmt(x):
    return "-" if x is None else "%.2fx" % x


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: kernel_summary.py GPU_RESULTS [ATTN_RESULTS]")
    res = json.load(open(sys.argv[1]))
    bench = {b["name"]: b for b in res["bench"]}
    bad = [c["name"] for c in res["check"] if not c["ok"]]
    rows = []
    f32, f16 = [], []
    for g in GEMMS:
        a, h = bench.get(g), bench.get(g + "_f16")
        if a:
            f32.append(a["ratio"])
        if h:
            f16.append(h["ratio"])
        rows.append(("GEMM %s, the compiler's pick: f16 out / f32 out" % g[5:], "%s / %s" % (
            fmt(h and h["ratio"]), fmt(a and a["ratio"]))))
    if len(f16) == len(GEMMS) or len(f32) == len(GEMMS):
        rows.append(("**GEMM geomean, the compiler's picks**: f16 out (as cuBLAS) / f32 out",
                     "**%s** / %s" % (fmt(geo(f16) if len(f16) == len(GEMMS) else None),
                                      fmt(geo(f32) if len(f32) == len(GEMMS) else None))))
    for n in ("bert_base_attn_qk", "bert_base_attn_qk_b32"):
        if n in bench:
            rows.append(("QK^T + softmax (%s) vs matmul -> softmax" % n, fmt(bench[n]["ratio"])))
    # fused attention in gpu_bench.py's run (kind "attention": attn_bench.py's
    # check and timing), or in attn_bench.py's own results
    for n, b in bench.items():
        if b.get("vendor") == "torch SDPA":
            rows.append(("fused attention %s vs torch SDPA" % n, fmt(b["ratio"])))
    if len(sys.argv) == 3:
        att = json.load(open(sys.argv[2]))
        bad += [c["name"] for c in att["check"] if not c["ok"]]
        for b in att["bench"]:
            rows.append(("fused attention %s vs torch SDPA" % b["name"], fmt(b["ratio"])))
    fused = lambda n: n.startswith(("fused_", "convnet_layer1"))
    for n, b in bench.items():
        if n.startswith(("gemm_", "bert_base_attn_qk")) or "_b32" not in n or fused(n) or b.get("vendor") == "torch SDPA":
            continue
        if "ratio_channels_last" in b:  # NAME@cl: NHWC f16 in and out, as cuDNN's channels-last call
            rows.append(("%s (channels-last f16 in and out) vs cuDNN channels-last" % n,
                         "**%s**" % fmt(b["ratio_channels_last"])))
        elif "ratio_vs_nhwc_vendor" in b:
            rows.append(("%s vs cuDNN: NCHW / channels-last / conv alone on NHWC vs channels-last" % n,
                         "%s / **%s** / %s" % (fmt(b["ratio"]), fmt(b["ratio_vs_nhwc_vendor"]),
                                               fmt(b["ratio_conv_vs_nhwc_vendor"]))))
        else:
            rows.append(("%s vs the vendor" % n, fmt(b["ratio"])))
    for n, b in bench.items():
        if fused(n) and "ratio_vs_sequence" in b:
            rows.append(("%s vs torch's conv -> relu -> pool" % n, fmt(b["ratio_vs_sequence"])))
    print("| kernel | covenant / vendor |")
    print("|---|---|")
    for k, v in rows:
        print("| %s | %s |" % (k, v))
    print("checks: %d kernels, %s" % (len(res["check"]) + (len(att["check"]) if len(sys.argv) == 3 else 0),
                                      "all passed" if not bad else "FAILED: " + ", ".join(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
