#!/bin/bash
# bf16 arrays: the schedule's multiplicand dtype comes from the capability the
# mapper binds, and every check rounds operands to that dtype.
#   - `covenant run` of the example ConvNet on the shipped bf16 target
#     (npu-64x64-bf16, TPU-like, int8 + bf16) and on a 32x32
#     weight-stationary bf16 array (tests/npu-sim/targets/npu-32x32-ws-bf16.json)
#     exits 0, every program matching the reference on bf16-rounded inputs
#     to 1e-4 (an f16 rounding of them differs by ~4e-3);
#   - npu-16x16 with bf16 in place of f16 (same sizes otherwise): the
#     mapper's schedule has bf16 tiles of 2 bytes per element (its DRAM
#     loads are elements x 2), the same predicted cycles as npu-16x16, and
#     `covenant verify` passes at 1e-4, the simulator multiplying bf16
#     operands (an f16 datapath would miss the reference on bf16 values).
set -u
cov=$1 src=$2 tmp=$3
mkdir -p "$tmp"
fail=0
for t in npu-64x64-bf16 "$src/tests/npu-sim/targets/npu-32x32-ws-bf16.json"; do
  out=$("$cov" run "$src/examples/convnet.onnx" --target "$t" --input "$src/examples/convnet_input.npy" 2>&1)
  rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: covenant run on $t exits $rc"; echo "$out" | grep -i check; fail=1; }
  grep -qE "rounded to bf16 where the schedule narrows them: max rel err [0-9.]+e-(0[5-9]|[1-9][0-9]) <= 0.0001  PASS" <<<"$out" ||
    { echo "FAIL: $t: the per-program check did not round to bf16 and pass"; grep -i check <<<"$out"; fail=1; }
  grep -qE "output +max rel err [0-9.e+-]+  PASS" <<<"$out" ||
    { echo "FAIL: $t: the output is not within the tolerance of the reference target"; fail=1; }
done

sed 's/"f16"/"bf16"/g; s/"name": "npu-16x16"/"name": "npu-16x16-bf16"/' \
  "$src/targets/npu-16x16.json" >"$tmp/npu-16x16-bf16.json"
grep -q '"f16"' "$tmp/npu-16x16-bf16.json" && { echo "FAIL: f16 left in the bf16 ACG"; exit 1; }
d=$("$cov" map convnet_layer2 --target "$tmp/npu-16x16-bf16.json" --dump=schedule 2>&1)
grep -qF "mac(bf16,bf16->f32)" <<<"$d" || { echo "FAIL: not bound to the bf16 mac"; fail=1; }
# x: f32[1,10,15,15] in DRAM, its tile loaded whole: 10*15*15 elements
grep -qE "place x L1 ibuf tile\[1,10,15,15\] bf16 " <<<"$d" || { echo "FAIL: x's tile is not bf16"; fail=1; }
grep -qE "load x L1 dram -> ibuf +$((10 * 15 * 15 * 2)) B" <<<"$d" ||
  { echo "FAIL: x's load is not 2 bytes per bf16 element"; grep "load x" <<<"$d"; fail=1; }
a=$("$cov" map convnet_layer2 --target npu-16x16 2>&1 | grep -oE '[0-9]+ cycles')
b=$("$cov" map convnet_layer2 --target "$tmp/npu-16x16-bf16.json" 2>&1 | grep -oE '[0-9]+ cycles')
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: predicted $b on bf16, $a on f16 (same bytes, same speeds)"; fail=1; }
v=$("$cov" verify convnet_layer1 convnet_layer2 --target "$tmp/npu-16x16-bf16.json" --scale 2 --iterations 2 \
    --tolerance 1e-4 2>&1) || { echo "FAIL: verify on the bf16 ACG"; echo "$v"; fail=1; }
[ $fail -eq 0 ] && echo "bf16: ok"
exit $fail
