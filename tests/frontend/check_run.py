#!/usr/bin/env python3
"""Runs a model with `covenant run --target TARGET` (ref by default) and
compares its (first) output with a reference computed elsewhere (numpy,
onnxruntime).

    /usr/bin/python3 check_run.py COVENANT MODEL INPUT.npy EXPECTED.npy TOL [TARGET]

Passes when the dtype and shape match and max|got - want| <= TOL * max|want|
(the error relative to the output's largest magnitude). Prints the error.
EXPECTED NAME_0.npy (or NAME_ort0.npy) means several outputs: NAME_1.npy ...
are compared with the model's further outputs too; likewise INPUT NAME0.npy
(NAME_input0.npy) means several inputs, in the model's order. On an NPU target TOL is
also covenant run's own --tolerance and EXPECTED its --expect files: its
own check (after each program's against the reference interpreter) is
then against them, as this script's is, instead of against a whole run of
the reference target, which would repeat the model's ref test (every
model checked here on an NPU is checked on ref too, in the same build,
against the same EXPECTED: the two bound the NPU's distance from the
reference) and took about a third of an NPU test's time.
"""
import subprocess
import sys
import tempfile
import os

import numpy as np


def expected_files(expected):
    """[EXPECTED] or, for NAME0.npy, NAME0.npy, NAME1.npy, ... as they exist."""
    stem = expected[:-len("0.npy")]
    if not expected.endswith("0.npy") or not os.path.exists(stem + "1.npy"):
        return [expected]
    files, k = [], 0
    while os.path.exists("%s%d.npy" % (stem, k)):
        files.append("%s%d.npy" % (stem, k))
        k += 1
    return files


def main():
    cov, model, inp, expected, tol = sys.argv[1:6]
    inputs = expected_files(inp)
    target = sys.argv[6] if len(sys.argv) > 6 else "ref"
    wants = [np.load(f) for f in expected_files(expected)]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [cov, "run", model, "--target", target]
        for f in inputs:
            cmd += ["--input", f]
        if target != "ref":
            cmd += ["--tolerance", tol]
            for f in expected_files(expected):
                cmd += ["--expect", f]
        if len(wants) == 1:
            outs = [os.path.join(tmp, "out.npy")]
            cmd += ["-o", outs[0]]
        else:
            outs = [os.path.join(tmp, "output_%d.npy" % i) for i in range(len(wants))]
            cmd += ["-o", tmp]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAIL: covenant run exited %d:\n%s" % (r.returncode, r.stderr))
        gots = [np.load(o) for o in outs]
    failed = False
    for i, (got, want) in enumerate(zip(gots, wants)):
        if got.dtype != want.dtype or got.shape != want.shape:
            sys.exit("FAIL: output %d: got %s%s, expected %s%s" %
                     (i, got.dtype, got.shape, want.dtype, want.shape))
        scale = float(np.abs(want).max()) or 1.0
        err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale
        print("%s on %s: %smax error %.3g relative to max |output| %.4g (tolerance %s)" %
              (os.path.basename(model), target, "output %d: " % i if len(wants) > 1 else "",
               err, scale, tol))
        failed |= not err <= float(tol)
    if failed:
        sys.exit("FAIL: error above tolerance")

if __name__ == "__main__":
    main()
