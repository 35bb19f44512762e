#!/usr/bin/env python3
"""bench/nvptx/rank_eval.py COVENANT [RANK_JSON]: the current GPU cost model
against a ranking run (rank-h100.json by default), here, without a GPU: per
shape, Spearman's rho between the cycles `COVENANT gpu candidates` predicts
and the times measured for the schedules that run timed, pooled rho, and the
model's pick against the former planner's (rank_baseline.txt) where both were
timed ("not timed" where the pick was not among the run's schedules)."""
import json
import math
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            r[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs, ys):
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def main():
    cov = sys.argv[1]
    data = json.load(open(sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "rank-h100.json")))
    meas = {r["spec"]: r["ms"] for r in data["rows"]}
    base = {}
    for line in open(os.path.join(here, "rank_baseline.txt")):
        if not line.startswith("#") and line.strip():
            spec, hand, _ = line.split()
            base[spec] = hand
    shapes = [s["shape"] for s in data["shapes"]]
    model = {}
    for group, extra in (([s for s in shapes if not s.startswith("fused")], []),
                         ([s for s in shapes if s.startswith("fused")],
                          ["--suite", os.path.join(here, "fused_layers.json")])):
        if not group:
            continue
        out = subprocess.run([cov, "gpu", "candidates", *group, "--target", "nvptx-sm90", "--top", "1024", *extra],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            spec, hand, _, _, cycles = line.split()
            model.setdefault(spec, []).append((hand, float(cycles)))
    px, py, per = [], [], []
    print("%-24s %3s %6s  %-38s %10s %10s %10s" % ("shape", "n", "rho", "pick", "pick ms", "former ms", "best ms"))
    for s in shapes:
        c = model.get(s, [])
        m = [(cy, meas[h]) for h, cy in c if h in meas]
        rho = spearman([a for a, _ in m], [b for _, b in m])
        px += [a for a, _ in m]
        py += [b for _, b in m]
        if rho is not None:
            per.append(rho)
        pick = c[0][0] if c else None
        pm, bm = meas.get(pick), meas.get(base.get(s))
        best = min(v for k, v in meas.items() if k.startswith(s + ":"))
        print("%-24s %3d %6s  %-38s %10s %10s %10.4f" % (
            s, len(m), "-" if rho is None else "%.2f" % rho, pick.split(":", 1)[1] if pick else "-",
            "not timed" if pm is None else "%.4f" % pm, "-" if bm is None else "%.4f" % bm, best))
    print("pooled rho %.3f over %d timed schedules; mean per-shape rho %.3f over %d shapes" % (
        spearman(px, py), len(px), sum(per) / len(per), len(per)))


if __name__ == "__main__":
    main()
