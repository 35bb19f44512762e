#!/usr/bin/env python3
"""Graph inputs that share an initializer's name, as ONNX defines them.

    /usr/bin/python3 test_input_default.py COVENANT WORKDIR

From IR version 4 on, an initializer with a graph input's name is that
input's default value (onnx/IR.md, "Graphs"): a run that feeds the input
uses the fed value, one that does not uses the initializer. Before IR
version 4 every initializer was listed as an input too, and stays a
constant. A default whose type does not match the input's declaration is
refused with an error naming the input. Results against numpy.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cov_checks

COV = None
WORK = None


def model(name, ir, w_type=TensorProto.FLOAT, w_shape=(3,)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    w = helper.make_tensor_value_info("w", w_type, list(w_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    init = numpy_helper.from_array(np.array([10, 20, 30], dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], name, [x, w], [y],
                          initializer=[init])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9 if ir < 4 else 13)])
    m.ir_version = ir
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def run(path, feeds):
    got, r = cov_checks.run_ok(COV, WORK, path, feeds)
    return got[0], r.stdout


X = np.array([1, 2, 3], dtype=np.float32)
W = np.array([10, 20, 30], dtype=np.float32)
FED = np.array([-5, 0.5, 7], dtype=np.float32)


def equal(got, want):
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError("got %s, want %s" % (got.tolist(), want.tolist()))


def unfed_takes_the_default():
    y, out = run(model("unfed", 7), {"x": X})
    equal(y, X + W)
    if "default" not in out:
        raise AssertionError("run does not say the default was used: " + out)


def fed_overrides_the_default():
    y, _ = run(model("fed", 7), {"x": X, "w": FED})
    equal(y, X + FED)


def inspect_lists_the_input_with_its_default():
    r = subprocess.run([COV, "inspect", model("insp", 7)], capture_output=True, text=True)
    if r.returncode != 0 or not any(l.strip().startswith("w ") and "default" in l
                                    for l in r.stdout.splitlines()):
        raise AssertionError("inspect: " + r.stdout + r.stderr)


def before_ir4_the_initializer_is_a_constant():
    y, _ = run(model("ir3", 3), {"x": X})
    equal(y, X + W)
    r = subprocess.run([COV, "inspect", model("ir3", 3)], capture_output=True, text=True)
    if r.returncode != 0 or any(l.strip().startswith("w ") for l in
                                r.stdout.split("outputs:")[0].splitlines()):
        raise AssertionError("IR 3: w listed as an input: " + r.stdout + r.stderr)


def mismatched_default_refused():
    path = model("mismatch", 7, w_type=TensorProto.INT64)
    r = subprocess.run([COV, "inspect", path], capture_output=True, text=True)
    if r.returncode != 1 or "'w'" not in r.stderr or "default" not in r.stderr:
        raise AssertionError("rc %d: %s" % (r.returncode, r.stderr.strip()))
    path = model("mismatch_shape", 7, w_shape=(4,))
    r = subprocess.run([COV, "inspect", path], capture_output=True, text=True)
    if r.returncode != 1 or "'w'" not in r.stderr or "default" not in r.stderr:
        raise AssertionError("rc %d: %s" % (r.returncode, r.stderr.strip()))


CHECKS = [unfed_takes_the_default, fed_overrides_the_default,
          inspect_lists_the_input_with_its_default, before_ir4_the_initializer_is_a_constant,
          mismatched_default_refused]


def main():
    global COV, WORK
    COV, WORK = sys.argv[1], sys.argv[2]
    sys.exit(cov_checks.run_checks(CHECKS, WORK))


if __name__ == "__main__":
    main()
