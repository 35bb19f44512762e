#!/bin/bash
# The int8 exports on both NPUs: every integer layer (conv2d_acc /
# matmul_acc + i32 bias + requantisation) must run as ONE NPU program, the
# requantisation in the SIMD epilogue, never on the CPU; on npu-32x32-os
# every compute group (QuantizeLinear, the i8 max pools and DequantizeLinear
# too) runs on the NPU, none on the CPU; the output must be bit-exact with
# the reference target (model_int8_* compare with onnxruntime). Then an ACG
# whose SIMD unit lacks cast f32 -> i8 (npu-32x32-os less that capability):
# the mapper must refuse the epilogue with the reason and `covenant run`
# fall back, still bit-exact.
set -u
cov=$1 src=$2 models=$3 tmp=$4
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
check() { # model target: fused integer layers, no CPU requantisation
  local out rc
  out=$("$cov" run "$models/$1.onnx" --target "$2" --input "$src/tests/models/$1_input.npy" 2>&1)
  rc=$?
  if [ $rc != 0 ] || ! grep -qE "max rel err 0.000e\+00  PASS" <<<"$out"; then
    echo "FAIL: $1 on $2 (exit $rc) is not bit-exact with the reference:"
    echo "$out" | tail -15
    fail=1
    return
  fi
  local rows bad
  rows=$(grep -E '^[0-9]+ .*_acc' <<<"$out")
  bad=$(grep -vF "npu, fused" <<<"$rows"; grep -E 'requant.*cpu:' <<<"$out")
  if [ -z "$rows" ] || [ -n "$bad" ]; then
    echo "FAIL: $1 on $2: an integer layer is not one NPU program:"
    echo "$out"
    fail=1
    return
  fi
  if [ "$2" = npu-32x32-os ] &&
     ! grep -qE "^ran on npu-32x32-os: ([0-9]+) of \1 compute groups fused \(one program each\), 0 calls one by one on the NPU, 0 on the CPU" <<<"$out"; then
    echo "FAIL: $1 on $2: a compute group did not run on the NPU:"
    echo "$out"
    fail=1
    return
  fi
  echo "ok   $1 on $2: $(grep '^ran on' <<<"$out" | cut -d: -f2 | cut -d'(' -f1)(none on the CPU), $(grep -c . <<<"$rows") integer layers with their requantisation; $(grep '^total:' <<<"$out" | cut -d, -f1)"
}
for m in int8_qdq_cnn int8_qop_cnn; do
  check "$m" npu-32x32-os
  # npu-16x16 (f16 array): its 2048-term head is not exact in f32 and runs on
  # the CPU, with that reason; every other group (convolutions with their
  # requantisation, pools, quantize, dequantize) is one NPU program
  out=$("$cov" run "$models/$m.onnx" --target npu-16x16 --input "$src/tests/models/${m}_input.npy" 2>&1)
  if ! grep -qF "ran on npu-16x16: 6 of 7 compute groups fused" <<<"$out" ||
     ! grep -qE "^6 .*matmul_acc .*cpu: matmul_acc needs mac\(i8,i8->i32\)" <<<"$out" ||
     ! grep -qE "max rel err 0.000e\+00  PASS" <<<"$out"; then
    echo "FAIL: $m on npu-16x16:"
    echo "$out"
    fail=1
  else
    echo "ok   $m on npu-16x16: 6 of 7 groups one NPU program each; the 2048-term head on the CPU (not exact on an f16 array)"
  fi
done
acg=$tmp/npu-nocast.json
sed '/"cast", "in": "f32", "out": "i8"/d; s/"name": "npu-32x32-os"/"name": "npu-nocast"/' \
  "$src/targets/npu-32x32-os.json" >"$acg"
grep -q '"out": "i8", "throughput"' "$acg" || { echo "FAIL: the ACG lost every i8 cast"; exit 1; }
out=$("$cov" run "$models/int8_qdq_cnn.onnx" --target "$acg" \
      --input "$src/tests/models/int8_qdq_cnn_input.npy" 2>&1)
rc=$?
if [ $rc != 0 ] || ! grep -qE "max rel err 0.000e\+00  PASS" <<<"$out" ||
   ! grep -qF "the epilogue op cast(f32->i8) from requant_i8 needs a SIMD capability; npu-nocast offers none" <<<"$out"; then
  echo "FAIL: without cast f32->i8 (exit $rc):"
  echo "$out"
  fail=1
else
  echo "ok   without cast f32->i8 the mapper declines the epilogue with the reason; run falls back, bit-exact"
fi
exit $fail
