#!/usr/bin/env python3
"""bench/nvptx/scripts/models_table.py OUT.json WHAT PART.json...: the rows of the
parts of one model run (run_models.py --json, one file per part) in one
file, {"what": WHAT, "device": ..., "models": rows}, and the README's table
of them on stdout (torch / covenant and torch.compile / covenant: > 1 means
covenant is faster)."""
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
        t = r.get("torch_ms")
        anchor = "" if r.get("torch") == "the ONNX graph as torch calls" else " (module)"
        c = r.get("compile")
        print("| %s | %d | %.2e | %s | %.3f | %s | %s | %s | %s |" % (
            r["model"], r["batch"], r["max_rel_err"], "PASS" if r["passed"] else "FAIL", r["covenant_ms"],
            "%.3f%s" % (t, anchor) if t else "-", "%.2fx" % (t / r["covenant_ms"]) if t else "-",
            "%.3f (%.3f)" % (c["compiled_ms"], c["module_ms"]) if c else "-",
            "%.2fx" % (c["compiled_ms"] / c["covenant_ms"]) if c else "-"))


if __name__ == "__main__":
    main()
