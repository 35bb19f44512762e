"""make_attention.py OUT.onnx SEQ HEADS DIM MASK: a made-up self-attention
model as the exporters write it. The input x [1, SEQ, 3*HEADS*DIM] is split
into Q, K and V (Slice), heads split (Reshape, Transpose; K transposed to
[1, HEADS, DIM, SEQ]), then MatMul(Q, K^T), the scale, the mask, Softmax
over the last axis, MatMul(P, V) and the heads merged back.

MASK: "causal" scales by Mul and masks with Where(j > i, -inf, scores)
(TorchScript's GPT-2), "add" scales by Div and adds a constant causal mask
(0 on and below the diagonal, float32's lowest above: the dynamo export),
"input" scales by Mul and adds a mask given as a second input m
[1, 1, SEQ, SEQ] (BERT's padding mask is such a run-time value), "none"
scales by Mul and does not mask."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out, seq, heads, dim, mask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    e = heads * dim
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    for i, part in enumerate("qkv"):
        nodes.append(helper.make_node("Slice", ["x", const(part + "_lo", np.array([i * e], np.int64)),
                                                const(part + "_hi", np.array([(i + 1) * e], np.int64)),
                                                const(part + "_ax", np.array([2], np.int64))], [part + "_s"]))
        nodes.append(helper.make_node("Reshape", [part + "_s", const(part + "_shape", np.array([1, seq, heads, dim],
                                                                                             np.int64))], [part + "_r"]))
        perm = [0, 2, 3, 1] if part == "k" else [0, 2, 1, 3]
        nodes.append(helper.make_node("Transpose", [part + "_r"], [part + "_t"], perm=perm))
    nodes.append(helper.make_node("MatMul", ["q_t", "k_t"], ["scores"]))
    scale = np.array(dim ** -0.5, np.float32)
    if mask == "add":
        nodes.append(helper.make_node("Div", ["scores", const("root", np.float32(1.0) / scale)], ["scaled"]))
    else:
        nodes.append(helper.make_node("Mul", ["scores", const("scale", scale)], ["scaled"]))
    above = np.triu(np.ones((seq, seq), bool), 1).reshape(1, 1, seq, seq)
    if mask == "causal":
        nodes.append(helper.make_node("Where", [const("above", above), const("ninf", np.float32(-np.inf)), "scaled"],
                                      ["masked"]))
    elif mask == "add":
        add = np.where(above, np.finfo(np.float32).min, 0).astype(np.float32)
        nodes.append(helper.make_node("Add", ["scaled", const("causal", add)], ["masked"]))
    elif mask == "input":
        nodes.append(helper.make_node("Add", ["scaled", "m"], ["masked"]))
    else:
        nodes.append(helper.make_node("Identity", ["scaled"], ["masked"]))
    nodes.append(helper.make_node("Softmax", ["masked"], ["p"], axis=-1))
    nodes.append(helper.make_node("MatMul", ["p", "v_t"], ["o"]))
    nodes.append(helper.make_node("Transpose", ["o"], ["o_t"], perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Reshape", ["o_t", const("o_shape", np.array([1, seq, e], np.int64))], ["y"]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, 3 * e])]
    if mask == "input":
        inputs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 1, seq, seq]))
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, e])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
