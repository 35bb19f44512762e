#!/usr/bin/env bash
# atomic_output.sh COVENANT SRCDIR: every output file is replaced whole or not
# at all. Each command writes a valid file, then runs again under a file
# size limit (ulimit -f; SIGXFSZ ignored so that writes fail with EFBIG, as
# on a full disk): it must fail, leave the previous file byte for byte, and
# leave no temporary behind.
set -u
cov=$1 src=$2
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
m=examples/convnet.onnx x=examples/convnet_input.npy

# keeps FILE... ; then runs COMMAND under `ulimit -f BLOCKS` and checks
#   intact BLOCKS FILE... -- COMMAND...
intact() {
  local blocks=$1; shift
  local files=()
  while [ "$1" != "--" ]; do files+=("$1"); shift; done
  shift
  for f in "${files[@]}"; do
    [ -s "$f" ] || { echo "FAIL: $f was not written by the unlimited run"; fail=1; return; }
    cp "$f" "$f.before"
  done
  local out rc
  out=$(trap '' XFSZ; ulimit -f "$blocks"; "$@" 2>&1); rc=$?
  [ "$rc" -ne 0 ] || { echo "FAIL: $* succeeded under ulimit -f $blocks"; fail=1; }
  grep -q "error: write failed" <<<"$out" ||
    { echo "FAIL: $*: no located write error:"; echo "$out" | head -3; fail=1; }
  for f in "${files[@]}"; do
    cmp -s "$f" "$f.before" || { echo "FAIL: $*: $f damaged ($(stat -c %s "$f") bytes)"; fail=1; }
    rm -f "$f.before"
    local left
    left=$(find "$(dirname "$f")" -name '*.covtmp.*')
    [ -z "$left" ] || { echo "FAIL: $*: temporaries left: $left"; fail=1; }
  done
  echo "checked: $*"
}

# covenant compile -o (the NPU artifact)
"$cov" compile $m -t npu-16x16 -o "$tmp/cn" > /dev/null || { echo "FAIL: compile"; fail=1; }
intact 8 "$tmp/cn" -- "$cov" compile $m -t npu-16x16 -o "$tmp/cn"
# a layer's program.npu and manifest.json
"$cov" compile convnet_layer1 -t npu-16x16 -o "$tmp/l1" > /dev/null || { echo "FAIL: compile layer"; fail=1; }
intact 0 "$tmp/l1/program.npu" "$tmp/l1/manifest.json" -- "$cov" compile convnet_layer1 -t npu-16x16 -o "$tmp/l1"
# .npy outputs
"$cov" run $m --target ref --input $x -o "$tmp/y.npy" > /dev/null || { echo "FAIL: run -o"; fail=1; }
intact 2 "$tmp/y.npy" -- "$cov" run $m --target ref --input $x -o "$tmp/y.npy"
# traces
"$cov" run $m --input $x --trace "$tmp/t.json" > /dev/null || { echo "FAIL: run --trace"; fail=1; }
intact 4 "$tmp/t.json" -- "$cov" run $m --input $x --trace "$tmp/t.json"
"$cov" sim "$tmp/l1/program.npu" -t npu-16x16 --trace "$tmp/st.json" -o "$tmp/sim.txt" > /dev/null ||
  { echo "FAIL: sim --trace"; fail=1; }
intact 0 "$tmp/st.json" -- "$cov" sim "$tmp/l1/program.npu" -t npu-16x16 --trace "$tmp/st.json"
# -o FILE of the printing commands
"$cov" acg show npu-16x16 -o "$tmp/acg.txt" || { echo "FAIL: acg show"; fail=1; }
intact 0 "$tmp/acg.txt" -- "$cov" acg show npu-16x16 -o "$tmp/acg.txt"
intact 0 "$tmp/sim.txt" -- "$cov" sim "$tmp/l1/program.npu" -t npu-16x16 -o "$tmp/sim.txt"
# a study's CSVs
study=(explore --base targets/npu-16x16.json --eval roofline --vary pe_array.dims=8x8,16x16
       --suite bert_base_qkv --suite-file bench/suite/layers.json -q -o "$tmp/study")
"$cov" "${study[@]}" > /dev/null || { echo "FAIL: explore"; fail=1; }
rm "$tmp/study/rows/d001.txt"
intact 0 "$tmp/study/summary.csv" "$tmp/study/results.csv" -- "$cov" "${study[@]}"

# A temporary a killed run left (here planted) is removed when the study
# resumes, and never taken for a design's rows.
echo "row d000,partial" > "$tmp/study/rows/d000.txt.covtmp.99999.0"
echo "partial" > "$tmp/study/summary.csv.covtmp.99999.0"
"$cov" "${study[@]}" > /dev/null || { echo "FAIL: explore resume"; fail=1; }
left=$(find "$tmp/study" -name '*.covtmp.*')
[ -z "$left" ] || { echo "FAIL: stale temporaries not removed on resume: $left"; fail=1; }
[ "$(tail -n +2 "$tmp/study/summary.csv" | grep -c ',ok,')" -eq 2 ] || { echo "FAIL: resumed study"; fail=1; }

# Devices are written in place, not replaced.
"$cov" acg show npu-16x16 -o /dev/null || { echo "FAIL: -o /dev/null"; fail=1; }
[ -c /dev/null ] || { echo "FAIL: /dev/null replaced"; fail=1; }
exit $fail
