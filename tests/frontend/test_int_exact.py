#!/usr/bin/env python3
"""Integer operators computed in integer arithmetic, against numpy.

    /usr/bin/python3 test_int_exact.py COVENANT WORKDIR

int64 values beyond 2^53 do not survive a double: Range's count and
elements, TopK's order, ScatterElements' reductions and Pad's constant must
be exact, and Range's limit - start must not overflow int64. Each model runs
twice: operands as initializers (folded while loading) and as graph inputs
(run by the interpreter). Every check runs; the exit status is 1 if any
failed.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cov_checks

COV = None
WORK = None
I64 = TensorProto.INT64


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, producer_name="test_int_exact",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def both_ways(name, op, operands, want, attrs=None, n_out=1, opset=13):
    """Runs op on operands (name -> array) folded and fed; compares exactly."""
    names = list(operands)
    outs = ["y%d" % i for i in range(n_out)]
    node = helper.make_node(op, names, outs, **(attrs or {}))
    ov = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs]
    inits = [numpy_helper.from_array(np.asarray(a), k) for k, a in operands.items()]
    folded = save(name + "_folded", [node], [], ov, inits, opset)
    ins = [helper.make_tensor_value_info(k, numpy_helper.from_array(np.asarray(a)).data_type,
                                         list(np.asarray(a).shape)) for k, a in operands.items()]
    fed = save(name + "_fed", [node], ins, ov, (), opset)
    for how, path, feed in (("folded", folded, []), ("fed", fed, [np.asarray(a) for a in operands.values()])):
        got = cov_checks.run_ok(COV, WORK, path, feed, n_out)[0]
        for g, w in zip(got, want):
            w = np.asarray(w)
            if g.dtype != w.dtype or g.shape != w.shape or not np.array_equal(g, w):
                raise AssertionError("%s (%s): got %s %s %s, want %s %s %s" % (
                    name, how, g.dtype, g.shape, g.tolist()[:8], w.dtype, w.shape, w.tolist()[:8]))


def s64(v):
    return np.array(v, dtype=np.int64)


def range_beyond_2_53():
    """Range(2^53+1, 2^53+4, 1) has 3 elements, each exact."""
    s, l = 2**53 + 1, 2**53 + 4
    both_ways("range_2_53", "Range", {"s": s64(s), "l": s64(l), "d": s64(1)},
              [np.array([s, s + 1, s + 2], dtype=np.int64)])


def range_full_int64_span():
    """Range(-2^63, 2^63-1, 2^62): limit - start overflows int64; 4 elements."""
    s, l, d = -2**63, 2**63 - 1, 2**62
    both_ways("range_span", "Range", {"s": s64(s), "l": s64(l), "d": s64(d)},
              [np.array([s + i * d for i in range(4)], dtype=np.int64)])


def range_negative_delta():
    """Range(2^62, -2^62, -(2^61)-1): ceil with a negative delta."""
    s, l, d = 2**62, -2**62, -(2**61) - 1
    want = [s + i * d for i in range(-(-(l - s) // d))]
    both_ways("range_neg", "Range", {"s": s64(s), "l": s64(l), "d": s64(d)},
              [np.array(want, dtype=np.int64)])


def range_int32():
    """Range on int32 near its ends."""
    s, l, d = -2**31, 2**31 - 1, 2**30
    both_ways("range_i32", "Range", {"s": np.int32(s), "l": np.int32(l), "d": np.int32(d)},
              [np.array(range(s, l, d), dtype=np.int32)])


def topk_int64_ties_of_doubles():
    """TopK of int64 values that one double holds: the larger comes first."""
    x = s64([2**53, 2**53 + 1, 5])
    both_ways("topk_i64", "TopK", {"x": x, "k": s64([2])},
              [s64([2**53 + 1, 2**53]), s64([1, 0])], n_out=2)


def scatter_add_int64():
    """ScatterElements with reduction=add on int64 beyond 2^53."""
    data = s64([2**53, 0, 5])
    idx = s64([0, 0, 2])
    upd = s64([1, 1, 2**60 + 1])
    want = data.copy()
    for i, u in zip(idx, upd):
        want[i] += u
    both_ways("scatter_add_i64", "ScatterElements", {"data": data, "idx": idx, "upd": upd},
              [want], attrs={"reduction": "add"}, opset=16)


def pad_int64_constant():
    """Pad's int64 constant_value beyond 2^53 is kept exactly."""
    x = s64([1, 2])
    c = np.int64(2**53 + 1)
    both_ways("pad_i64", "Pad", {"x": x, "pads": s64([1, 1]), "c": s64(c)},
              [np.pad(x, 1, constant_values=c)])


CHECKS = [range_beyond_2_53, range_full_int64_span, range_negative_delta, range_int32,
          topk_int64_ties_of_doubles, scatter_add_int64, pad_int64_constant]


def main():
    global COV, WORK
    COV, WORK = sys.argv[1], sys.argv[2]
    sys.exit(cov_checks.run_checks(CHECKS, WORK))


if __name__ == "__main__":
    main()
