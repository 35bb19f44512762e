#!/bin/bash
# Depthwise convolutions across the array's width (mapper/map_depthwise.c)
# and loads issued ahead of the previous tile's work (npu_hoist.c):
#   - on npu-16x16 the mapper's choice for mobilenetv2_dw3x3 puts a window of
#     14 outputs on the columns (loop j) and its input window on the rows
#     (loop t), and the schedule interpreter agrees with the reference;
#   - the simulated program overlaps the array and the SIMD unit: fewer
#     cycles than their busy cycles added (in program order, without hoisting,
#     each tile's load waited for the previous tile's epilogue and store);
#   - the program matches the reference on random inputs (covenant verify).
# A third argument "sanitized" (the ASan+UBSan build) leaves out the
# full-size interpreter check (6 s here, 7 minutes under ASan in CI); the
# half-size checks below still run the same interpreter over the same code.
set -u
cov=$1 tmp=$2 mode=${3:-full}
mkdir -p "$tmp"
fail=0
check=--check
[ "$mode" = sanitized ] && check=
out=$("$cov" map mobilenetv2_dw3x3 --target npu-16x16 --explain $check 2>&1)
grep -q "spatial cols j in 14" <<<"$out" || { echo "FAIL: no window of 14 outputs on the columns"; echo "$out" | grep -E "loops|spatial"; fail=1; }
grep -q "spatial rows t in 16" <<<"$out" || { echo "FAIL: the input window is not on the rows"; fail=1; }
[ -z "$check" ] || grep -q "check: .*: ok" <<<"$out" || { echo "FAIL: the schedule interpreter disagrees"; echo "$out" | tail -2; fail=1; }
for t in npu-16x16 npu-32x32-os; do
  out=$("$cov" map mobilenetv2_dw3x3 --target $t --scale 2 --check 2>&1)
  grep -q "check: .*: ok" <<<"$out" || { echo "FAIL: $t --scale 2 interpreter check"; echo "$out" | tail -2; fail=1; }
done
"$cov" compile mobilenetv2_dw3x3 --target npu-16x16 -o "$tmp/dw" >/dev/null || { echo "FAIL: compile"; exit 1; }
sim=$("$cov" sim "$tmp/dw/program.npu" --target npu-16x16)
cyc=$(awk '/^cycles /{print $2}' <<<"$sim")
pe=$(awk '$1=="pe_array"{print $3}' <<<"$sim")
simd=$(awk '$1=="simd"{print $3}' <<<"$sim")
if [ -z "$cyc" ] || [ -z "$pe" ] || [ -z "$simd" ] || [ "$cyc" -ge $((pe + simd)) ]; then
  echo "FAIL: no overlap: $cyc cycles, array busy $pe, simd busy $simd"
  fail=1
fi
"$cov" verify mobilenetv2_dw3x3 --target npu-16x16 --scale 1 --iterations 2 >"$tmp/v.txt" 2>&1 ||
  { echo "FAIL: verify"; tail -3 "$tmp/v.txt"; fail=1; }
exit $fail
