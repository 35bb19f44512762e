#!/usr/bin/env python3
"""Writes a chain model of N nodes: x -> Relu -> Add(., c) -> Relu -> ...
on a small f32 tensor, for timing how each pass scales with graph size.

usage: gen_chain.py N OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    shape = [1, 16]
    nodes, prev = [], "x"
    for i in range(n):
        y = "t%d" % i
        if i % 2 == 0:
            nodes.append(helper.make_node("Relu", [prev], [y], name="relu%d" % i))
        else:
            nodes.append(helper.make_node("Add", [prev, "c"], [y], name="add%d" % i))
        prev = y
    c = numpy_helper.from_array(np.full(shape, 0.5, dtype=np.float32), "c")
    g = helper.make_graph(nodes, "chain%d" % n,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, shape)],
                          initializer=[c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, out)


if __name__ == "__main__":
    main()
