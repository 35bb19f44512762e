#!/bin/bash
# A bias preloaded into the array's accumulators (mapper/map_bias.c): a
# 1x1 convolution 16 -> 96 at 56x56 with bias and ReLU6 (mobilenet_v2's
# expansion layers, bound by the SIMD epilogue)
#   - on npu-16x16 (which has dram -> bbuf -> pe_array) the mapper starts
#     the accumulators from the bias and leaves only the clip (one relu_min) on the SIMD
#     unit, for fewer predicted cycles than with the add in the epilogue;
#   - the simulated program (gemm `bias` flag) agrees with the reference
#     target on npu-16x16 and on npu-32x32-os (output-stationary: no
#     preload there), with no call on the CPU.
set -u
cov=$1 tmp=$2 py=${3:-python3}
mkdir -p "$tmp"
fail=0
"$py" - "$tmp/pw.onnx" <<'PY' || { echo "FAIL: could not write the model"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(3)
w = numpy_helper.from_array((rng.standard_normal((96, 16, 1, 1)) * 0.3).astype(np.float32), "w")
b = numpy_helper.from_array(rng.standard_normal(96).astype(np.float32), "b")
lo = numpy_helper.from_array(np.array(0, np.float32), "lo")
hi = numpy_helper.from_array(np.array(6, np.float32), "hi")
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1], name="conv"),
         helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip")]
g = helper.make_graph(nodes, "bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 56, 56])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 96, 56, 56])], [w, b, lo, hi])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.save(m, sys.argv[1])
PY
out=$("$cov" map "$tmp/pw.onnx" --target npu-16x16 --group 0 --explain 2>&1)
grep -q "accumulators start from bias_add.b, preloaded by pe_array" <<<"$out" ||
  { echo "FAIL: the bias is not preloaded"; echo "$out" | grep -E "epilogue|place bias"; fail=1; }
grep -q "place bias_add.b L1 bbuf" <<<"$out" || { echo "FAIL: the bias is not in bbuf"; fail=1; }
grep -q "epilogue 0 (clip on simd): r0 = relu_min(r0, 6)" <<<"$out" || { echo "FAIL: the epilogue still adds"; fail=1; }
# the same ACG without a path for the bias to the array keeps the add on
# the SIMD unit, at more predicted cycles
sed 's/"name": "bbuf"/"name": "bbuf_unused"/; s/"from": "bbuf", "to": "pe_array"/"from": "bbuf_unused", "to": "vmem"/' \
  "$(dirname "$0")/../../targets/npu-16x16.json" >"$tmp/nobias.json"
sed -i 's/"from": "dram", "to": "bbuf"/"from": "dram", "to": "bbuf_unused"/' "$tmp/nobias.json"
ref=$("$cov" map "$tmp/pw.onnx" --target "$tmp/nobias.json" --group 0 --explain 2>&1)
# Without bbuf's path the cost model decides between the SIMD add and a
# preload over another input path (ibuf: the SIMD add's two f32 operands
# cost 8 elements per cycle); either way never through bbuf_unused, and
# the program runs on the NPU and is right.
grep -q "place bias_add.b L1 bbuf_unused" <<<"$ref" && { echo "FAIL: without bbuf's path the bias still goes through it"; fail=1; }
c1=$(awk '/^cost:/{print $2}' <<<"$out") c0=$(awk '/^cost:/{print $2}' <<<"$ref")
if [ -z "$c1" ] || [ -z "$c0" ] || [ "$c1" -gt "$c0" ]; then echo "FAIL: preloaded over bbuf $c1 cycles, without bbuf $c0"; fail=1; fi
out0=$("$cov" run "$tmp/pw.onnx" --target "$tmp/nobias.json" 2>&1)
grep -qE "y +max rel err [0-9.e+-]+  PASS" <<<"$out0" && grep -q "0 calls on the CPU" <<<"$out0" ||
  { echo "FAIL: run without bbuf"; echo "$out0" | tail -5; fail=1; }
for t in npu-16x16 npu-32x32-os; do
  out=$("$cov" run "$tmp/pw.onnx" --target $t 2>&1) || { echo "FAIL: run on $t"; echo "$out" | tail -5; fail=1; continue; }
  grep -qE "y +max rel err [0-9.e+-]+  PASS" <<<"$out" || { echo "FAIL: run on $t: no PASS"; echo "$out" | tail -5; fail=1; }
  grep -q "0 calls on the CPU" <<<"$out" || { echo "FAIL: run on $t: calls on the CPU"; fail=1; }
done
exit $fail
