#!/bin/bash
# FP8 arrays (OCP E4M3 and E5M2 multiplicands, f32 accumulators): the
# schedule's multiplicand dtype comes from the capability the mapper binds,
# and every check rounds operands to that dtype (common/fp8.c).
#   - `covenant run` of the example ConvNet on an E4M3 array
#     (tests/npu-sim/targets/npu-16x16-e4m3.json) and on the same array with
#     E5M2 exits 0: every program matches the reference on operands rounded
#     to e4m3 (e5m2) to 1e-4, and the output is within the datapath's
#     rounding allowance of the f32 reference (2^(2-p): 0.25 for e4m3's 4
#     significand bits, 0.5 for e5m2's 3; cli/cmd_run.c; measured 7.0e-2
#     and 1.4e-1);
#   - the mapper binds mac(e4m3,e4m3->f32) and places x's tile as e4m3, one
#     byte per element (its DRAM load is 10 x 15 x 15 bytes), and predicts
#     fewer cycles than npu-16x16's f16 (half the bytes moved);
#   - `covenant verify` passes at 1e-4 on both: the simulator multiplies the
#     FP8 values (a wider datapath would miss the reference on them).
set -u
cov=$1 src=$2 tmp=$3
mkdir -p "$tmp"
fail=0
e4=$src/tests/npu-sim/targets/npu-16x16-e4m3.json
sed 's/"e4m3"/"e5m2"/g; s/"name": "npu-16x16-e4m3"/"name": "npu-16x16-e5m2"/' "$e4" >"$tmp/npu-16x16-e5m2.json"
for dt in e4m3 e5m2; do
  t=$e4 allow=0.25
  [ $dt = e5m2 ] && t=$tmp/npu-16x16-e5m2.json allow=0.5
  out=$("$cov" run "$src/examples/convnet.onnx" --target "$t" --input "$src/examples/convnet_input.npy" 2>&1)
  rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: covenant run on $t exits $rc"; echo "$out" | grep -i -E "check|err"; fail=1; }
  grep -qE "rounded to $dt where the schedule narrows them: max rel err [0-9.]+e[-+][0-9]+ <= 0.0001  PASS" <<<"$out" ||
    { echo "FAIL: $dt: the per-program check did not round to $dt and pass"; grep -i check <<<"$out"; fail=1; }
  grep -qE "output +max rel err [0-9.e+-]+  (PASS|above the tolerance by the datapath's rounding \(the narrowed check passed; allowed $allow\))" <<<"$out" ||
    { echo "FAIL: $dt: the output is not within the rounding allowance $allow of the reference"; grep "max rel" <<<"$out"; fail=1; }
  grep -q "2 rows: 2 groups fused, 0 calls one by one on the NPU, 0 calls on the CPU" <<<"$out" ||
    { echo "FAIL: $dt: not every group ran fused on the NPU"; fail=1; }
  d=$("$cov" map convnet_layer2 --target "$t" --dump=schedule 2>&1)
  grep -qF "mac($dt,$dt->f32)" <<<"$d" || { echo "FAIL: not bound to the $dt mac"; fail=1; }
  grep -qE "place x L1 ibuf tile\[1,10,15,15\] $dt " <<<"$d" || { echo "FAIL: x's tile is not $dt"; fail=1; }
  grep -qE "load x L1 dram -> ibuf +$((10 * 15 * 15)) B" <<<"$d" ||
    { echo "FAIL: x's load is not 1 byte per $dt element"; grep "load x" <<<"$d"; fail=1; }
  a=$("$cov" map convnet_layer2 --target npu-16x16 2>&1 | grep -oE '[0-9]+ cycles' | grep -oE '[0-9]+')
  b=$("$cov" map convnet_layer2 --target "$t" 2>&1 | grep -oE '[0-9]+ cycles' | grep -oE '[0-9]+')
  [ -n "$a" ] && [ -n "$b" ] && [ "$b" -le "$a" ] || { echo "FAIL: predicted $b cycles on $dt, $a on f16"; fail=1; }
  v=$("$cov" verify convnet_layer1 convnet_layer2 --target "$t" --scale 2 --iterations 2 --tolerance 1e-4 2>&1) ||
    { echo "FAIL: verify on the $dt ACG"; echo "$v"; fail=1; }
done
[ $fail -eq 0 ] && echo "fp8: ok"
exit $fail
