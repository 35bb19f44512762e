#!/usr/bin/env bash
# authoring.sh COVENANT SRCDIR WITH_LLVM: writing a target of one's own
# behaves as its author means.
#  - a copy of npu-16x16.json with "dims": [8, 8] is an 8x8 array: its mac
#    tile and throughput follow the dims (the shipped file leaves them to
#    the defaults), `acg fmt` spells them out, and a tile that still says
#    16x16 is a located error, not a model that runs on PEs that are not
#    there;
#  - a target file found by name must declare that name (listed, run and
#    looked up under one name), and a file given without '/' or '.json'
#    that exists is pointed to;
#  - a program compiled for an ACG given by path says how to simulate it
#    (--target PATH), without reading a path from the program;
#  - scripts/test.sh prints what it cost and what it skipped.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# dims: a copy with another array size
sed 's/"dims": \[16, 16\]/"dims": [8, 8]/; s/"name": "npu-16x16"/"name": "my-npu-8x8"/' targets/npu-16x16.json > "$tmp/my-npu-8x8.json"
expect 0 "ok (my-npu-8x8)" -- "$cov" acg check "$tmp/my-npu-8x8.json"
expect 0 "f16,f16 -> f32, tile 8x8x1, 64/cycle" -- "$cov" acg show "$tmp/my-npu-8x8.json"
fmt=$("$cov" acg fmt "$tmp/my-npu-8x8.json" | python3 -c '
import json, sys
c = json.load(sys.stdin)["compute"][0]["capabilities"][0]
print(c["tile"], c["throughput"])')
[ "$fmt" = "[8, 8, 1] 64.0" ] || [ "$fmt" = "[8, 8, 1] 64" ] || { echo "FAIL: acg fmt writes tile/throughput $fmt"; fail=1; }
# the same edit on a file that spells out the old tile: located
sed 's/"out": "f32", "latency": 32/"out": "f32", "tile": [16, 16, 1], "throughput": 256, "latency": 32/' \
  "$tmp/my-npu-8x8.json" > "$tmp/stale.json"
expect 1 "^$tmp/stale.json:[0-9]*:[0-9]*: error: \$.compute\[0\].capabilities\[0\].tile: tile 16x16x1 does not fit the array's dims 8x8" -- "$cov" acg check "$tmp/stale.json"
sed 's/"out": "f32", "latency": 32/"out": "f32", "throughput": 256, "latency": 32/' "$tmp/my-npu-8x8.json" > "$tmp/fast.json"
expect 1 "capabilities\[0\].throughput: throughput 256 is more MACs per cycle than the 64 PEs of tile 8x8x1" -- "$cov" acg check "$tmp/fast.json"
# a model on the 8x8 copy is slower than on the 16x16 array
c16=$("$cov" run examples/convnet.onnx -t npu-16x16 2>&1 | sed -n 's/^total: \([0-9]*\) cycles.*/\1/p')
c8=$("$cov" run examples/convnet.onnx -t "$tmp/my-npu-8x8.json" 2>&1 | sed -n 's/^total: \([0-9]*\) cycles.*/\1/p')
if [ -n "$c16" ] && [ -n "$c8" ] && [ "$c8" -gt "$c16" ]; then echo "ok: convnet 8x8 $c8 cycles > 16x16 $c16"
else echo "FAIL: convnet cycles 8x8 '$c8' vs 16x16 '$c16'"; fail=1; fi

# names: the file's name and its "name" agree, or the target is refused
mkdir -p "$tmp/targets"
sed 's/"name": "my-npu-8x8"/"name": "my-npu-8x8b"/' "$tmp/my-npu-8x8.json" > "$tmp/targets/my-npu-8x8.json"
export COVENANT_TARGET_PATH=$tmp/targets
expect 1 "^my-npu-8x8  *(does not load: found as target 'my-npu-8x8' but declares the name 'my-npu-8x8b'" -- "$cov" targets
expect 1 "^$tmp/targets/my-npu-8x8.json:3:[0-9]*: error: \$.name: found as target 'my-npu-8x8' but declares the name 'my-npu-8x8b'.*rename the file to my-npu-8x8b.json or set \"name\" to \"my-npu-8x8\"" -- \
  "$cov" run examples/convnet.onnx -t my-npu-8x8
mv "$tmp/targets/my-npu-8x8.json" "$tmp/targets/my-npu-8x8b.json"
expect 0 "target: *my-npu-8x8b" -- "$cov" run examples/convnet.onnx -t my-npu-8x8b
unset COVENANT_TARGET_PATH
# an existing file given as a name
cp "$tmp/my-npu-8x8.json" "$tmp/notjson.txt"
(cd "$tmp" && expect 1 "no target named 'notjson.txt'; a file 'notjson.txt' exists: write ./notjson.txt to use it" -- "$cov" acg check notjson.txt
 expect 0 "ok (my-npu-8x8)" -- "$cov" acg check ./notjson.txt; exit $fail) || fail=1

# a program compiled for an ACG given by path
mkdir -p "$tmp/path"
sed 's/"name": "my-npu-8x8"/"name": "my"/' "$tmp/my-npu-8x8.json" > "$tmp/path/my.json"
"$cov" compile convnet_layer1 --target "$tmp/path/my.json" -o "$tmp/out" > /dev/null
expect 1 "the program's ACG: no target named 'my'.*pass that file: --target PATH/TO/FILE.json (the file whose \"name\" is 'my')" -- "$cov" sim "$tmp/out/program.npu"
expect 0 "^program $tmp/out/program.npu on my" -- "$cov" sim "$tmp/out/program.npu" --target "$tmp/path/my.json"

# scripts/test.sh's closing summary: time, disk per tree, skipped tests
mkdir -p "$tmp/t/build"
printf 'The following tests did not run:\n\t12 - gpu_thing (Skipped)\n' > "$tmp/t/build/ctest-summary.log"
out=$(cd "$tmp/t" && bash -c 'set -u; start=$SECONDS stage_start=$SECONDS stage_name=x stages=(); trees=(build)
  eval "$(sed -n "/^stage() {/,/^}/p; /^skipped_in() {/,/^}/p; /^summary() {/,/^}/p" "'"$src"'/scripts/test.sh")"
  true; summary' 2>&1)
for want in "^time in all: [0-9]*m[0-9][0-9]s" "^disk per build tree:" "MiB  build$" "^skipped tests (exit 77):" "build: gpu_thing"; do
  grep -q "$want" <<<"$out" || { echo "FAIL: test.sh summary lacks /$want/:"; echo "$out"; fail=1; }
done
grep -q "What \`scripts/test.sh\` costs" README.md || { echo "FAIL: README does not state test.sh's cost"; fail=1; }
exit $fail
