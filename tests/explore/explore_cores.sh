#!/usr/bin/env bash
# Cores of a systolic array (npu-64x64-bf16's mxu) and of a matrix unit
# (npu-matrix's cube) in a study: --vary UNIT.instances=1,2 derives a
# design of two whole cores (explore's instances rule) and a layer spreads
# over them (mapper/map_build.c map_level_sloops, map_bound.c):
#   - bert_base_ffn1 on 2 cores takes under 0.6x the cycles of one core,
#     simulated (npusim); the mapper's prediction falls with it (under
#     0.7x) and is within 15% of the simulated cycles on both designs;
#   - at half size the layer still spreads over both cores, and the 2-core
#     program computes it (covenant verify against the reference).
# Both studies raise DRAM's bandwidth (192 and 256 B/cycle): at the targets'
# own 48 and 64, which the cores share, bert_base_ffn1 is bound by DRAM on
# one core already (npu-64x64-bf16: 348,642 cycles simulated, 344,576 of
# them DRAM traffic), so no number of cores runs it faster. Before the
# mapper could keep a core's tiles on chip across the level-0 loops, 2 cores
# of npu-64x64-bf16 simulated slower than one (361,543 against 331,804
# cycles), and npu-matrix's cube could not be swept at all.
. "$(dirname "$0")/common.sh"
layers=$src/bench/suite/layers.json
suite=(--suite bert_base_ffn1 --suite-file "$layers")

cycles() { # cycles STUDY CORES: the layer's cycles on the design of CORES cores
  awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "cycles") c = i; if ($i ~ /\.instances$/) k = i }; next }
                     $k == n { print $c }' "$1/results.csv"
}

check() { # check TARGET UNIT DRAM_BW
  local t=$1 s
  for ev in npusim mapper; do
    "$cov" explore --base "$src/targets/$t.json" --vary dram.bandwidth_bytes_per_cycle="$3" --vary "$2".instances=1,2 \
      --eval $ev "${suite[@]}" -q -o "$work/$t.$ev" > /dev/null 2>&1 || { fail "$t: explore --eval $ev"; return; }
  done
  local s1 s2 p1 p2
  s1=$(cycles "$work/$t.npusim" 1) s2=$(cycles "$work/$t.npusim" 2)
  p1=$(cycles "$work/$t.mapper" 1) p2=$(cycles "$work/$t.mapper" 2)
  echo "$t ($2, DRAM $3 B/cycle): 1 / 2 cores simulated $s1 / $s2, predicted $p1 / $p2"
  awk -v s1="$s1" -v s2="$s2" -v p1="$p1" -v p2="$p2" 'BEGIN {
    ok = s1 > 0 && p1 > 0 && s2 < 0.6 * s1 && p2 < 0.7 * p1
    for (i = 0; i < 2; i++) { s = i ? s2 : s1; p = i ? p2 : p1; if (p < s / 1.15 || p > s * 1.15) ok = 0 }
    exit !ok }' || fail "$t: 2 cores are not under 0.6x one (or the prediction is off)"
  s="$work/$t.npusim/designs/d001.json"
  "$cov" map bert_base_ffn1 --target "$s" --scale 2 --explain --suite "$layers" | grep -q "spatial workgroup" ||
    fail "$t: bert_base_ffn1 / 2 does not spread over the 2 cores"
  "$cov" verify bert_base_ffn1 -t "$s" --scale 2 -n 1 --suite "$layers" | grep -q "1 passed, 0 failed" ||
    fail "$t: bert_base_ffn1 / 2 on 2 cores does not match the reference"
}

check npu-64x64-bf16 mxu 192
check npu-matrix cube 256
finish
