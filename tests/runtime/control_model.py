#!/usr/bin/env python3
"""Writes the while-loop models of the control-flow artifact tests
(hostile_control.sh): `count` (inputs n: i64, x: f32[4]) runs its body
until the counter i reaches n (a trip count that depends on the data, no
constant one), carrying i and s <- s * x (a group the NPU compiles); with
--host-only the body has only the counter (host steps), so that a run to the
iteration limit is quick; with --grow it carries s <- Concat(s, x) instead, a
value whose shape changes from one iteration to the next. With --scan: a
for loop (a constant trip count of 20, no condition) carrying s <- s * x + x
and stacking each iteration's relu(s) (a scan output, [20, 4]); its input n is unused.
With --select: no loop; y = x[NonZero(x > 0)] and the indices, sizes that
depend on the data (at most 4), n unused; with --select-big, y expanded to
[5000000, len(y)] too, a capacity (2e7 elements) over the artifacts' limit.

    /usr/bin/python3 control_model.py OUT.onnx [--host-only | --grow | --scan | --select | --select-big]
"""
import sys

from onnx import TensorProto as T
from onnx import helper as h
from onnx import save


def scan_model(out):
    body = h.make_graph([h.make_node("Mul", ["s", "x"], ["sx"], name="scale"),
                         h.make_node("Add", ["sx", "x"], ["s1"], name="shift"),
                         h.make_node("Relu", ["s1"], ["r"], name="relu"),
                         h.make_node("Identity", ["cin"], ["c"], name="same")], "body",
                        [h.make_tensor_value_info("k", T.INT64, []), h.make_tensor_value_info("cin", T.BOOL, []),
                         h.make_tensor_value_info("s", T.FLOAT, [4])],
                        [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("s1", T.FLOAT, [4]),
                         h.make_tensor_value_info("r", T.FLOAT, [4])])
    g = h.make_graph([
        h.make_node("Constant", [], ["m"], value=h.make_tensor("m", T.INT64, [], [20])),
        h.make_node("Loop", ["m", "", "x"], ["y", "rows"], name="for", body=body),
    ], "scan", [h.make_tensor_value_info("n", T.INT64, []), h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4]), h.make_tensor_value_info("rows", T.FLOAT, [20, 4])])
    save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), out)


def select_model(out, big):
    expand = [h.make_node("Constant", [], ["rows"], value=h.make_tensor("rows", T.INT64, [2], [5000000, 1])),
              h.make_node("Expand", ["y", "rows"], ["wide"], name="wide")] if big else []
    g = h.make_graph(expand + [
        h.make_node("Constant", [], ["zero"], value=h.make_tensor("zero", T.FLOAT, [], [0.0])),
        h.make_node("Constant", [], ["ax"], value=h.make_tensor("ax", T.INT64, [1], [0])),
        h.make_node("Greater", ["x", "zero"], ["pos"], name="positive"),
        h.make_node("NonZero", ["pos"], ["idx"], name="where"),
        h.make_node("Squeeze", ["idx", "ax"], ["flat"], name="flat"),
        h.make_node("Gather", ["x", "flat"], ["y"], name="pick", axis=0),
    ], "select", [h.make_tensor_value_info("n", T.INT64, []), h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [None]), h.make_tensor_value_info("idx", T.INT64, [1, None])] +
        ([h.make_tensor_value_info("wide", T.FLOAT, [5000000, None])] if big else []))
    save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), out)


def main():
    if "--scan" in sys.argv[2:]:
        return scan_model(sys.argv[1])
    if "--select" in sys.argv[2:] or "--select-big" in sys.argv[2:]:
        return select_model(sys.argv[1], "--select-big" in sys.argv[2:])
    out, host_only, grow = sys.argv[1], "--host-only" in sys.argv[2:], "--grow" in sys.argv[2:]
    nodes = [h.make_node("Constant", [], ["one"], value=h.make_tensor("one", T.INT64, [], [1])),
             h.make_node("Add", ["i", "one"], ["i1"], name="inc"),
             h.make_node("Less", ["i1", "n"], ["c"], name="more")]
    ins = [h.make_tensor_value_info("k", T.INT64, []), h.make_tensor_value_info("cin", T.BOOL, []),
           h.make_tensor_value_info("i", T.INT64, [])]
    outs = [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("i1", T.INT64, [])]
    carried, results = ["zero"], [h.make_tensor_value_info("count", T.INT64, [])]
    if not host_only:
        nodes.append(h.make_node("Concat", ["s", "x"], ["s1"], name="grow", axis=0) if grow else
                     h.make_node("Mul", ["s", "x"], ["s1"], name="scale"))
        ins.append(h.make_tensor_value_info("s", T.FLOAT, [None] if grow else [4]))
        outs.append(h.make_tensor_value_info("s1", T.FLOAT, [None] if grow else [4]))
        carried.append("x")
        results.append(h.make_tensor_value_info("y", T.FLOAT, [None] if grow else [4]))
    body = h.make_graph(nodes, "body", ins, outs)
    g = h.make_graph([
        h.make_node("Constant", [], ["t"], value=h.make_tensor("t", T.BOOL, [], [1])),
        h.make_node("Constant", [], ["zero"], value=h.make_tensor("zero", T.INT64, [], [0])),
        h.make_node("Loop", ["", "t"] + carried, [r.name for r in results], name="while", body=body),
    ], "count", [h.make_tensor_value_info("n", T.INT64, []), h.make_tensor_value_info("x", T.FLOAT, [4])], results)
    save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), out)


if __name__ == "__main__":
    main()
