"""Hostile sequence and optional inputs for `covenant run` (test_bad_ops.py):
SequenceProto / OptionalProto files and .npy folders that must be refused
with exit status 1 and an error naming the file and what is wrong, with no
crash, hang or unbounded allocation: element counts past the limit (counted
before any element is decoded), nesting (refused at its first level, never
recursed into, so depth costs nothing), maps, corrupt framing, elements of
the wrong dtype or a broken TensorProto, an optional with two values, a
folder with a gap in its numbering; for an optional of a sequence, an
OptionalProto holding a tensor, two sequences, or a sequence that is
itself hostile, and a folder holding NONE and elements."""
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def tensor(a):
    return numpy_helper.from_array(np.asarray(a)).SerializeToString()


def model(work, optional):
    """optional: False (a sequence input), True (an optional tensor) or
    "seq" (an optional of a sequence)."""
    t = helper.make_tensor_type_proto(F, None)
    ty = helper.make_optional_type_proto(helper.make_sequence_type_proto(t)) if optional == "seq" \
        else helper.make_optional_type_proto(t) if optional else helper.make_sequence_type_proto(t)
    node = (helper.make_node("OptionalHasElement", ["s"], ["y"], name="bad") if optional
            else helper.make_node("SequenceLength", ["s"], ["y"], name="bad"))
    g = helper.make_graph([node], "g", [helper.make_value_info("s", ty)],
                          [helper.make_tensor_value_info("y", 0, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    path = os.path.join(work, "seq_io_%s.onnx" % ("optseq" if optional == "seq" else
                                                  "opt" if optional else "seq"))
    onnx.save(m, path)
    return path


def nested(depth):
    inner = b""
    for _ in range(depth):
        inner = field(5, inner)
    return inner


def cases():
    one = tensor(np.zeros((2, 2), np.float32))
    yield "seq_count_bomb", False, field(3, b"") * 70000, "has more than 65536 tensors"
    yield "seq_nested", False, field(3, one) + field(5, field(3, one)), "holds a nested sequence"
    yield "seq_nested_deep", False, nested(20000), "holds a nested sequence"
    yield "seq_map", False, field(6, b""), "holds a map"
    yield "seq_elem_type", False, varint(2 << 3) + varint(3) + field(3, one), "elements have type 3"
    yield "seq_truncated", False, field(3, one)[:-3], "truncated or corrupt"
    yield "seq_group", False, bytes([0x1B]), "truncated or corrupt"
    yield "seq_dtype", False, field(3, tensor(np.zeros(3, np.int64))), "element 0 is a i64 tensor; the sequence holds f32"
    bad = TensorProto(data_type=F, dims=[1 << 40, 1 << 30]).SerializeToString()
    yield "seq_elem_huge", False, field(3, bad), "SequenceProto element 0"
    yield "opt_two", True, field(3, one) + field(3, one), "the OptionalProto has 2 tensor values"
    yield "opt_of_seq", True, field(5, field(3, one)), "holds a nested sequence"
    seq = field(5, field(3, one))
    yield "optseq_tensor", "seq", field(3, one), "holds a tensor; the input is an optional of a sequence"
    yield "optseq_two", "seq", seq + seq, "holds more than one sequence"
    yield "optseq_elem_type", "seq", varint(2 << 3) + varint(1) + seq, "holds elements of type 1"
    yield "optseq_map", "seq", field(6, b""), "holds a map"
    yield "optseq_optional", "seq", field(7, b""), "holds a nested optional"
    yield "optseq_nested", "seq", field(5, field(5, field(3, one))), "holds a nested sequence"
    yield "optseq_nested_deep", "seq", field(5, nested(20000)), "holds a nested sequence"
    yield "optseq_count_bomb", "seq", field(5, field(3, b"") * 70000), "has more than 65536 tensors"
    yield "optseq_dtype", "seq", field(5, field(3, tensor(np.zeros(3, np.int64)))), \
        "element 0 is a i64 tensor; the sequence holds f32"
    yield "optseq_truncated", "seq", seq[:-3], "truncated or corrupt"


def run(cov, work, name, optional, data):
    src = os.path.join(work, name + ".pb")
    if isinstance(data, bytes):
        with open(src, "wb") as f:
            f.write(data)
    else:
        src = data
    cmd = [cov, "run", model(work, optional), "--target", "ref", "--input", src]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30), src
    except subprocess.TimeoutExpired:
        return None, src


def check(cov, work, name, optional, data, text):
    r, src = run(cov, work, name, optional, data)
    if r is None:
        return "timed out"
    if r.returncode != 1 or "Sanitizer" in r.stderr or "runtime error" in r.stderr:
        return "exit %d (expected 1):\n%s" % (r.returncode, r.stderr + r.stdout[-2000:])
    if src not in r.stderr or text not in r.stderr:
        return "the error does not name %s and '%s':\n%s" % (src, text, r.stderr)
    return None


def folder_with_gap(work):
    d = os.path.join(work, "seq_gap")
    os.makedirs(d, exist_ok=True)
    for k in (0, 2):
        np.save(os.path.join(d, "%d.npy" % k), np.zeros(2, np.float32))
    return d


def run_all(cov, work):
    """(name, problem or None) for each case."""
    out = [(name, check(cov, work, name, opt, data, text)) for name, opt, data, text in cases()]
    gap = folder_with_gap(work)
    out.append(("seq_folder_gap", check(cov, work, "seq_folder_gap", False, gap, "element 1 (1.npy) is missing")))
    d = os.path.join(work, "optseq_none_and_elements")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "NONE"), "wb").close()
    np.save(os.path.join(d, "0.npy"), np.zeros(2, np.float32))
    out.append(("optseq_none_and_elements", check(cov, work, "optseq_none_and_elements", "seq", d,
                                                  "holds NONE (an optional holding no sequence) and 1")))
    return out
