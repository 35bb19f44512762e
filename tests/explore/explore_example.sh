#!/usr/bin/env bash
# The committed roofline example study reproduces byte for byte from the
# command in its README (the mapper and npusim studies follow the mapper's
# and the backend's code, so they are regenerated when those change rather
# than pinned here).
. "$(dirname "$0")/common.sh"
ex="$src/examples/studies/npu-sweep-roofline"
"$cov" explore --base "$src/targets/npu-16x16.json" \
  --vary pe_array.dims=8x8,16x16,32x32 --vary ibuf.capacity=32KiB,64KiB,128KiB \
  --vary dram.bandwidth_bytes_per_cycle=32,64,128 --suite --suite-file "$src/bench/suite/layers.json" \
  --eval roofline -q -o "$work/s" > /dev/null || fail "run"
for f in study.txt results.csv summary.csv; do same "$work/s/$f" "$ex/$f" "example $f"; done
for d in "$work"/s/designs/*.json; do same "$d" "$ex/designs/$(basename "$d")" "design file"; done
grep -q -- "--eval roofline" "$ex/README.md" || fail "README command"
[ "$(tail -n +2 "$ex/summary.csv" | wc -l)" -ge 27 ] || fail "at least 27 designs"
finish
