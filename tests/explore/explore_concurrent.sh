#!/usr/bin/env bash
# Two `covenant explore` runs on one folder at the same time:
# - different studies on a new folder: exactly one runs, the other is
#   refused with a clear message, and the folder holds the winner's header
#   and rows only (before: both exited 0, one study's header over the other
#   study's rows);
# - the same study: both finish, each design is evaluated once in all (the
#   runs share the work through per-design locks), and the CSVs equal a
#   single run's, byte for byte.
. "$(dirname "$0")/common.sh"

base=(--base "$src/targets/npu-16x16.json" --eval mapper
      --suite resnet50_res4_3x3,bert_base_qkv --suite-file "$src/bench/suite/layers.json" -j 1)
study_a=(--vary pe_array.dims=8x8,16x16,32x32 --vary ibuf.capacity=32KiB,64KiB,128KiB)
study_b=(--vary pe_array.dims=4x4,8x8 --vary acg.clock_mhz=500,1000)

for round in 1 2 3; do
  d="$work/diff$round"
  "$cov" explore "${base[@]}" "${study_a[@]}" -q -o "$d" > /dev/null 2> "$d.a.err" & pa=$!
  "$cov" explore "${base[@]}" "${study_b[@]}" -q -o "$d" > /dev/null 2> "$d.b.err" & pb=$!
  wait $pa; ra=$?
  wait $pb; rb=$?
  if [ $ra = 0 ] && [ $rb = 1 ]; then win=a lose=b want=pe_array.dims,ibuf.capacity
  elif [ $ra = 1 ] && [ $rb = 0 ]; then win=b lose=a want=pe_array.dims,acg.clock_mhz
  else fail "different studies, round $round: exits $ra and $rb, want one 0 and one 1"; continue; fi
  grep -q "this folder holds a different study" "$d.$lose.err" ||
    fail "round $round: the refused run's message: $(cat "$d.$lose.err")"
  head -1 "$d/summary.csv" | grep -q "^design,$want,status," ||
    fail "round $round: summary header is not run $win's study: $(head -1 "$d/summary.csv")"
  rows=$(tail -n +2 "$d/summary.csv" | wc -l)
  [ "$rows" = "$([ $win = a ] && echo 9 || echo 4)" ] || fail "round $round: $rows rows for run $win's study"
done

# The same study twice at once: work shared, results identical to one run.
"$cov" explore "${base[@]}" "${study_a[@]}" -q -o "$work/single" > /dev/null || fail "single run"
"$cov" explore "${base[@]}" "${study_a[@]}" -o "$work/same" > /dev/null 2> "$work/s1.err" & p1=$!
"$cov" explore "${base[@]}" "${study_a[@]}" -o "$work/same" > /dev/null 2> "$work/s2.err" & p2=$!
wait $p1 || fail "same study: first run failed: $(cat "$work/s1.err")"
wait $p2 || fail "same study: second run failed: $(cat "$work/s2.err")"
same "$work/single/results.csv" "$work/same/results.csv" "concurrent vs single results"
same "$work/single/summary.csv" "$work/same/summary.csv" "concurrent vs single summary"
# Each run says how many designs it evaluated. Together: 9, not 18.
ev() {
  local n
  n=$(grep -o "explore: [0-9]* design(s) evaluated here" "$1" | grep -o "[0-9]*" | head -1)
  echo "${n:-none}"
}
e1=$(ev "$work/s1.err") e2=$(ev "$work/s2.err")
[ "$e1" != none ] && [ "$e2" != none ] && [ $((e1 + e2)) = 9 ] || fail "same study: the runs evaluated $e1 + $e2 designs, want 9 in all"
echo "same study at once: $e1 + $e2 designs evaluated"
finish
