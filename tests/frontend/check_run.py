#!/usr/bin/env python3
"""Runs a model with `covenant run --target TARGET` (ref by default) and
compares its (first) output with a reference computed elsewhere (numpy,
onnxruntime).

    /usr/bin/python3 check_run.py COVENANT MODEL INPUT.npy EXPECTED.npy TOL [TARGET]

Passes when the dtype and shape match and max|got - want| <= TOL * max|want|
(the error relative to the output's largest magnitude). Prints the error.
"""
import subprocess
import sys
import tempfile
import os

import numpy as np


def main():
    cov, model, inp, expected, tol = sys.argv[1:6]
    target = sys.argv[6] if len(sys.argv) > 6 else "ref"
    want = np.load(expected)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npy")
        r = subprocess.run([cov, "run", model, "--target", target, "--input", inp, "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAIL: covenant run exited %d:\n%s" % (r.returncode, r.stderr))
        got = np.load(out)
    if got.dtype != want.dtype or got.shape != want.shape:
        sys.exit("FAIL: got %s%s, expected %s%s" % (got.dtype, got.shape, want.dtype, want.shape))
    scale = float(np.abs(want).max()) or 1.0
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale
    print("%s on %s: max error %.3g relative to max |output| %.4g (tolerance %s)" %
          (os.path.basename(model), target, err, scale, tol))
    if not err <= float(tol):
        sys.exit("FAIL: error above tolerance")


if __name__ == "__main__":
    main()
