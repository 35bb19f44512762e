#!/usr/bin/env bash
# Shards: --shard I/N runs its designs only; merging all shards gives the
# single run's bytes; merge refuses missing shards, duplicated designs and
# folders of different studies.
. "$(dirname "$0")/common.sh"
"$cov" explore "${study_args[@]}" -q -o "$work/single" > /dev/null || fail "single run"
for i in 0 1 2; do
  "$cov" explore "${study_args[@]}" --shard $i/3 -j 2 -q -o "$work/s$i" > /dev/null || fail "shard $i"
done
[ "$(tail -n +2 "$work/s1/summary.csv" | wc -l)" -eq 9 ] || fail "shard 1/3 holds 9 designs"
tail -n +2 "$work/s1/summary.csv" | cut -d, -f1 | tr '\n' ' ' | grep -q '^d001 d004 d007 ' || fail "shard 1 design ids"
"$cov" explore merge "$work/s0" "$work/s1" "$work/s2" -o "$work/merged" > /dev/null || fail "merge"
same "$work/single/results.csv" "$work/merged/results.csv" "merged results"
same "$work/single/summary.csv" "$work/merged/summary.csv" "merged summary"
[ "$(ls "$work/merged/designs" | wc -l)" -eq 27 ] || fail "merged design files"

"$cov" explore merge "$work/s0" "$work/s1" -o "$work/m2" 2> "$work/missing.err"
[ $? -eq 1 ] && grep -q "9 design(s) are in none of the shard folders (d002 d005" "$work/missing.err" || fail "missing shard"
"$cov" explore merge "$work/s0" "$work/s1" "$work/s2" "$work/single" -o "$work/m3" 2> "$work/dup.err"
[ $? -eq 1 ] && grep -q "design d000 is in both .*s0 and .*single; refusing to merge duplicated rows" "$work/dup.err" || fail "duplicates"
"$cov" explore --base "$src/targets/npu-16x16.json" --eval roofline --vary pe_array.dims=8x8 --suite bert_base_qkv \
  --suite-file "$src/bench/suite/layers.json" -q -o "$work/other" > /dev/null || fail "other study"
"$cov" explore merge "$work/s0" "$work/other" -o "$work/m4" 2> "$work/other.err"
[ $? -eq 1 ] && grep -q "a different study" "$work/other.err" || fail "different studies"
"$cov" explore merge "$work/nothere" -o "$work/m5" 2> /dev/null; [ $? -eq 1 ] || fail "not a study"
finish
