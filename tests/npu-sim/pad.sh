#!/bin/bash
# Loop extents padded to the array's size (mapper/map_pad.c): a 1x1
# convolution of 58 channels (2 x 29: shufflenet_v2's) on npu-16x16
#   - is mapped with both channel loops padded to 64 and 16 of them on the
#     rows and the columns (without padding: 2 rows, unless k digits fill
#     them), chosen or kept within 1% of the choice, and predicted at under
#     a third of the cycles the mapper finds for it unpadded (100,738 before);
#   - the schedule interpreter agrees with the reference, on both NPUs, for
#     that layer and a 1000-output matmul (padded to 1008 on npu-16x16);
#   - the compiled program, run in the simulator with its bias and ReLU
#     epilogue (outputs past the tensor dropped by the DMA stores), agrees
#     with the reference target on both NPUs (covenant run's check).
set -u
cov=$1 tmp=$2 py=${3:-python3}
mkdir -p "$tmp"
fail=0
out=$("$cov" map --codelet conv2d --shape 1x58x28x28 --shape 58x58x1x1 --target npu-16x16 --explain --check 2>&1)
# the padded schedule is chosen or kept within 1% of the chosen one (k
# digits fill the rows of the unpadded one too: c@2 with c:29 as digits of k)
pad_alt=$(grep -E "^  [0-9]\. [0-9]+ cycles \(\+0\.[0-9]%\): .*c@16 kg@16" <<<"$out")
if ! grep -q "loops n=1 g=1 kg=64 p=28 q=28 c=64(red)" <<<"$out" && [ -z "$pad_alt" ]; then
  echo "FAIL: channels not padded (16 on the rows and the columns) in the chosen or a kept schedule"
  echo "$out" | grep -E "loops|cycles"; fail=1
fi
cyc=$(awk '/^cost:/{print $2}' <<<"$out")
if [ -z "$cyc" ] || [ "$cyc" -gt 33000 ]; then echo "FAIL: predicted $cyc cycles"; fail=1; fi
for t in npu-16x16 npu-32x32-os; do
  for args in "--codelet conv2d --shape 1x58x28x28 --shape 58x58x1x1" "--codelet matmul --shape 4x1024 --shape 1024x1000"; do
    out=$("$cov" map $args --target $t --check 2>&1)
    grep -q "check: .*: ok" <<<"$out" || { echo "FAIL: $t $args: interpreter check"; echo "$out" | tail -2; fail=1; }
  done
done
out=$("$cov" map --codelet matmul --shape 4x1024 --shape 1024x1000 --target npu-16x16 --explain 2>&1)
grep -q "loops m=4 n=1008" <<<"$out" || { echo "FAIL: matmul n not padded"; echo "$out" | grep loops; fail=1; }
# a conv + bias + relu of 58 channels and one of 116 -> 58 with a 3x3 window, as ONNX
"$py" - "$tmp/pad.onnx" <<'PY' || { echo "FAIL: could not write the model"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(7)
w1 = numpy_helper.from_array((rng.standard_normal((58, 58, 1, 1)) * 0.2).astype(np.float32), "w1")
b1 = numpy_helper.from_array(rng.standard_normal(58).astype(np.float32), "b1")
w2 = numpy_helper.from_array((rng.standard_normal((116, 58, 3, 3)) * 0.1).astype(np.float32), "w2")
b2 = numpy_helper.from_array(rng.standard_normal(116).astype(np.float32), "b2")
nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[1, 1], name="conv1"),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv2")]
g = helper.make_graph(nodes, "pad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 58, 14, 14])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 116, 14, 14])], [w1, b1, w2, b2])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.save(m, sys.argv[1])
PY
for t in npu-16x16 npu-32x32-os; do
  out=$("$cov" run "$tmp/pad.onnx" --target $t 2>&1) || { echo "FAIL: run on $t"; echo "$out" | tail -5; fail=1; continue; }
  grep -qE "y +max rel err [0-9.e+-]+  PASS" <<<"$out" || { echo "FAIL: run on $t: no PASS"; echo "$out" | tail -5; fail=1; }
  grep -q "0 calls on the CPU" <<<"$out" || { echo "FAIL: run on $t: calls on the CPU"; fail=1; }
done
exit $fail
