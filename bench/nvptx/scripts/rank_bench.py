#!/usr/bin/env python3
"""bench/nvptx/scripts/rank_bench.py: how well the mapper's GPU cost ranks measured
H100 times. For every line of candidates.txt (rank_prepare.sh: shape, hand-fixed
spec, kernel, the mapper's rank (-1: the former planner's pick) and predicted
cycles) it checks the kernel once against torch (fp32 on the same fp16
inputs) and times it: the median over --reps of the mean of --iters launches
between CUDA events (covrun.c, as gpu_bench.py times covenant's kernels).
Then, per shape and pooled over every candidate the mapper ranked, the
Spearman rank correlation between predicted cycles and measured time, and
per shape the mapper's pick (rank 0) against the former planner's.

usage: rank_bench.py --payload PTXDIR --cands candidates.txt --lib covrun.so --out DIR
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench as gb  # noqa: E402  (Cov, shapes, weights, reference)
from spearman import spearman  # noqa: E402


def measure(cov, k, iters, reps):
    sa, sb, so, nb = gb.shapes(k)
    dt = gb.DT[k["dtype"]]
    a = (torch.rand(sa, device="cuda") * 2 - 1).to(dt)
    b = (torch.rand(sb, device="cuda") * 2 - 1).to(dt) if sb else None
    bias = torch.rand(nb, device="cuda") * 2 - 1 if nb else None
    out = torch.zeros(so, device="cuda") if k.get("maxpool2x2") and k.get("layout") != "nhwc" else \
        torch.full(so, float("nan"), device="cuda")
    bw = gb.weights(k, b) if b is not None else None
    cov.run(k, a, bw, out, bias)
    ref = gb.reference(k, a, b, bias)
    err = ((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
    ts = sorted(cov.run(k, a, bw, out, bias, iters) for _ in range(reps))
    return err, ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--payload", required=True)
    ap.add_argument("--cands", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    cov = gb.Cov(a.lib, a.payload)
    kernels = {k["kernel"]: k for k in json.load(open(os.path.join(a.payload, "manifest.json")))["kernels"]}
    rows = []
    for line in open(a.cands):
        f = line.split()
        if len(f) != 5:
            continue
        shape, spec, kernel, rank, cycles = f[0], f[1], f[2], int(f[3]), None if f[4] == "-" else float(f[4])
        k = kernels.get(kernel)
        if k is None:
            print("missing kernel", kernel, file=sys.stderr)
            continue
        err, ms = measure(cov, k, a.iters, a.reps)
        rows.append({"shape": shape, "spec": spec, "rank": rank, "cycles": cycles, "ms": ms, "err": err})
        print("%-26s %-52s rank %2d  %10s cycles  %.4f ms  err %.1e" %
              (shape, spec.split(":", 1)[1], rank, "-" if cycles is None else "%.0f" % cycles, ms, err), flush=True)
    shapes = []
    for s in dict.fromkeys(r["shape"] for r in rows):
        rs = [r for r in rows if r["shape"] == s and r["rank"] >= 0]
        best = min((r for r in rows if r["shape"] == s), key=lambda r: r["ms"])
        pick = next((r for r in rs if r["rank"] == 0), None)
        old = next((r for r in rows if r["shape"] == s and r["rank"] == -1), None)
        shapes.append({"shape": s, "n": len(rs), "spearman": spearman([r["cycles"] for r in rs], [r["ms"] for r in rs]),
                       "mapper_ms": pick["ms"] if pick else None, "old_ms": old["ms"] if old else None,
                       "old_spec": old["spec"] if old else None, "best_ms": best["ms"], "best_spec": best["spec"]})
    ranked = [r for r in rows if r["rank"] >= 0]
    pooled = spearman([r["cycles"] for r in ranked], [r["ms"] for r in ranked])
    per = [s["spearman"] for s in shapes if s["spearman"] is not None]
    print("\n%-26s %3s %9s %10s %10s %10s" % ("shape", "n", "spearman", "mapper ms", "former ms", "best ms"))
    for s in shapes:
        print("%-26s %3d %9s %10.4f %10s %10.4f  %s" % (
            s["shape"], s["n"], "-" if s["spearman"] is None else "%.2f" % s["spearman"], s["mapper_ms"] or 0,
            "-" if s["old_ms"] is None else "%.4f" % s["old_ms"], s["best_ms"], s["best_spec"].split(":", 1)[1]))
    print("pooled spearman over %d candidates: %s; mean per shape %.2f over %d shapes" % (
        len(ranked), "-" if pooled is None else "%.3f" % pooled, sum(per) / max(1, len(per)), len(per)))
    worst = max(r["err"] for r in rows) if rows else 0
    print("worst max rel err of any candidate: %.1e" % worst)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows, "shapes": shapes,
               "pooled_spearman": pooled}, open(os.path.join(a.out, "rank.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
