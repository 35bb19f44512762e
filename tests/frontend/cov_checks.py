"""What the frontend's Python checks share (test_passes.py,
test_int_exact.py, test_input_default.py, test_empty_inputs.py): a model
run with `covenant run`, its outputs read back, and a list of check
functions run with one line each and a summary. The scripts run from this
folder, so `import cov_checks` finds it."""
import os
import subprocess

import numpy as np


def run(cov, work, path, inputs, n_out=1, target="ref", timeout=None):
    """`covenant run PATH --target TARGET`; inputs: a list of arrays (the
    model's inputs in order) or a dict of them by input name, saved as .npy
    files in WORK. Returns (its first n_out outputs, the finished process);
    the outputs are None when it failed."""
    outdir = os.path.join(work, "out")
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        os.remove(os.path.join(outdir, f))
    args = [cov, "run", path, "--target", target, "-o", outdir]
    if isinstance(inputs, dict):
        for k, a in inputs.items():
            p = os.path.join(work, k + ".npy")
            np.save(p, a)
            args += ["--input", "%s=%s" % (k, p)]
    else:
        for i, a in enumerate(inputs):
            p = os.path.join(work, "in%d.npy" % i)
            np.save(p, a)
            args += ["--input", p]
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        return None, r
    return [np.load(os.path.join(outdir, "output_%d.npy" % i)) for i in range(n_out)], r


def run_ok(cov, work, path, inputs, n_out=1):
    """run on the reference target, an AssertionError (with covenant's
    message) when it fails."""
    got, r = run(cov, work, path, inputs, n_out)
    if got is None:
        raise AssertionError("run failed: " + (r.stderr or r.stdout).strip())
    return got, r


def run_checks(checks, work):
    """Calls each check in turn (an AssertionError fails it, with its
    message), printing "ok: NAME" or "FAIL: NAME: why" and then "N checks,
    N failed". Returns the exit status."""
    os.makedirs(work, exist_ok=True)
    failed = []
    for fn in checks:
        try:
            fn()
            print("ok: " + fn.__name__)
        except AssertionError as e:
            failed.append(fn.__name__)
            print("FAIL: %s: %s" % (fn.__name__, e))
    print("%d checks, %d failed" % (len(checks), len(failed)))
    return 1 if failed else 0
