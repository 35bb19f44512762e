#!/usr/bin/env python3
"""A model compiled into an artifact and run by covenant-run, compared with a
reference computed elsewhere (onnxruntime).

    /usr/bin/python3 check_artifact.py COVENANT COVENANT_RUN MODEL INPUT.npy EXPECTED.npy TOL TARGET [OP...]

Compiles MODEL for TARGET twice (the two files must be byte-identical),
checks the artifact lists nothing as missing and holds a step of each OP
given (loop, if, host, ...: what the test is about), runs it with
covenant-run on INPUT and passes when the output's dtype and shape match
and max|got - want| <= TOL * max|want|. Prints the error. Exits 77 (a
CTest skip) where covenant-run finds no driver for the artifact's device
(its exit status 4), after the compile checks.
"""
import filecmp
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime"))
import artifact  # noqa: E402


def main():
    cov, rt, model, inp, expected, tol, target = sys.argv[1:8]
    ops = sys.argv[8:]
    want = np.load(expected)
    with tempfile.TemporaryDirectory() as tmp:
        arts = [os.path.join(tmp, n) for n in ("a.cvx", "b.cvx")]
        for a in arts:
            r = subprocess.run([cov, "compile", model, "--target", target, "-o", a], capture_output=True, text=True)
            if r.returncode:
                print("FAIL: compile:", r.stdout, r.stderr)
                return 1
        if not filecmp.cmp(arts[0], arts[1], shallow=False):
            print("FAIL: two compilations differ")
            return 1
        m, _ = artifact.read(arts[0])
        have = {s["op"] for s in m["steps"]}
        if m["missing"] or not set(ops) <= have:
            print("FAIL: missing %s; steps %s, expected %s among them" % (m["missing"], sorted(have), ops))
            return 1
        out = os.path.join(tmp, "y.npy")
        r = subprocess.run([rt, arts[0], "--input", inp, "-o", out], capture_output=True, text=True)
        if r.returncode == 4:  # no driver for the artifact's device
            print("SKIP: compiled and checked; no device to run it:", r.stderr.strip())
            return 77
        if r.returncode:
            print("FAIL: covenant-run:", r.stdout, r.stderr)
            return 1
        got = np.load(out)
    if got.dtype != want.dtype or got.shape != want.shape:
        print("FAIL: got %s%s, want %s%s" % (got.dtype, got.shape, want.dtype, want.shape))
        return 1
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    print("%s on %s through its artifact: max error %.3e of max|want| (tolerance %s)" % (model, target, err, tol))
    return 0 if err <= float(tol) else 1


if __name__ == "__main__":
    sys.exit(main())
