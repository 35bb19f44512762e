#!/bin/bash
# An element-wise-only group (Relu on 1x16x32x32; the mapper fills vmem with
# the double-buffered input and output tiles and plans the epilogue's
# register 0 in place, reserving no bytes for it): the code generator writes
# the op into the output tile itself as planned (npu_epilogue.c), so the
# group runs on the NPU (it used to fall back to the CPU: "the epilogue needs
# 16384 more bytes in vmem than the schedule leaves free (0)"). Also a
# larger Relu and a Relu then Clip chain, on both NPUs, against the reference.
set -u
cov=$1 tmp=$2 py=${3:-python3}
mkdir -p "$tmp"
fail=0
"$py" - "$tmp" <<'PY' || { echo "FAIL: could not write the models"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
def save(name, shape, nodes, inits=()):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, f"{sys.argv[1]}/{name}.onnx")
save("relu16", [1, 16, 32, 32], [helper.make_node("Relu", ["x"], ["y"])])
save("relu64", [1, 64, 56, 56], [helper.make_node("Relu", ["x"], ["y"])])
lo = numpy_helper.from_array(np.array(-0.5, np.float32), "lo")
hi = numpy_helper.from_array(np.array(0.75, np.float32), "hi")
save("tanhclip", [1, 16, 32, 32], [helper.make_node("Tanh", ["x"], ["t"]),
                                   helper.make_node("Clip", ["t", "lo", "hi"], ["y"])], [lo, hi])
PY
out=$("$cov" map "$tmp/relu16.onnx" --target npu-16x16 --group 0 --explain 2>&1)
grep -q "(register 0 in place)" <<<"$out" || { echo "FAIL: relu16: the mapper no longer plans register 0 in place"; fail=1; }
for t in npu-16x16 npu-32x32-os; do
  for m in relu16 relu64 tanhclip; do
    r=$("$cov" run "$tmp/$m.onnx" --target $t 2>&1) || { echo "FAIL: $m on $t"; tail -5 <<<"$r"; fail=1; continue; }
    grep -qE "y +max rel err [0-9.e+-]+  PASS" <<<"$r" && grep -q "0 calls on the CPU" <<<"$r" &&
      grep -q "groups fused, 0 calls one by one on the NPU, 0 calls on the CPU" <<<"$r" || { echo "FAIL: $m on $t: not on the NPU or not PASS"; tail -6 <<<"$r"; fail=1; }
  done
done
exit $fail
