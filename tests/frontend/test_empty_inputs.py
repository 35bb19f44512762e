#!/usr/bin/env python3
"""Model inputs with a zero-sized dim (empty tensors) on --target ref.

    /usr/bin/python3 test_empty_inputs.py COVENANT WORKDIR [TARGET...]

ONNX allows a dim of 0 in a graph input (its conformance data has empty
axes lists and 0-row matrices). Each case runs one operator on an empty
input and compares the result with numpy: an empty result where the op
maps elements, the op's identity where it reduces over an empty axis (a
sum of nothing is 0, so MatMul with K = 0 is all zeros), padding around
nothing. An op with no answer on an empty input (ArgMax over an empty
axis) must be refused with an error naming its node. Each TARGET (default: ref) runs
every case; an NPU's outputs must match numpy as the reference's do.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

import cov_checks

COV = None
WORK = None
TARGET = "ref"
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def save(name, nodes, inputs, n_out=1, opset=13, inits=()):
    ins = [helper.make_tensor_value_info(k, TensorProto.INT64 if a.dtype == np.int64 else F, list(a.shape))
           for k, a in inputs.items()]
    outs = [helper.make_tensor_value_info("y%d" % i if n_out > 1 else "y", F, None) for i in range(n_out)]
    g = helper.make_graph(nodes, name, ins, outs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def E(*shape):
    return np.zeros(shape, dtype=np.float32)


def R(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 3


def T(v):
    return helper.make_tensor("t_%d" % abs(hash(str(v))), I64, [len(v)], v)


CASES = [
    # name, nodes, inputs, numpy reference
    ("relu", [helper.make_node("Relu", ["x"], ["y"])], {"x": E(0, 3)}, lambda x: np.maximum(x, 0)),
    ("add_bcast", [helper.make_node("Add", ["x", "b"], ["y"])], {"x": E(2, 0, 3), "b": R(1, 3)},
     lambda x, b: x + b),
    ("matmul_k0", [helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": E(2, 0), "b": E(0, 3)},
     lambda a, b: a @ b),
    ("matmul_m0", [helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": E(0, 4), "b": R(4, 3)},
     lambda a, b: a @ b),
    ("gemm_k0", [helper.make_node("Gemm", ["a", "b", "c"], ["y"])], {"a": E(2, 0), "b": E(0, 3), "c": R(3)},
     lambda a, b, c: a @ b + c),
    ("reducesum_empty_axis", [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
     {"x": E(2, 0)}, lambda x: x.sum()),
    ("reducesum_axis1", [helper.make_node("ReduceSum", ["x", "ax"], ["y"], keepdims=1)],
     {"x": E(3, 0), "ax": np.array([1], dtype=np.int64)}, lambda x, ax: x.sum(axis=1, keepdims=True)),
    ("softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": E(0, 5)},
     lambda x: x),
    ("concat", [helper.make_node("Concat", ["a", "b"], ["y"], axis=0)], {"a": E(0, 3), "b": R(2, 3)},
     lambda a, b: np.concatenate([a, b])),
    ("transpose", [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0, 2])], {"x": E(2, 0, 3)},
     lambda x: x.transpose(1, 0, 2)),
    ("reshape", [helper.make_node("Reshape", ["x", "s"], ["y"])],
     {"x": E(4, 0), "s": np.array([2, 0, 3], dtype=np.int64)}, lambda x, s: x.reshape(2, 0, 3)),
    ("flatten", [helper.make_node("Flatten", ["x"], ["y"], axis=1)], {"x": E(3, 0, 2)},
     lambda x: x.reshape(3, 0)),
    ("pad", [helper.make_node("Pad", ["x", "p", "c"], ["y"])],
     {"x": E(0, 2), "p": np.array([1, 0, 1, 1], dtype=np.int64), "c": np.array(5, dtype=np.float32)},
     lambda x, p, c: np.pad(x, ((1, 1), (0, 1)), constant_values=5)),
    ("gather_empty_idx", [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
     {"x": R(3, 2), "i": np.zeros((0,), dtype=np.int64)}, lambda x, i: x[i]),
    ("slice", [helper.make_node("Slice", ["x", "s", "e"], ["y"])],
     {"x": E(0, 4), "s": np.array([1], dtype=np.int64), "e": np.array([3], dtype=np.int64)},
     lambda x, s, e: x[1:3]),
    ("expand", [helper.make_node("Expand", ["x", "s"], ["y"])],
     {"x": E(0, 1), "s": np.array([0, 3], dtype=np.int64)}, lambda x, s: np.broadcast_to(x, (0, 3))),
    ("tile", [helper.make_node("Tile", ["x", "r"], ["y"])],
     {"x": E(0, 2), "r": np.array([3, 2], dtype=np.int64)}, lambda x, r: np.tile(x, (3, 2))),
    ("conv_n0", [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     {"x": E(0, 2, 5, 5), "w": R(4, 2, 3, 3)}, lambda x, w: np.zeros((0, 4, 5, 5), np.float32)),
    ("maxpool_n0", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
     {"x": E(0, 2, 4, 4)}, lambda x: np.zeros((0, 2, 2, 2), np.float32)),
    ("layernorm_rows0", [helper.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-1)],
     {"x": E(0, 4), "s": R(4)}, lambda x, s: x, 17),
    # ONNX defines a max over nothing as -inf (ReduceMax, opset 20's text).
    ("reducemax_empty_axis", [helper.make_node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)],
     {"x": E(2, 0)}, lambda x: np.full((2,), -np.inf, np.float32)),
    ("where", [helper.make_node("Greater", ["x", "z"], ["c"]), helper.make_node("Where", ["c", "x", "z"], ["y"])],
     {"x": E(0, 3), "z": R(3)}, lambda x, z: x),
    ("split", [helper.make_node("Split", ["x"], ["y0", "y1"], axis=1)], {"x": E(0, 4)},
     lambda x: (x[:, :2], x[:, 2:])),
    ("cumsum", [helper.make_node("CumSum", ["x", "ax"], ["y"])],
     {"x": E(3, 0), "ax": np.array(1, dtype=np.int64)}, lambda x, ax: np.cumsum(x, axis=1)),
    ("topk_k0", [helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=1)],
     {"x": R(2, 3), "k": np.array([0], dtype=np.int64)}, lambda x, k: x[:, :0]),
]

REFUSED = [
    ("argmax_empty_axis", [helper.make_node("ArgMax", ["x"], ["y"], axis=1, name="am")], {"x": E(2, 0)},
     "node 'am' (ArgMax)"),
    # A mean of nothing is 0/0: refused rather than made up.
    ("reducemean_empty_axis", [helper.make_node("ReduceMean", ["x"], ["y"], axes=[0], keepdims=0, name="rmean")],
     {"x": E(0, 2)}, "node 'rmean' (ReduceMean)"),
]


def check_case(name, nodes, inputs, ref, opset=13):
    want = ref(*inputs.values())
    want = list(want) if isinstance(want, tuple) else [want]
    got, r = cov_checks.run(COV, WORK, save(name, nodes, inputs, n_out=len(want), opset=opset), inputs, len(want),
                            TARGET, timeout=60)
    if got is None:
        return "%s: run failed: %s" % (name, r.stderr.strip())
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if g.shape != w.shape:
            return "%s: output %d shape %s, expected %s" % (name, i, g.shape, w.shape)
        if not np.allclose(g.astype(np.float64), w.astype(np.float64), equal_nan=True):
            return "%s: output %d is %s, expected %s" % (name, i, g, w)
    return None


def check_refused(name, nodes, inputs, where):
    got, r = cov_checks.run(COV, WORK, save(name, nodes, inputs), inputs, 1, TARGET, timeout=60)
    if got is not None:
        return "%s: ran (output %s); expected a refusal" % (name, got[0])
    if r.returncode != 1 or where not in r.stderr:
        return "%s: exit %d, expected a located error naming %s: %s" % (name, r.returncode, where, r.stderr)
    return None


def main():
    global COV, WORK, TARGET
    COV, WORK = sys.argv[1], sys.argv[2]
    os.makedirs(WORK, exist_ok=True)
    problems = []
    for TARGET in sys.argv[3:] or ["ref"]:
        problems += ["%s: %s" % (TARGET, p) for c in CASES if (p := check_case(*c))]
        problems += ["%s: %s" % (TARGET, p) for c in REFUSED if (p := check_refused(*c))]
    for p in problems:
        print(p)
    print("empty inputs: %d cases on %s, %d problems" % (len(CASES) + len(REFUSED), ", ".join(sys.argv[3:] or ["ref"]),
                                                       len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
