#!/usr/bin/env python3
"""bench/nvptx/scripts/check_models.py --runner covenant-run --payload PAYLOAD [--cases 100]:
on the GPU machine, runs every compiled model of PAYLOAD (compile_check_models.sh)
with covenant-run on N random inputs in [-1, 1) and compares each output with
onnxruntime's on the same input: max |gpu - ort| / max |ort| per input, worst
over inputs, PASS at 1e-2 (f16 operands of the matrix kernels). Then times
each model (covenant-run --iters, CUDA-graph replay). Exit 1 if any fails."""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

ap = argparse.ArgumentParser()
ap.add_argument("--runner", required=True)
ap.add_argument("--payload", required=True)
ap.add_argument("--cases", type=int, default=100)
ap.add_argument("--tol", type=float, default=1e-2)
a = ap.parse_args()
fails = 0
for name in sorted(os.listdir(a.payload)):
    d = os.path.join(a.payload, name)
    art = os.path.join(d, "model.covart")
    if not os.path.isfile(art):
        continue
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    ins = sess.get_inputs()
    rng = np.random.default_rng(1)
    cases = os.path.join(d, "cases")
    refs = []
    for i in range(a.cases):
        os.makedirs(os.path.join(cases, str(i)), exist_ok=True)
        feed = {}
        for k, inp in enumerate(ins):
            shape = [s if isinstance(s, int) and s > 0 else 1 for s in inp.shape]
            x = rng.uniform(-1, 1, shape).astype(np.float32)
            np.save(os.path.join(cases, str(i), "in%d.npy" % k), x)
            feed[inp.name] = x
        refs.append(sess.run(None, feed))
    r = subprocess.run([a.runner, art, "--cases", cases], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL %-32s covenant-run: %s" % (name, r.stderr.strip()))
        fails += 1
        continue
    worst = 0.0
    for i, ref in enumerate(refs):
        for o, want in enumerate(ref):
            got = np.load(os.path.join(cases, str(i), "out%d.npy" % o)).reshape(want.shape)
            worst = max(worst, float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30)))
    t = subprocess.run([a.runner, art, "--iters", "100", "--warmup", "10"], capture_output=True, text=True)
    timing = (t.stdout.strip().splitlines() or ["?"])[-1]
    ok = worst <= a.tol
    fails += not ok
    print("%s %-32s %d inputs, max rel err %.3g (tol %g); %s" % ("PASS" if ok else "FAIL", name, a.cases, worst,
                                                                 a.tol, timing))
sys.exit(1 if fails else 0)
