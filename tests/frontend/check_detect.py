#!/usr/bin/env python3
"""Runs a detector with `covenant run --target TARGET` and compares its
detections (boxes [n, 4], scores [n], labels [n], the outputs of a
torchvision detector's post-processing) with a reference computed
elsewhere (onnxruntime), as a set: detections whose scores differ by less
than the arithmetic's error (an NPU's f16 multiplicands) may come out of
TopK and NonMaxSuppression in another order, so each expected detection is
matched with the got one of the same label whose box overlaps it most.

    /usr/bin/python3 check_detect.py COVENANT MODEL INPUT.npy BOXES.npy SCORES.npy LABELS.npy TOL TARGET [COVENANT_RUN [EMULATOR [once]]]

With COVENANT_RUN, the model is compiled for TARGET into an artifact
instead, twice (the two files must be byte-identical, and list nothing as
missing), and covenant-run runs it. With EMULATOR (a GPU target:
tests/gpu/test_gpu_model_emulate), the plan the artifact is built from is
also run on the CPU (`EMULATOR -r INPUT DIR TARGET TOL MODEL`) and its
detections checked the same way; covenant-run's are checked where the
device's driver is present (without one it exits 4 and only the
emulation's are). An artifact whose outputs' sizes depend on the data
must say so (`covenant-run --info`: part steps, each output's dim 0 set
at run time). With `once` the artifact is compiled once (no
byte-identity check: the CI's cheaper form for a second and third
target of one backend family).

Passes when the counts agree, every expected detection is matched (no got
detection matched twice), and the matched boxes and scores differ by at
most TOL relative to the largest expected box coordinate and score.
"""
import filecmp
import os
import subprocess
import sys
import tempfile

import numpy as np


def iou(a, b):
    ih = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iw = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ih * iw
    ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0


def run_model(cov, model, inp, target, tmp):
    cmd = [cov, "run", model, "--target", target, "--input", inp, "-o", tmp]
    if target != "ref":
        cmd += ["--tolerance", "1"]  # its own check is order-sensitive; this one is not
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: covenant run exited %d:\n%s" % (r.returncode, r.stderr))
    return [np.load(os.path.join(tmp, "output_%d.npy" % i)) for i in range(3)]


def run_emulator(emu, model, inp, target, tmp):
    out = os.path.join(tmp, "emu")
    os.mkdir(out)
    r = subprocess.run([emu, "-r", inp, out, target, "1", model], capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: the emulation exited %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    return [np.load(os.path.join(out, "output_%d.npy" % i)) for i in range(3)]


def check_info(rt, art):
    r = subprocess.run([rt, art, "--info"], capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: covenant-run --info exited %d:\n%s" % (r.returncode, r.stderr))
    outs = [ln for ln in r.stdout.splitlines() if ln.startswith("output ")]
    if len(outs) != 3 or not all("its capacity, set at run time: dim 0" in ln for ln in outs):
        sys.exit("FAIL: --info: outputs whose dim 0 is set at run time expected:\n%s" % "\n".join(outs))
    if not any(": part of the model" in ln for ln in r.stdout.splitlines()):
        sys.exit("FAIL: --info lists no part step")


def run_artifact(cov, rt, model, inp, target, tmp, emulated, once):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime"))
    import artifact  # noqa: E402
    arts = [os.path.join(tmp, n) for n in (("a.cvx",) if once else ("a.cvx", "b.cvx"))]
    for a in arts:
        r = subprocess.run([cov, "compile", model, "--target", target, "-o", a], capture_output=True, text=True)
        if r.returncode:
            sys.exit("FAIL: compile: %s %s" % (r.stdout, r.stderr))
    if not once and not filecmp.cmp(arts[0], arts[1], shallow=False):
        sys.exit("FAIL: two compilations differ")
    m, _ = artifact.read(arts[0])
    if m["missing"]:
        sys.exit("FAIL: the artifact lists %s as missing" % m["missing"])
    if emulated:
        check_info(rt, arts[0])
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    r = subprocess.run([rt, arts[0], "--input", inp, "--output-dir", out], capture_output=True, text=True)
    if r.returncode == 4 and emulated:  # no driver for the artifact's device: the emulation's only
        print("covenant-run: no driver for %s's device (exit 4); checking the emulation" % target)
        return None
    if r.returncode:
        sys.exit("FAIL: covenant-run exited %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    return [np.load(os.path.join(out, "%d.npy" % i)) for i in range(3)]


def check(got, want, tol, model, target):
    for g, w, what in zip(got, want, ("boxes", "scores", "labels")):
        if g.dtype != w.dtype or g.shape[1:] != w.shape[1:]:
            sys.exit("FAIL: %s: got %s%s, expected %s%s" % (what, g.dtype, g.shape, w.dtype, w.shape))
    if len(got[0]) != len(want[0]):
        sys.exit("FAIL: %d detections, expected %d" % (len(got[0]), len(want[0])))
    box_scale = float(np.abs(want[0]).max()) or 1.0
    score_scale = float(np.abs(want[1]).max()) or 1.0
    used, box_err, score_err, moved = set(), 0.0, 0.0, 0
    for i in range(len(want[0])):
        cands = [j for j in range(len(got[0])) if j not in used and got[2][j] == want[2][i]]
        if not cands:
            sys.exit("FAIL: expected detection %d (label %d) has no match" % (i, want[2][i]))
        j = max(cands, key=lambda j: iou(got[0][j], want[0][i]))
        used.add(j)
        moved += j != i
        box_err = max(box_err, float(np.abs(got[0][j] - want[0][i]).max()) / box_scale)
        score_err = max(score_err, abs(float(got[1][j]) - float(want[1][i])) / score_scale)
    print("%s on %s: %d detections matched (%d in another order), max box error %.3g relative to "
          "%.4g, max score error %.3g relative to %.4g (tolerance %g)" %
          (os.path.basename(model), target, len(want[0]), moved, box_err, box_scale, score_err,
           score_scale, tol))
    if box_err > tol or score_err > tol:
        sys.exit("FAIL: error above tolerance")


def main():
    cov, model, inp, wb, ws, wl, tol, target = sys.argv[1:9]
    tol = float(tol)
    want = [np.load(wb), np.load(ws), np.load(wl)]
    rt = sys.argv[9] if len(sys.argv) > 9 else None
    emu = sys.argv[10] if len(sys.argv) > 10 else None
    once = len(sys.argv) > 11 and sys.argv[11] == "once"
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        if emu:
            runs.append(("emulation", run_emulator(emu, model, inp, target, tmp)))
        got = run_artifact(cov, rt, model, inp, target, tmp, emu, once) if rt else run_model(cov, model, inp, target, tmp)
        if got is not None:
            runs.append(("covenant-run" if rt else "covenant run", got))
    for what, got in runs:
        print("%s:" % what, end=" ")
        check(got, want, tol, model, target)


if __name__ == "__main__":
    main()
