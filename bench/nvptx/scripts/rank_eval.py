#!/usr/bin/env python3
"""bench/nvptx/scripts/rank_eval.py COVENANT [RANK_JSON]: the current GPU cost model
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
sys.path.insert(0, here)
from spearman import spearman  # noqa: E402


def main():
    cov = sys.argv[1]
    data = json.load(open(sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "results", "rank-h100.json")))
    meas = {r["spec"]: r["ms"] for r in data["rows"]}
    base = {}
    for line in open(os.path.join(here, "..", "inputs", "rank_baseline.txt")):
        if not line.startswith("#") and line.strip():
            spec, hand, _ = line.split()
            base[spec] = hand
    shapes = [s["shape"] for s in data["shapes"]]
    model = {}
    for group, extra in (([s for s in shapes if not s.startswith("fused")], []),
                         ([s for s in shapes if s.startswith("fused")],
                          ["--suite", os.path.join(here, "..", "inputs", "fused_layers.json")])):
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
