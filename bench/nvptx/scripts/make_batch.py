#!/usr/bin/env python3
"""make_batch.py IN.onnx N OUT.onnx: the model with batch dimension N.

Sets the first dimension of every graph input to N and drops the recorded
shapes of outputs and intermediate values (shape inference recomputes
them). A model whose Reshape targets hard-code the batch keeps them: it then
fails to load or compile at batch N, and the caller reports that."""
import sys

import onnx


def main():
    src, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    m = onnx.load(src)
    inits = {i.name for i in m.graph.initializer}
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = i.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_param")
            dims[0].dim_value = n
    for o in m.graph.output:
        dims = o.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]
    onnx.save(m, dst)


if __name__ == "__main__":
    main()
