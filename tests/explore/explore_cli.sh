#!/usr/bin/env bash
# CLI: usage, bad sweep specs (every one named with its value, nothing run),
# a value giving an invalid ACG (that design fails, located; the rest run),
# byte-identical output for -j 1 and -j 4, a folder holding another study.
. "$(dirname "$0")/common.sh"

"$cov" explore --help | grep -q "covenant explore merge" || fail "--help"
"$cov" explore --base npu-16x16 --suite 2> /dev/null; [ $? -eq 2 ] || fail "missing -o: want exit 2"
"$cov" explore --base npu-16x16 -o "$work/x" 2> /dev/null; [ $? -eq 2 ] || fail "no layers: want exit 2"
"$cov" explore --bogus 2> /dev/null; [ $? -eq 2 ] || fail "unknown option: want exit 2"
"$cov" explore --base npu-16x16 --suite --shard 3/3 -o "$work/x" 2> /dev/null; [ $? -eq 2 ] || fail "bad shard"

# Bad specs: exit 1, one located message each, no output folder.
"$cov" explore --base npu-16x16 --suite -o "$work/bad" \
  --vary nosuch.dims=8x8 --vary pe_array.dimz=8x8 --vary pe_array.dims=8x8,huge \
  --vary 'dram->nowhere.bandwidth_bytes_per_cycle=8' --vary /storage/99/capacity=1KiB \
  --vary ibuf.capacity=32KB 2> "$work/bad.err"
[ $? -eq 1 ] || fail "bad specs: want exit 1"
cat > "$work/bad.want" <<'W'
error: --vary nosuch.dims: the base ACG has no storage or compute node 'nosuch'
error: --vary pe_array.dimz: 'dimz' is not a field of a compute node (did you mean 'dims'?) (see acg/README.md)
error: --vary pe_array.dims: cannot parse value 'huge' (expected a number, NxM dims, a size such as 64KiB, or true/false)
error: --vary dram->nowhere.bandwidth_bytes_per_cycle: the base ACG has no edge from 'dram' to 'nowhere'
error: --vary /storage/99/capacity: JSON pointer /storage/99/capacity names nothing in the base ACG
error: --vary ibuf.capacity: cannot parse value '32KB' (expected a number, NxM dims, a size such as 64KiB, or true/false)
W
same "$work/bad.err" "$work/bad.want" "bad-spec diagnostics"
[ ! -e "$work/bad" ] || fail "bad specs must not create the output folder"
"$cov" explore --base npu-16x16 --suite --eval magic -o "$work/x" 2> "$work/ev.err"
grep -q "unknown evaluator (available: npusim, mapper, roofline)" "$work/ev.err" || fail "--eval magic message"
"$cov" explore --base npu-16x16 --model "$src/examples/convnet.onnx" --eval mapper -o "$work/x" 2> "$work/evm.err"
grep -q "takes suite layers only" "$work/evm.err" || fail "--eval mapper with --model"

# A value that makes an invalid ACG: the design fails with the loader's
# located message; the other designs run; exit 0.
"$cov" explore --base npu-16x16 --suite bert_base_qkv --eval roofline -q -o "$work/inv" \
  --vary ibuf.capacity=0,64KiB --vary pe_array.dims=8x8,16x16 > /dev/null 2> "$work/inv.err"
[ $? -eq 0 ] || fail "invalid design: want exit 0"
grep -q "design d000 (ibuf.capacity=0, pe_array.dims=8x8) failed: designs/d000.json:[0-9]*:[0-9]*: \$.storage\[1\].capacity: capacity must be positive" "$work/inv.err" \
  || { fail "invalid design message"; cat "$work/inv.err" >&2; }
[ "$(grep -c ',failed,' "$work/inv/summary.csv")" -eq 2 ] || fail "two failed designs in summary"
[ "$(grep -c ',ok,' "$work/inv/summary.csv")" -eq 2 ] || fail "two ok designs in summary"
[ "$(tail -n +2 "$work/inv/results.csv" | wc -l)" -eq 2 ] || fail "rows of the ok designs only"
# Failed designs' rows have the header's fields, the error (quoted: it holds
# commas) in the error column and the figures empty (not one field short,
# which would put the error under 'derived').
/usr/bin/python3 - "$work/inv/summary.csv" <<'PY' || fail "summary.csv: a failed design's row must match the header"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
head = rows[0]
for r in rows[1:]:
    assert len(r) == len(head), "%d fields, header %d: %r" % (len(r), len(head), r)
    d = dict(zip(head, r))
    if d["status"] == "failed":
        assert "capacity must be positive, got 0" in d["error"], r
        assert d["total_cycles"] == "" and d["pareto_cycles_energy"] == "", r
PY

# A design whose backend section its backend does not take (the registry's
# check, backends/registry/backend_acg.c) fails as one the loader refuses.
"$cov" explore --base npu-16x16 --suite convnet_layer1 --eval roofline -q -o "$work/be" \
  --vary /backend/name=npu-sim,nvptx > /dev/null 2> "$work/be.err"
[ $? -eq 0 ] || fail "design of another backend: want exit 0"
grep -q "design d001 (/backend/name=nvptx) failed: designs/d001.json:[0-9]*:[0-9]*: \$.backend.mcpu: missing required field" \
  "$work/be.err" || { fail "a GPU design without mcpu must fail, located"; cat "$work/be.err" >&2; }
[ "$(grep -c ',failed,' "$work/be/summary.csv")" -eq 1 ] || fail "one failed design of another backend"

# -j 1 and -j 4 give the same bytes; so do the derived designs.
"$cov" explore "${study_args[@]}" -j 1 -q -o "$work/j1" > /dev/null || fail "run -j1"
"$cov" explore "${study_args[@]}" -j 4 -q -o "$work/j4" > /dev/null || fail "run -j4"
same "$work/j1/results.csv" "$work/j4/results.csv" "-j1 vs -j4 results"
same "$work/j1/summary.csv" "$work/j4/summary.csv" "-j1 vs -j4 summary"
[ "$(tail -n +2 "$work/j1/results.csv" | wc -l)" -eq $((27 * 5)) ] || fail "27 designs x 5 layers"
[ "$(ls "$work/j1/designs" | wc -l)" -eq 27 ] || fail "27 design files"
"$cov" acg check "$work/j1/designs/d026.json" > /dev/null || fail "derived design must validate"
grep -q '"dims": \[' "$work/j1/designs/d026.json" || fail "design json"

# Another study into the same folder is refused.
"$cov" explore "${study_args[@]}" --vary acg.clock_mhz=500 -q -o "$work/j1" 2> "$work/other.err"
[ $? -eq 1 ] && grep -q "holds a different study" "$work/other.err" || fail "different study refused"

# A model's layer groups.
"$cov" explore --base npu-16x16 --vary pe_array.dims=8x8,16x16 --model "$src/examples/convnet.onnx" \
  -q -o "$work/model" > /dev/null || fail "--model"
grep -q '^d001,16x16,convnet#0,conv+bias+relu+maxpool,roofline,' "$work/model/results.csv" || fail "model rows"

# The mapper evaluator: its rows must equal what `covenant map` reports for
# the same derived design, and -j must not change a byte.
margs=(--base "$src/targets/npu-16x16.json" --eval mapper --vary pe_array.dims=8x8,32x32
       --vary ibuf.capacity=16KiB,128KiB --suite convnet_layer1,resnet50_stem_pool,bert_base_attn_qk
       --suite-file "$src/bench/suite/layers.json")
"$cov" explore "${margs[@]}" -j 1 -q -o "$work/m1" > /dev/null || fail "mapper run"
"$cov" explore "${margs[@]}" -j 3 -q -o "$work/m3" > /dev/null || fail "mapper run -j3"
same "$work/m1/results.csv" "$work/m3/results.csv" "mapper -j1 vs -j3"
[ "$(grep -c ',mapper,' "$work/m1/results.csv")" -eq 12 ] || fail "12 mapper rows"
for d in d000 d003; do
  for l in convnet_layer1 bert_base_attn_qk; do
    want=$("$cov" map $l --target "$work/m1/designs/$d.json" --suite "$src/bench/suite/layers.json" \
           | sed -n 's/.*: \([0-9]*\) cycles.*/\1/p')
    got=$(grep "^$d,.*,$l," "$work/m1/results.csv" | cut -d, -f7)
    [ -n "$want" ] && [ "$want" = "$got" ] || fail "$d $l: explore says '$got' cycles, covenant map '$want'"
  done
done

# The npusim evaluator (the default for suite-only studies): its rows must
# equal what `covenant compile` + `covenant sim` report for the same derived
# design, and -j must not change a byte.
sargs=(--base "$src/targets/npu-16x16.json" --vary pe_array.dims=8x8,16x16
       --vary ibuf.capacity=16KiB,64KiB --suite convnet_layer1,convnet_layer2
       --suite-file "$src/bench/suite/layers.json")
"$cov" explore "${sargs[@]}" -j 1 -o "$work/n1" > /dev/null 2> "$work/n1.err" || fail "npusim run"
grep -q "^explore: evaluator npusim" "$work/n1.err" || fail "default evaluator must be npusim"
"$cov" explore "${sargs[@]}" -j 3 -q -o "$work/n3" > /dev/null || fail "npusim run -j3"
same "$work/n1/results.csv" "$work/n3/results.csv" "npusim -j1 vs -j3"
[ "$(grep -c ',npusim,' "$work/n1/results.csv")" -eq 8 ] || fail "8 npusim rows"
for d in d000 d003; do
  for l in convnet_layer1 convnet_layer2; do
    rm -rf "$work/prog"
    "$cov" compile $l --target "$work/n1/designs/$d.json" --suite "$src/bench/suite/layers.json" \
      -o "$work/prog" > /dev/null || fail "compile $d $l"
    want=$("$cov" sim "$work/prog/program.npu" --target "$work/n1/designs/$d.json" \
           | sed -n 's/^cycles \([0-9]*\) .*/\1/p')
    got=$(grep "^$d,.*,$l," "$work/n1/results.csv" | cut -d, -f7)
    [ -n "$want" ] && [ "$want" = "$got" ] || fail "$d $l: explore says '$got' cycles, covenant sim '$want'"
  done
done
finish
