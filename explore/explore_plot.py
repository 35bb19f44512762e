#!/usr/bin/env python3
"""explore_plot.py DIR: plots of a covenant exploration study.

Reads DIR/summary.csv and DIR/results.csv (written by `covenant explore`) and
writes into DIR/plots/, each as PNG and SVG:
  cycles_vs_area    total cycles over the layers vs design area, Pareto front marked
  cycles_vs_energy  total cycles vs energy, Pareto front marked
  utilisation       MAC-unit utilisation per layer (rows) and design (columns)
The evaluator that produced the numbers is named in every title. Headless
(Agg backend); deterministic file contents (no dates in the metadata).
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "covenant-explore"
PNG_META = {"Software": None}
SVG_META = {"Date": None}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(s):
    return float(s) if s not in ("", None) else math.nan


def save(fig, out, stem):
    fig.savefig(os.path.join(out, stem + ".png"), dpi=120, metadata=PNG_META)
    fig.savefig(os.path.join(out, stem + ".svg"), metadata=SVG_META)
    plt.close(fig)


def label(row, params):
    return ", ".join(f"{row[p]}" for p in params)


def scatter_front(designs, params, ycol, flagcol, ylabel, title, out, stem):
    pts = [(num(d["total_cycles"]), num(d[ycol]), d) for d in designs]
    pts = [p for p in pts if not math.isnan(p[0]) and not math.isnan(p[1])]
    if not pts:
        return False
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.scatter([p[1] for p in pts], [p[0] for p in pts], s=28, color="#9aa5b1",
               label="design", zorder=2)
    front = sorted((p for p in pts if p[2][flagcol] == "1"), key=lambda p: p[1])
    if front:
        ax.plot([p[1] for p in front], [p[0] for p in front], "-o", color="#d1495b",
                markersize=7, label="Pareto front", zorder=3)
        # Designs that tie (same cycles and area) share one label.
        groups = {}
        for p in front:
            groups.setdefault((p[1], p[0]), []).append(label(p[2], params))
        for (x, y), names in groups.items():
            text = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} tied)"
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=7,
                        color="#7a1f2b")
    ax.set_yscale("log")
    ax.set_xlabel(ylabel)
    ax.set_ylabel("total cycles over the layers (log)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, out, stem)
    return True


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: explore_plot.py STUDY_DIR\n")
        return 2
    d = sys.argv[1]
    summary = read_csv(os.path.join(d, "summary.csv"))
    results = read_csv(os.path.join(d, "results.csv"))
    fixed = {"design", "status", "evaluator", "layers", "total_cycles", "total_time_us",
             "geomean_cycles", "utilisation", "energy_pj", "area_mm2", "pareto_cycles_area",
             "pareto_cycles_energy", "derived", "error"}
    params = [c for c in (list(summary[0].keys()) if summary else []) if c not in fixed]
    ok = [s for s in summary if s["status"] == "ok"]
    if not ok:
        sys.stderr.write(f"{d}/summary.csv: no design ran; nothing to plot\n")
        return 1
    evaluators = sorted({s["evaluator"] for s in ok})
    ev = "/".join(evaluators)
    out = os.path.join(d, "plots")
    os.makedirs(out, exist_ok=True)
    made = []
    if scatter_front(ok, params, "area_mm2", "pareto_cycles_area", "area (mm², from the ACG)",
                     f"cycles vs area, {len(ok)} designs ({ev} evaluator)", out,
                     "cycles_vs_area"):
        made.append("cycles_vs_area")
    if scatter_front(ok, params, "energy_pj", "pareto_cycles_energy",
                     "energy (pJ, from the ACG's per-access figures)",
                     f"cycles vs energy, {len(ok)} designs ({ev} evaluator)", out,
                     "cycles_vs_energy"):
        made.append("cycles_vs_energy")

    # Utilisation heat map: layers x designs.
    layers = []
    for r in results:
        if r["layer"] not in layers:
            layers.append(r["layer"])
    ids = [s["design"] for s in ok]
    util = {(r["design"], r["layer"]): num(r["utilisation"]) for r in results}
    grid = [[util.get((i, l), math.nan) for i in ids] for l in layers]
    fig, ax = plt.subplots(figsize=(max(6, 0.32 * len(ids) + 3), max(4, 0.35 * len(layers) + 2)))
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax.set_yticks(range(len(layers)))
    ax.set_yticklabels(layers, fontsize=7)
    ax.set_xticks(range(len(ids)))
    ax.set_xticklabels([f"{i}: {label(s, params)}" for i, s in zip(ids, ok)], rotation=90,
                       fontsize=6)
    fig.colorbar(im, ax=ax, label="MAC-unit utilisation")
    ax.set_title(f"utilisation per layer and design ({ev} evaluator)", fontsize=10)
    fig.tight_layout()
    save(fig, out, "utilisation")
    made.append("utilisation")
    for m in made:
        print(os.path.join(out, m + ".png"))
        print(os.path.join(out, m + ".svg"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
