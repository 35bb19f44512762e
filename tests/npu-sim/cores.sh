#!/bin/bash
# Cores (backends/npu-sim/ISA.md "Cores") on npu-4core and the designs of
# 1 and 2 cores that explore derives from it (--vary pe_array.instances:
# every compute node and on-chip buffer follows the array's count):
#   - simulated (npusim evaluator), each large suite layer (res4_3x3,
#     res3_1x1, bert qkv and ffn1) takes at most 0.55x the cycles of one
#     core on 2 cores and 0.30x on 4;
#   - the mapper evaluator's cycles fall with the cores too;
#   - a layer compiled for npu-4core is one program of 4 core streams
#     (disasm) whose trace has a track per core's unit, and the derived 2-core design passes covenant verify on the
#     whole suite at reduced sizes (npu-4core itself: npu_verify_suite_npu-4core).
set -u
cov=$1 tmp=$2
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
layers=resnet50_res4_3x3,resnet50_res3_1x1,bert_base_qkv,bert_base_ffn1
for ev in npusim mapper; do
  "$cov" explore --base npu-4core --vary pe_array.instances=1,2,4 --eval $ev --suite $layers \
    -o "$tmp/$ev" > "$tmp/$ev.log" 2>&1 || { echo "FAIL: explore --eval $ev"; tail -3 "$tmp/$ev.log"; fail=1; continue; }
  # results.csv: design,pe_array.instances,layer,op,evaluator,cycles,...
  awk -F, -v ev=$ev -v lim2=$([ $ev = npusim ] && echo 0.55 || echo 0.999) \
      -v lim4=$([ $ev = npusim ] && echo 0.30 || echo 0.999) '
    NR > 1 { c[$3 "," $2] = $6; L[$3] = 1 }
    END {
      bad = 0
      for (l in L) {
        r2 = c[l ",2"] / c[l ",1"]; r4 = c[l ",4"] / c[l ",1"]
        printf "%s %s: 1 / 2 / 4 cores %d / %d / %d cycles (%.3fx, %.3fx)\n", ev, l, c[l ",1"], c[l ",2"], c[l ",4"], r2, r4
        if (!(c[l ",1"] > 0) || r2 > lim2 || r4 > lim4) { print "FAIL: " ev " " l; bad = 1 }
      }
      exit bad
    }' "$tmp/$ev/results.csv" || fail=1
done
"$cov" compile resnet50_res3_1x1 -t npu-4core -o "$tmp/prog" > /dev/null 2>&1 || { echo "FAIL: compile"; fail=1; }
"$cov" disasm "$tmp/prog/program.npu" > "$tmp/disasm.txt" 2>&1 || { echo "FAIL: disasm"; fail=1; }
grep -q "^; 4 cores" "$tmp/disasm.txt" && [ "$(grep -c '^; core [0-3]:' "$tmp/disasm.txt")" = 4 ] ||
  { echo "FAIL: resnet50_res3_1x1 on npu-4core is not 4 core streams"; head -3 "$tmp/disasm.txt"; fail=1; }
"$cov" sim "$tmp/prog/program.npu" --trace "$tmp/trace.json" > "$tmp/sim.txt" 2>&1 && grep -q "^cores 4" "$tmp/sim.txt" ||
  { echo "FAIL: sim"; head -5 "$tmp/sim.txt"; fail=1; }
# the trace names each core's units ("core 3: simd") and has events on them
grep -q '"name":"core 3: simd"' "$tmp/trace.json" && grep -q '"name":"core 0: pe_array"' "$tmp/trace.json" ||
  { echo "FAIL: trace tracks per core"; fail=1; }
out=$("$cov" verify all -t "$tmp/npusim/designs/d001.json" --scale 8 --iterations 2 2>&1)
grep -q "14 passed, 0 failed" <<<"$out" || { echo "FAIL: verify on 2 cores"; echo "$out" | tail -5; fail=1; }
[ $fail = 0 ] && echo "cores: all checks passed"
exit $fail
