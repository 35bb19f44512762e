#!/usr/bin/env python3
"""bench/nvptx/scripts/tune_report.py RESULTS RESULTS2 OUT.json: the measured-tuning
run's figures (tune-h100.json) from covenant-run --tune's times_suite.json and
times_model.json (RESULTS), the tuning files covenant tune --record wrote
there, and the second call's untuned/tuned model latencies (RESULTS2/
models.txt). Spearman's rho of the mapper's predicted cycles vs measured
times is computed here directly (average ranks), per key, per kind of kernel
(the key's second field: matmul, conv2d, dwconv) and pooled, as a check on
covenant tune --record's own figures."""
import json, math, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spearman import spearman  # noqa: E402


def part(times, tuning):
    t = json.load(open(times))
    tuned = {e["key"]: e["schedule"] for e in json.load(open(tuning))["entries"]}
    rows, cyc, ms, gains, by_kind = [], [], [], [], {}
    for g in t["groups"]:
        if "error" in g:
            rows.append({"key": g["key"], "layer": g.get("layer"), "error": g["error"]})
            continue
        ok = [c for c in g["candidates"] if c["ok"]]
        best = min(ok, key=lambda c: c["ms"]) if ok else None
        rho = spearman([c["cycles"] for c in ok], [c["ms"] for c in ok])
        cyc += [c["cycles"] for c in ok]
        ms += [c["ms"] for c in ok]
        kc, km = by_kind.setdefault(g["key"].split(":")[1], ([], []))
        kc += [c["cycles"] for c in ok]
        km += [c["ms"] for c in ok]
        tuned_ms = best["ms"] if g["key"] in tuned else g["pick"]["ms"]
        gains.append(g["pick"]["ms"] / tuned_ms)
        rows.append({"key": g["key"], "layer": g.get("layer"), "pick_ms": g["pick"]["ms"],
                     "best": best["schedule"] if best else None, "best_ms": best["ms"] if best else None,
                     "pick_over_best": g["pick"]["ms"] / best["ms"] if best else None,
                     "recorded": tuned.get(g["key"]), "spearman": rho,
                     "ok": len(ok), "failed": len(g["candidates"]) - len(ok)})
    return {"device": t["device"], "iters": t["iters"], "reps": t["reps"], "tolerance": t["tolerance"],
            "keys": rows, "spearman_pooled": spearman(cyc, ms), "kernels": len(cyc),
            "spearman_by_kind": {k: spearman(c, m) for k, (c, m) in sorted(by_kind.items())},
            "keys_tuned": len(tuned),
            "geomean_pick_over_tuned": math.exp(sum(map(math.log, gains)) / len(gains)) if gains else None}


def main():
    res, res2, out = sys.argv[1:4]
    r = {"suite": part(res + "/times_suite.json", res + "/tuning_suite.json"),
         "model": part(res + "/times_model.json", res + "/tuning_model.json")}
    lat = {"untuned": [], "tuned": []}
    for line in open(res2 + "/models.txt"):
        m = re.match(r"(untuned|tuned) \d+ time: ([0-9.]+) ms", line)
        if m:
            lat[m.group(1)].append(float(m.group(2)))
    med = {k: sorted(v)[len(v) // 2] for k, v in lat.items() if v}
    r["model_latency_ms"] = {"runs": lat, "median": med,
                             "untuned_over_tuned": med["untuned"] / med["tuned"] if len(med) == 2 else None}
    json.dump(r, open(out, "w"), indent=1)
    for p in ("suite", "model"):
        s = r[p]
        print("%s: %d keys, %d tuned, pooled rho %.3f over %d kernels, geomean pick/tuned %.3f" % (
            p, len(s["keys"]), s["keys_tuned"], s["spearman_pooled"] or float("nan"), s["kernels"],
            s["geomean_pick_over_tuned"] or float("nan")))
        print("  Spearman per kind:", s["spearman_by_kind"])
    print("model latency (ms, median of alternating runs):", med)


if __name__ == "__main__":
    main()
