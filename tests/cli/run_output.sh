#!/usr/bin/env bash
# run_output.sh COVENANT SRCDIR: `covenant run` reads like iree-run-module:
# a header naming model and target, each output on one line, the check
# against the shipped numpy reference when the shipped input is used (else
# against --target ref), an aligned per-group table whose estimate column
# says what it is, wall times; the main job stays short.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=examples/convnet.onnx
x=examples/convnet_input.npy

# The main job, exactly as scripts/main.sh runs it.
main_cmd=$(grep '^build/covenant run' scripts/main.sh | sed 's|^build/covenant ||')
[ -n "$main_cmd" ] || { echo "FAIL: no covenant run line in scripts/main.sh"; fail=1; }
# shellcheck disable=SC2086
out=$("$cov" $main_cmd 2>&1); rc=$?
n=$(wc -l <<<"$out")
if [ "$rc" -ne 0 ] || [ "$n" -gt 40 ]; then
  echo "FAIL: main job: exit $rc, $n lines (at most 40):"; echo "$out"; fail=1
else
  echo "ok: main job prints $n lines"
fi
# Header first: model and target before anything else.
head -2 <<<"$out" | grep -q "^model:  examples/convnet.onnx" &&
  head -2 <<<"$out" | grep -q "^target: npu-16x16 (npu-sim backend" ||
  { echo "FAIL: header (model, target) is not first:"; head -3 <<<"$out"; fail=1; }
# Each output one line; no raw dump of values.
grep -q "^output 'output': f32\[1, 10, 11, 11\]  min 0 max [0-9.]* mean [0-9.]*  \[" <<<"$out" ||
  { echo "FAIL: output summary line"; fail=1; }
[ "$(grep -c '^  [0-9.-]* [0-9.-]* [0-9.-]*' <<<"$out")" -eq 0 ] ||
  { echo "FAIL: raw values printed by default"; fail=1; }
# The check is against the independent numpy reference shipped with the input.
grep -q "^check against examples/convnet_output.npy (found next to the input)" <<<"$out" &&
  grep -q "^  output max rel err [0-9.e+-]*  PASS" <<<"$out" ||
  { echo "FAIL: check against examples/convnet_output.npy"; fail=1; }
grep -q "2 of 2 compute groups fused" <<<"$out" || { echo "FAIL: groups fused"; fail=1; }
grep -q "^wall time: load [0-9.]* ms, compile (map + codegen) [0-9.]* ms, simulation [0-9.]* ms" <<<"$out" ||
  { echo "FAIL: wall times"; fail=1; }
grep -q "^mapper est: the mapper's cost model's prediction before simulation" <<<"$out" &&
  grep -q "^group node  codelets  *cycles mapper est    err" <<<"$out" ||
  { echo "FAIL: the estimate column is not labelled"; fail=1; }
# The estimate's error per row is (est - cycles) / cycles, recomputed here.
while read -r g node cod cyc est err rest; do
  want=$(awk -v c="$cyc" -v e="$est" 'BEGIN { printf "%+.0f%%", 100 * (e - c) / c }')
  [ "$err" = "$want" ] || { echo "FAIL: row $g: err $err, want $want"; fail=1; }
done < <(sed -n '/^group node/,/^total:/p' <<<"$out" | sed '1d;$d')

# A wrong expected output fails the check (exit 1), naming the file.
/usr/bin/python3 -c "import numpy as np; y=np.load('examples/convnet_output.npy'); y[0,0,0,0]+=1; np.save('$tmp/bad.npy', y)"
expect 1 "^  output max rel err .*  FAIL" -- "$cov" run $m --input $x --expect "$tmp/bad.npy"
expect 1 "^check against the --expect files: max|npu-16x16 - expected|" -- "$cov" run $m --input $x --expect "$tmp/bad.npy"
expect 0 "output max rel err .*  PASS" -- "$cov" run $m --input $x --expect output=examples/convnet_output.npy
expect 2 "more --expect options than the model's 1 outputs" -- "$cov" run $m --expect a.npy --expect b.npy
# Every NPU program against the reference on f16-rounded operands, tight
# (1e-4; a difference in the e-05 or larger decades fails), on both NPUs.
expect 0 "^check of every NPU program against the reference .*: max rel err [0-9.]*e-0[6-9] <= 0.0001  PASS" -- "$cov" run $m
expect 0 "^check of every NPU program against the reference .*: max rel err [0-9.]*e-0[6-9] <= 0.0001  PASS" -- "$cov" run $m -t npu-32x32-os
# Random inputs: checked against --target ref instead.
expect 0 "check against --target ref on the same inputs: max|npu-16x16 - ref| / max|ref| <= 0.01" -- "$cov" run $m
# Full values on request.
out=$("$cov" run $m --input $x --print-values 2>&1)
[ "$(grep -c '^  [0-9.e+-]*\( [0-9.e+-]*\)\{7\}$' <<<"$out")" -eq 151 ] ||
  { echo "FAIL: --print-values does not print all 1210 values (8 a line)"; fail=1; }
# -o says what it wrote.
expect 0 "^wrote $tmp/y.npy (output 'output')" -- "$cov" run $m --target ref --input $x -o "$tmp/y.npy"
expect 0 "^target: ref (the CPU reference interpreter)" -- "$cov" run $m --target ref --input $x

# NAME=FILE with a NAME that is not the model's: the name is refused (with
# the names there are and the closest) before FILE is opened.
expect 2 "output=x.npy: the model has no input named 'output' (its inputs: 'input')" -- \
  "$cov" run $m --input output=x.npy
expect 2 "the model has no input named 'inptu' (its inputs: 'input'); did you mean 'input'?" -- \
  "$cov" run $m --input inptu=x.npy
expect 2 "the model has no output named 'outptu' (its outputs: 'output'); did you mean 'output'?" -- \
  "$cov" run $m --input $x --expect outptu=examples/convnet_output.npy
expect 0 "PASS" -- "$cov" run $m --input input=$x --expect output=examples/convnet_output.npy
# mobilenet_v2's long node names: every table row has its cycles column
# ending at the same position as the header's.
out=$("$cov" run tests/frontend/models/mobilenet_v2.onnx --input tests/frontend/models/mobilenet_v2_input.npy 2>&1)
cols=$(sed -n '/^group node/,/^total:/p' <<<"$out" | sed '$d' |
       awk '{ i = index($0, "  npu, ") + index($0, "  cpu: ") + index($0, "  where"); print i }' | sort -u)
if [ "$(wc -l <<<"$cols")" -ne 1 ] || ! grep -q "/features/features.12/conv/conv.1/conv.1.0/Conv" <<<"$out"; then
  echo "FAIL: mobilenet_v2 table not aligned (where-column starts: $(echo $cols))"
  sed -n '/^group node/,/^total:/p' <<<"$out" | head -5; fail=1
else
  echo "ok: mobilenet_v2 table aligned"
fi
exit $fail
