#!/bin/bash
# A max pool runs before the element-wise ops that commute with it
# (mapper/map_epilogue.c pool_first): bias add (a vector the pool loops do
# not index), ReLU, ReLU6, max/min with a scalar. max over a window of f(x)
# is f(max of x) for f non-decreasing, rounding included, so the result is
# the same bits, and those ops touch a quarter of the elements of a 2x2 pool.
#   - convnet_layer1 (conv + bias + ReLU + 2x2 pool): the pool is epilogue op
#     0 on both shipped NPUs, and its SIMD unit is busy under 1,500 cycles on
#     npu-16x16 (2,760 when the pool came last, 1,650 when each window's
#     first element was copied before its three max steps): the program has
#     no copy, and three max steps per bias add (one per channel chunk);
#   - a ReLU right after the pool (a conv without bias + ReLU + pool, or
#     after a preloaded bias) is the pool's starting value: max(0, window)
#     (map_fold_relu_into_pool), one SIMD pass fewer;
#   - the example ConvNet, a conv + ReLU + pool, a conv + bias + ReLU6 + 2x2 pool (the pool goes
#     first) and a conv + bias + Sigmoid + 2x2 pool (monotone, but not one of
#     the listed ops: the pool stays last) agree with the reference on both
#     NPUs, with 0 calls on the CPU.
set -u
cov=$1 tmp=$2 src=$3 py=${4:-python3}
mkdir -p "$tmp"
fail=0
for t in npu-16x16 npu-32x32-os; do
  out=$("$cov" map convnet_layer1 --target "$t" --explain 2>&1) || { echo "FAIL: map on $t"; fail=1; continue; }
  grep -qE "^  epilogue 0 \(maxpool on [a-z0-9_]+\): r0 = pool_max\(r0\) window 2x2" <<<"$out" ||
    { echo "FAIL: convnet_layer1 on $t: the pool is not first"; grep epilogue <<<"$out"; fail=1; }
done
"$cov" compile convnet_layer1 -t npu-16x16 -o "$tmp/l1" >/dev/null 2>&1 || { echo "FAIL: compile"; exit 1; }
busy=$("$cov" sim "$tmp/l1/program.npu" 2>&1 | awk '$1 == "simd" {print $3}')
echo "convnet_layer1 on npu-16x16: SIMD busy $busy cycles"
[ -n "$busy" ] && [ "$busy" -lt 1500 ] || { echo "FAIL: SIMD busy $busy (>= 1500)"; fail=1; }
dis=$("$cov" disasm "$tmp/l1/program.npu" 2>&1)
copies=$(grep -c " simd copy " <<<"$dis") maxes=$(grep -c " simd max " <<<"$dis") adds=$(grep -c " simd add " <<<"$dis")
echo "convnet_layer1 on npu-16x16: $copies copies, $maxes max steps, $adds bias adds"
[ "$copies" -eq 0 ] && [ "$adds" -gt 0 ] && [ "$maxes" -eq $((3 * adds)) ] ||
  { echo "FAIL: a 2x2 window takes 3 max steps, no copy"; fail=1; }
"$py" - "$tmp" <<'PY' || { echo "FAIL: could not write the models"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(7)
def model(name, act, bias=True):
    w = numpy_helper.from_array((rng.standard_normal((16, 8, 3, 3)) * 0.3).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    inits = [w, b] if bias else [w]
    nodes = [helper.make_node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv")]
    last = "c"
    if act == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["a"], name="relu"))
        last = "a"
    elif act == "relu6":
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["a"], name="clip"))
        last = "a"
    elif act == "sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["c"], ["a"], name="sig"))
        last = "a"
    nodes.append(helper.make_node("MaxPool", [last], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool"))
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 24, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, f"{sys.argv[1]}/{name}.onnx")
model("relu6_pool", "relu6")
model("relu_pool", "relu", bias=False)
model("sigmoid_pool", "sigmoid")
PY
for t in npu-16x16 npu-32x32-os; do
  for m in "$src/examples/convnet.onnx" "$tmp/relu6_pool.onnx" "$tmp/sigmoid_pool.onnx" "$tmp/relu_pool.onnx"; do
    r=$("$cov" run "$m" --target "$t" 2>&1) || { echo "FAIL: $m on $t"; tail -5 <<<"$r"; fail=1; continue; }
    grep -qE "max rel err [0-9.e+-]+  PASS" <<<"$r" && grep -q "0 calls on the CPU" <<<"$r" &&
      grep -qE "rounded to f16 where the schedule narrows them: max rel err [0-9.e+-]+ <= [0-9.e+-]+  PASS" <<<"$r" ||
      { echo "FAIL: $m on $t: not PASS or calls on the CPU"; tail -8 <<<"$r"; fail=1; }
  done
  out=$("$cov" map "$tmp/relu6_pool.onnx" --target "$t" --group 0 --explain 2>&1)
  grep -qE "^  epilogue 0 \(maxpool on [a-z0-9_]+\)" <<<"$out" ||
    { echo "FAIL: relu6_pool on $t: the pool is not first"; grep epilogue <<<"$out"; fail=1; }
  out=$("$cov" map "$tmp/relu_pool.onnx" --target "$t" --group 0 --explain 2>&1)
  grep -qE "^  epilogue 0 \(maxpool on [a-z0-9_]+\): r0 = pool_max\(r0, from 0\)" <<<"$out" &&
    ! grep -q "relu(" <<<"$out" ||
    { echo "FAIL: relu_pool on $t: the ReLU is not the pool's starting value"; grep epilogue <<<"$out"; fail=1; }
  out=$("$cov" map "$tmp/sigmoid_pool.onnx" --target "$t" --group 0 --explain 2>&1)
  grep -qE "^  epilogue 0 \(maxpool on [a-z0-9_]+\)" <<<"$out" &&
    { echo "FAIL: sigmoid_pool on $t: the pool moved before the sigmoid"; grep epilogue <<<"$out"; fail=1; }
done
exit $fail
