#!/bin/bash
# An ACG without the obuf -> simd edge (npu-16x16 less that edge): the
# mapper must not place an epilogue that reads the output tile over it, the
# code generator must not write a program the simulator refuses, and
# `covenant run` must run the model anyway, each group call by call with the
# reason, checked against the reference (once compile succeeded and sim
# refused the program, run aborted the whole model).
set -u
cov=$1 src=$2 tmp=$3
rm -rf "$tmp"
mkdir -p "$tmp"
acg=$tmp/npu-noedge.json
sed '/"from": "obuf", "to": "simd"/d; s/"name": "npu-16x16"/"name": "npu-noedge"/' \
  "$src/targets/npu-16x16.json" >"$acg"
fail=0
grep -q '"from": "obuf", "to": "simd"' "$acg" && { echo "FAIL: edge still there"; exit 1; }
"$cov" acg check "$acg" >/dev/null || { echo "FAIL: acg check"; fail=1; }
# compile: refused with the reason, or a program the simulator runs
if out=$("$cov" compile convnet_layer1 --target "$acg" -o "$tmp/prog" 2>&1); then
  "$cov" sim "$tmp/prog/program.npu" --target "$acg" >/dev/null 2>"$tmp/sim.err" ||
    { echo "FAIL: compile wrote a program that sim refuses: $(cat "$tmp/sim.err")"; fail=1; }
else
  grep -qF "no edge obuf -> simd" <<<"$out" || { echo "FAIL: compile: $out"; fail=1; }
fi
out=$("$cov" map convnet_layer1 --target "$acg" --check 2>&1)
rc=$?
[ $rc = 1 ] && grep -qF "cannot read the output tile in 'obuf'" <<<"$out" ||
  { echo "FAIL: map (exit $rc): $out"; fail=1; }
# run: falls back, still correct against ref
out=$("$cov" run "$src/examples/convnet.onnx" --target "$acg" \
      --input "$src/examples/convnet_input.npy" 2>&1)
rc=$?
if [ $rc != 0 ] || ! grep -qE "output +max rel err [0-9.e+-]+  PASS" <<<"$out" ||
   ! grep -qF "group not fused: conv1: the epilogue on 'simd' cannot read the output tile in 'obuf'" <<<"$out"; then
  echo "FAIL: run (exit $rc)"
  echo "$out" | tail -12
  fail=1
fi
[ $fail = 0 ] && echo "missing obuf -> simd edge: mapper refuses the epilogue, run falls back, PASS"
exit $fail
