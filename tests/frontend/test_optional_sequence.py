#!/usr/bin/env python3
"""Optionals of sequences (optional(seq(tensor))) on `covenant run --target
ref`: as a model input given every way `covenant run` takes one (an
OptionalProto holding a SequenceProto or holding none, a folder of
elements, a folder holding NONE), passed through Identity and checked by
OptionalHasElement; made by Optional in an If's branches (none of its
`type` attribute in one, a SequenceConstruct's in the other); and carried
by a Loop that starts from none and inserts into the sequence each
iteration (its first iteration takes the If's default). Also an optional
tensor holding none made by Optional from its `type` attribute. Each output is
compared with what the ONNX definitions give, written out here.

    /usr/bin/python3 test_optional_sequence.py COVENANT WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
SEQ = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
OPT_SEQ = helper.make_optional_type_proto(SEQ)


def save(path, nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def opt_proto(path, tensors):
    """An OptionalProto holding a sequence of tensors, or none (None)."""
    p = onnx.OptionalProto()
    p.name = "os"
    p.elem_type = onnx.OptionalProto.SEQUENCE
    if tensors is not None:
        p.sequence_value.elem_type = onnx.SequenceProto.TENSOR
        for t in tensors:
            p.sequence_value.tensor_values.append(numpy_helper.from_array(t))
    with open(path, "wb") as f:
        f.write(p.SerializeToString())
    return path


def folder(path, tensors):
    os.makedirs(path, exist_ok=True)
    if tensors is None:
        open(os.path.join(path, "NONE"), "wb").close()
    for k, t in enumerate(tensors or []):
        np.save(os.path.join(path, "%d.npy" % k), t)
    return path


def run(cov, model, inputs, out):
    cmd = [cov, "run", model, "--target", "ref", "-o", out]
    for i in inputs:
        cmd += ["--input", i]
    os.makedirs(out, exist_ok=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return None if r.returncode == 0 else "exit %d: %s" % (r.returncode, r.stderr.strip()[-500:])


def check_seq(out, k, want):
    """Output k of a run in out: an optional sequence holding want (None:
    none), or a plain sequence when want is a list and plain."""
    d = os.path.join(out, "output_%d" % k)
    if not os.path.isdir(d):
        return "output %d is not a folder" % k
    none = os.path.exists(os.path.join(d, "NONE"))
    if want is None:
        return None if none else "output %d holds a sequence, expected none" % k
    if none:
        return "output %d holds none, expected a sequence" % k
    got = sorted((f for f in os.listdir(d) if f.endswith(".npy")), key=lambda f: int(f[:-4]))
    if len(got) != len(want):
        return "output %d has %d elements, expected %d" % (k, len(got), len(want))
    for j, (g, w) in enumerate(zip(got, want)):
        a = np.load(os.path.join(d, g))
        if a.shape != w.shape or not np.array_equal(a, w):
            return "output %d element %d: %s %s, expected %s %s" % (k, j, a.shape, a, w.shape, w)
    return None


def check_bool(out, k, want):
    a = np.load(os.path.join(out, "output_%d.npy" % k))
    return None if a.dtype == np.bool_ and bool(a) == want else "output %d is %s, expected %s" % (k, a, want)


def identity_cases(cov, work):
    m = save(os.path.join(work, "identity.onnx"),
             [helper.make_node("Identity", ["os"], ["y"]),
              helper.make_node("OptionalHasElement", ["os"], ["has"])],
             [helper.make_value_info("os", OPT_SEQ)],
             [helper.make_value_info("y", OPT_SEQ), helper.make_tensor_value_info("has", B, [])])
    two = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    for name, given, want in [
            ("pb_none", opt_proto(os.path.join(work, "none.pb"), None), None),
            ("pb_two", opt_proto(os.path.join(work, "two.pb"), two), two),
            ("pb_empty", opt_proto(os.path.join(work, "empty.pb"), []), []),
            ("folder_none", folder(os.path.join(work, "none_dir"), None), None),
            ("folder_two", folder(os.path.join(work, "two_dir"), two), two)]:
        out = os.path.join(work, "identity_" + name)
        why = run(cov, m, [given], out) or check_seq(out, 0, want) or \
            check_bool(out, 1, want is not None)
        yield "identity " + name, why


def if_cases(cov, work):
    x = numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "x")
    then_g = helper.make_graph([helper.make_node("Optional", [], ["t"], type=SEQ)], "then", [],
                               [helper.make_value_info("t", OPT_SEQ)])
    else_g = helper.make_graph([helper.make_node("Constant", [], ["c"], value=x),
                                helper.make_node("SequenceConstruct", ["c", "c"], ["s"]),
                                helper.make_node("Optional", ["s"], ["e"])], "else", [],
                               [helper.make_value_info("e", OPT_SEQ)])
    m = save(os.path.join(work, "if.onnx"),
             [helper.make_node("If", ["cond"], ["os"], then_branch=then_g, else_branch=else_g),
              helper.make_node("OptionalHasElement", ["os"], ["has"])],
             [helper.make_tensor_value_info("cond", B, [])],
             [helper.make_value_info("os", OPT_SEQ), helper.make_tensor_value_info("has", B, [])])
    xv = numpy_helper.to_array(x)
    for cond, want in [(True, None), (False, [xv, xv])]:
        p = os.path.join(work, "cond_%d.npy" % cond)
        np.save(p, np.array(cond))
        out = os.path.join(work, "if_%d" % cond)
        why = run(cov, m, [p], out) or check_seq(out, 0, want) or check_bool(out, 1, want is not None)
        yield "if cond=%s" % cond, why


def empty_optional_tensor_cases(cov, work):
    """Optional with no input makes an optional tensor holding none of its
    `type` attribute's type too (an empty folder, no NONE: an optional
    tensor's none is having no element)."""
    opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, None))
    then_g = helper.make_graph([helper.make_node("Optional", [], ["t"],
                                                 type=helper.make_tensor_type_proto(F, None))],
                               "then", [], [helper.make_value_info("t", opt_t)])
    else_g = helper.make_graph([helper.make_node("Optional", ["x"], ["e"])], "else", [],
                               [helper.make_value_info("e", opt_t)])
    m = save(os.path.join(work, "if_tensor.onnx"),
             [helper.make_node("If", ["cond"], ["o"], then_branch=then_g, else_branch=else_g),
              helper.make_node("OptionalHasElement", ["o"], ["has"])],
             [helper.make_tensor_value_info("cond", B, []), helper.make_tensor_value_info("x", F, [3])],
             [helper.make_value_info("o", opt_t), helper.make_tensor_value_info("has", B, [])])
    xv = np.array([0.5, 1.5, -3.0], np.float32)
    px = os.path.join(work, "x3.npy")
    np.save(px, xv)
    for cond, want in [(True, []), (False, [xv])]:
        p = os.path.join(work, "tcond_%d.npy" % cond)
        np.save(p, np.array(cond))
        out = os.path.join(work, "if_tensor_%d" % cond)
        why = run(cov, m, [p, px], out) or check_seq(out, 0, want) or check_bool(out, 1, bool(want))
        yield "optional tensor from If, cond=%s" % cond, why


def loop_cases(cov, work, trips=4):
    """A Loop carrying an optional sequence that starts as none: each
    iteration takes [0] when it holds none, else its sequence, and appends
    x[:i+1] (as the ONNX loop16_seq_none case, from none)."""
    xs = np.array([1, 2, 3, 4, 5], np.float32)
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "z")
    then_g = helper.make_graph([helper.make_node("Constant", [], ["z"], value=zero),
                                helper.make_node("SequenceConstruct", ["z"], ["init"])], "then", [],
                               [helper.make_value_info("init", SEQ)])
    else_g = helper.make_graph([helper.make_node("OptionalGetElement", ["opt_in"], ["got"])], "else",
                               [], [helper.make_value_info("got", SEQ)])
    c = lambda name, a: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(a, name))  # noqa
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("OptionalHasElement", ["opt_in"], ["has"]),
         helper.make_node("Not", ["has"], ["none"]),
         helper.make_node("If", ["none"], ["seq"], then_branch=then_g, else_branch=else_g),
         c("x", xs), c("one", np.array(1, np.int64)), c("start", np.array([0], np.int64)),
         c("axes", np.array([0], np.int64)),
         helper.make_node("Add", ["i", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["end", "axes"], ["end1"]),
         helper.make_node("Slice", ["x", "start", "end1"], ["piece"]),
         helper.make_node("SequenceInsert", ["seq", "piece"], ["seq_out"])],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
         helper.make_value_info("opt_in", OPT_SEQ)],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_value_info("seq_out", SEQ)])
    m = save(os.path.join(work, "loop.onnx"),
             [helper.make_node("Loop", ["M", "cond", "os"], ["res"], body=body)],
             [helper.make_tensor_value_info("M", I64, []), helper.make_tensor_value_info("cond", B, []),
              helper.make_value_info("os", OPT_SEQ)],
             [helper.make_value_info("res", SEQ)], opset=16)
    want = [np.array(0.0, np.float32)] + [xs[:i + 1] for i in range(trips)]
    ins = [os.path.join(work, "M.npy"), os.path.join(work, "c.npy"),
           opt_proto(os.path.join(work, "loop_none.pb"), None)]
    np.save(ins[0], np.array(trips, np.int64))
    np.save(ins[1], np.array(True))
    out = os.path.join(work, "loop_none")
    why = run(cov, m, ins, out) or check_seq(out, 0, want)
    yield "loop from none, %d trips" % trips, why


def main():
    cov, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    fails = n = 0
    for cases in (identity_cases, if_cases, empty_optional_tensor_cases, loop_cases):
        for name, why in cases(cov, work):
            n += 1
            fails += bool(why)
            print("%s %s%s" % ("FAIL" if why else "ok  ", name, ": " + why if why else ""))
    print("%d optional-sequence cases, %d failures" % (n, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
