#!/bin/bash
# A whole CNN on the cores of npu-4core (backends/npu-sim/ISA.md "Cores"):
# resnet18_64 (a real export) on npu-4core's designs of 1 and 2 cores
# (explore derives them: --vary pe_array.instances) passes covenant run's
# checks (every program against the reference, the output against
# onnxruntime's) and takes at most 0.6x the cycles of one core on two.
# With a fifth argument `sanitized` (the ASan build, about 25x slower) only
# the 2-core design runs, checked the same way; the speed-up, which the
# sanitizer cannot change, is the plain build's to check.
set -u
cov=$1 models=$2 src=$3 tmp=$4 mode=${5:-full}
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
"$cov" explore --base npu-4core --vary pe_array.instances=1,2 --eval roofline --suite convnet_layer1 \
  -o "$tmp/study" > "$tmp/explore.log" 2>&1 || { echo "FAIL: explore"; tail -3 "$tmp/explore.log"; exit 1; }
declare -A cyc
designs="d000 d001"
[ "$mode" = sanitized ] && designs=d001
for d in $designs; do
  out=$("$cov" run "$models/resnet18_64.onnx" -t "$tmp/study/designs/$d.json" \
        --input "$src/tests/models/resnet18_64_input.npy" --expect "$src/tests/models/resnet18_64_ort.npy" 2>&1)
  cyc[$d]=$(awk '/^total:/{print $2}' <<<"$out")
  [ "$(grep -c "PASS" <<<"$out")" = 2 ] || { echo "FAIL: $d: checks"; grep -E "check|err" <<<"$out" | head -5; fail=1; }
done
if [ "$mode" = sanitized ]; then
  echo "resnet18_64: 2 cores ${cyc[d001]} cycles (the speed-up is checked in the plain build)"
  exit $fail
fi
echo "resnet18_64: 1 core ${cyc[d000]} cycles, 2 cores ${cyc[d001]}"
awk -v a="${cyc[d000]}" -v b="${cyc[d001]}" 'BEGIN { r = b / a; printf "ratio %.3f (at most 0.6)\n", r; exit !(a > 0 && r <= 0.6) }' || { echo "FAIL: ratio"; fail=1; }
exit $fail
