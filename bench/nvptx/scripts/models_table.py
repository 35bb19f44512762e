#!/usr/bin/env python3
"""bench/nvptx/scripts/models_table.py OUT.json WHAT PART.json...: the rows of the
parts of one model run (run_models.py --json, one file per part) in one
file, {"what": WHAT, "device": ..., "models": rows}, and the README's table
of them on stdout (torch / covenant and torch.compile / covenant: > 1 means
covenant is faster; torch eager is the faster of the ONNX graph as torch
calls and the torch module, both replayed from CUDA graphs), then the
geometric means per batch over the models with both figures."""
import math
import json
import sys

ORDER = ["convnet", "small_cnn", "squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "resnet18", "resnet50",
         "efficientnet_b0", "encoder", "vit_tiny", "yolo_tiny", "gpt2_tiny"]


def key(r):
    return (ORDER.index(r["model"]) if r["model"] in ORDER else len(ORDER), r["model"], r["batch"])


def main():
    out, what, parts = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = []
    for p in parts:
        rows += json.load(open(p))
    rows.sort(key=key)
    dev = next((r["device"] for r in rows if r.get("device")), "?")
    json.dump({"what": what, "device": dev, "models": rows}, open(out, "w"), indent=1)
    print("| model | batch | max rel err vs onnxruntime (100 inputs) | result | covenant ms | torch eager (CUDA graph) ms "
          "| torch / covenant | torch.compile (CUDA graph) ms (its module eager) | torch.compile / covenant |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print("| %s | %d | - | ERROR: %s | - | - | - | - | - |" % (r["model"], r["batch"], r["error"][:100]))
            continue
        t = r.get("eager_ms", r.get("torch_ms"))
        anchor = "" if r.get("eager", r.get("torch")) == "the ONNX graph as torch calls" else " (module)"
        c = r.get("compile")
        print("| %s | %d | %.2e | %s | %.3f | %s | %s | %s | %s |" % (
            r["model"], r["batch"], r["max_rel_err"], "PASS" if r["passed"] else "FAIL", r["covenant_ms"],
            "%.3f%s" % (t, anchor) if t else "-", "%.2fx" % (t / r["covenant_ms"]) if t else "-",
            "%.3f (%.3f)" % (c["compiled_ms"], c["module_ms"]) if c else "-",
            "%.2fx" % (c["compiled_ms"] / c["covenant_ms"]) if c else "-"))
    print()
    for b in sorted({r["batch"] for r in rows}):
        both = [r for r in rows if r["batch"] == b and "error" not in r and r.get("compile") and
                r.get("eager_ms", r.get("torch_ms")) and r["covenant_ms"]]
        if both:
            geo = lambda v: math.exp(sum(math.log(x) for x in v) / len(v))  # noqa: E731
            print("batch %d, %d models: geomean torch eager / covenant %.2fx, torch.compile / covenant %.2fx" % (
                b, len(both), geo([r.get("eager_ms", r.get("torch_ms")) / r["covenant_ms"] for r in both]),
                geo([r["compile"]["compiled_ms"] / r["compile"]["covenant_ms"] for r in both])))


if __name__ == "__main__":
    main()
