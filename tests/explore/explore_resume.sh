#!/usr/bin/env bash
# Resume: kill a study with SIGKILL part-way (several times), leave a stray
# half-written temporary behind, run the same command again: the CSVs must be
# byte-identical to an uninterrupted run. Kills land at different moments, so
# each attempt checks the state it left: never a partial row file.
. "$(dirname "$0")/common.sh"
big=(--base "$src/targets/npu-16x16.json" --eval roofline
     --vary pe_array.dims=4x4,8x8,16x16,32x32,64x64
     --vary ibuf.capacity=16KiB,32KiB,64KiB,128KiB,256KiB
     --vary dram.bandwidth_bytes_per_cycle=16,32,64,128,256
     --vary obuf.capacity=64KiB,128KiB,256KiB,512KiB --suite --suite-file "$src/bench/suite/layers.json")
"$cov" explore "${big[@]}" -j 2 -q -o "$work/full" > /dev/null || fail "uninterrupted run"
total=$(tail -n +2 "$work/full/summary.csv" | wc -l)
[ "$total" -eq 500 ] || fail "500 designs, got $total"

partial=0
for delay in 0.2 0.4 0.6; do
  "$cov" explore "${big[@]}" -j 2 -q -o "$work/killed" > /dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  # Workers are children of the killed process; let them finish or die.
  sleep 0.2
  n=$(ls "$work/killed/rows" 2> /dev/null | grep -c '\.txt$')
  [ "$n" -lt "$total" ] && partial=1
  # Every complete row file is whole: it ends with a newline and has a status.
  for f in "$work"/killed/rows/*.txt; do
    [ -e "$f" ] || continue
    grep -q '^status ' "$f" || { fail "row file without status: $f"; break; }
  done
done
[ "$partial" -eq 1 ] || echo "note: every kill came after the study had finished" >&2
# A torn temporary from a crash mid-write must be ignored.
mkdir -p "$work/killed/rows"
printf 'note \nstatus ok\nrow d000,4x4,16KiB,16,64KiB,resnet50_co' > "$work/killed/rows/d000.txt.tmp99999"
rm -f "$work/killed/rows/d000.txt"
"$cov" explore "${big[@]}" -j 2 -q -o "$work/killed" > /dev/null || fail "resumed run"
same "$work/full/results.csv" "$work/killed/results.csv" "resumed results"
same "$work/full/summary.csv" "$work/killed/summary.csv" "resumed summary"
# Resuming a finished study runs nothing and changes nothing.
"$cov" explore "${big[@]}" -j 2 -o "$work/killed" > /dev/null 2> "$work/again.err" || fail "rerun"
grep -q "resuming, 500 of 500 designs already done" "$work/again.err" || fail "resume message"
same "$work/full/results.csv" "$work/killed/results.csv" "rerun results"
finish
