"""covenant from Python, in three steps (python/README.md).

    PYTHONPATH=build/python python3 examples/python_tutorial.py
    PYTHONPATH=<prefix>/lib/python3/site-packages python3 examples/python_tutorial.py

1. Compile and run examples/convnet.onnx on the npu-16x16 NPU (each layer
   group mapped, compiled to one program and simulated) and on the CPU
   reference interpreter, and compare the numpy outputs with each other
   and with numpy's own result (convnet_output.npy).
2. A 4-design study (2 array sizes x 2 input buffer sizes) on one layer,
   returned as a table.
3. A mistake in an ACG file, raised as covenant.Error located by file,
   line and JSON path.
Exits 1 if a check fails (CI runs it: ctest python_tutorial).
"""

import json
import os
import sys
import tempfile

import numpy as np

import covenant

HERE = os.path.dirname(os.path.abspath(__file__))

# 1. One model on two targets.
x = np.load(os.path.join(HERE, "convnet_input.npy"))
expected = np.load(os.path.join(HERE, "convnet_output.npy"))
model = covenant.Model(os.path.join(HERE, "convnet.onnx"))
print("inputs:", model.inputs, "outputs:", model.outputs)
npu = model.run("npu-16x16", {"input": x})
ref = model.run("ref", {"input": x})
y_npu, y_ref = npu.outputs["output"], ref.outputs["output"]
err_npu_ref = float(np.abs(y_npu - y_ref).max() / np.abs(y_ref).max())
err_ref_numpy = float(np.abs(y_ref - expected).max() / np.abs(expected).max())
print("npu-16x16: %d cycles; max|npu - ref| / max|ref| = %.2e; ref vs numpy %.2e"
      % (npu.cycles, err_npu_ref, err_ref_numpy))
for row in npu.report:
    print("  group %d %-8s %-30s %6d cycles  array %4.1f%%  %s"
          % (row["group"], row["node"], row["codelets"], row["cycles"], 100 * row["array_utilization"],
             row["where"]))
ok = err_npu_ref < 1e-2 and err_ref_numpy < 1e-5  # the NPU multiplies in f16

# 2. A study: four designs, one row each.
table = covenant.explore("npu-16x16", {"pe_array.dims": [(8, 8), (16, 16)], "ibuf.capacity": ["32KiB", "64KiB"]},
                         suite=["convnet_layer1"], evaluator="mapper")
rows = table.to_dict("records") if hasattr(table, "to_dict") else table
for r in rows:
    print("  %s  dims %-5s ibuf %-5s  %8.0f cycles  utilisation %.2f"
          % (r["design"], r["pe_array.dims"], r["ibuf.capacity"], r["cycles"], r["utilisation"]))
ok = ok and len(rows) == 4

# 3. A mistake in an ACG file, located.
acg = covenant.load_acg("npu-16x16")
acg["storage"][1]["capacity"] = 0
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "my-npu.json")
    with open(path, "w") as f:
        json.dump(acg, f, indent=2)
    try:
        covenant.check_acg(path)
        print("FAIL: an ACG with a zero capacity was accepted")
        ok = False
    except covenant.Error as e:
        print("covenant.Error: %s line %s, %s: %s (%s)" % (os.path.basename(e.file), e.line, e.path, e.message,
                                                          e.code))
        ok = ok and e.path == "$.storage[1].capacity" and e.line is not None

print("tutorial:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
