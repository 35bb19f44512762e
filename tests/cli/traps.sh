#!/usr/bin/env bash
# traps.sh COVENANT SRCDIR WITH_LLVM: `verify` finishes in seconds by default
# (--full is the protocol), shows progress inside a layer when asked (or on
# a terminal), reports a bad target once; `sim`/`disasm` of a manifest say
# which program to pass; suite files print no -1:-1 / 4294967295 positions.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2 gpu=${3:-OFF}
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verify: quick by default, the full protocol by option
start=$SECONDS
expect 0 "^14 layer(s): 14 passed, 0 failed; 3 random inputs each, sizes / 8 (--full for the full protocol)$" -- "$cov" verify all
[ $((SECONDS - start)) -le 60 ] || { echo "FAIL: verify all took $((SECONDS - start)) s"; fail=1; }
expect 0 "^convnet_layer2  *npu-16x16  *3 " -- "$cov" verify convnet_layer2
expect 0 "1 layer(s): 1 passed, 0 failed; 1 random input each, full size (--full" -- "$cov" verify convnet_layer2 --full -n 1
expect 0 "^usage: covenant verify.*--full" -- "$cov" verify --help
# no "0 not run (errors above)" when none failed to run; the count when some did
out=$("$cov" verify convnet_layer2 2>&1)
grep -q "not run" <<<"$out" && { echo "FAIL: 'not run' printed with no errors: $out"; fail=1; }
expect 1 "1 passed, 0 failed, 1 not run (errors above)" -- "$cov" verify convnet_layer2 no_such_layer
# progress inside a layer: on stderr with --progress, nothing on stdout
"$cov" verify convnet_layer1 --scale 1 -n 4 --progress > "$tmp/vout" 2> "$tmp/err"
grep -q "^verify convnet_layer1: input 1 of 4" "$tmp/err" && ! grep -q "input 1 of 4" "$tmp/vout" ||
  { echo "FAIL: --progress"; cat "$tmp/err"; fail=1; }
"$cov" verify convnet_layer1 -n 2 > /dev/null 2> "$tmp/err2"
[ ! -s "$tmp/err2" ] || { echo "FAIL: progress without a terminal or --progress:"; cat "$tmp/err2"; fail=1; }
# a GPU target: one error, not one per layer
out=$("$cov" verify all -t nvptx-sm90 2>&1); rc=$?
if [ $rc -ne 1 ] || [ "$(grep -c "error:" <<<"$out")" -ne 1 ] || ! grep -q "covenant gpu run all --target nvptx-sm90" <<<"$out"; then
  echo "FAIL: verify all -t nvptx-sm90 -> $rc:"; echo "$out"; fail=1
else
  echo "ok: verify all -t nvptx-sm90: one error"
fi
expect 1 "no target named 'npu16x16'" -- "$cov" verify all -t npu16x16
[ "$("$cov" verify all -t npu16x16 2>&1 | grep -c error:)" -eq 1 ] || { echo "FAIL: bad target reported more than once"; fail=1; }

# a manifest or a model artifact is not a program: say which file to pass
# or what runs it, naming the path once
"$cov" compile examples/convnet.onnx -t npu-16x16 -o "$tmp/cn" > /dev/null
"$cov" compile convnet_layer1 -t npu-16x16 -o "$tmp/out" > /dev/null
expect 1 "^$tmp/cn: error: this is a compiled-model artifact, not an NPU program; run it with 'covenant-run $tmp/cn'" -- "$cov" sim "$tmp/cn"
expect 1 "^$tmp/out/manifest.json: error: this is a compile manifest, not an NPU program; pass the program it names: $tmp/out/program.npu$" -- "$cov" sim "$tmp/out/manifest.json"
expect 1 "pass the program it names: $tmp/out/program.npu" -- "$cov" disasm "$tmp/out/manifest.json"
expect 0 "^program $tmp/out/program.npu on npu-16x16" -- "$cov" sim "$tmp/out/program.npu"
# a program runs through the backend interface: a target whose backend reads
# no program files gets the interface's refusal, not a half-run
expect 1 "^error: covenant sim: ref is a CPU target (backend ref), which does not read program files$" -- \
  "$cov" sim "$tmp/out/program.npu" --target ref
expect 1 "^error: covenant disasm: ref is a CPU target (backend ref), which does not read program files$" -- \
  "$cov" disasm "$tmp/out/program.npu" --target ref
if [ "$gpu" = ON ]; then
  expect 1 "^error: covenant disasm: nvptx-sm90 is a GPU target (backend nvptx), which does not read program files" -- \
    "$cov" disasm "$tmp/out/program.npu" --target nvptx-sm90
fi
expect 0 "^; npu program for ACG 'npu-16x16'" -- "$cov" disasm "$tmp/out/program.npu" --raw --target ref
[ "$("$cov" sim examples/convnet.onnx 2>&1 | grep -o examples/convnet.onnx | wc -l)" -eq 1 ] ||
  { echo "FAIL: sim names the file twice"; "$cov" sim examples/convnet.onnx; fail=1; }

# suite files: no made-up positions
echo '{"layers": [' > "$tmp/bad.json"
gpu_cmds=()
[ "$gpu" = ON ] && gpu_cmds=("gpu compile x -t nvptx-sm90 --suite $tmp/none.json -o $tmp/g"
                             "gpu compile x -t nvptx-sm90 --suite $tmp/bad.json -o $tmp/g")
for c in "map x -t npu-16x16 --suite $tmp/none.json" "map x -t npu-16x16 --suite $tmp/bad.json" \
         "verify x --suite $tmp/none.json" "explore --base npu-16x16 --suite-file $tmp/none.json -q -o $tmp/st" \
         "explore --base npu-16x16 --suite-file $tmp/bad.json -q -o $tmp/st2" \
         ${gpu_cmds[@]+"${gpu_cmds[@]}"}; do
  # shellcheck disable=SC2086
  out=$("$cov" $c 2>&1); rc=$?
  if [ $rc -eq 0 ] || grep -q -- "-1:-1\|4294967295\|:0:0" <<<"$out" || ! grep -q "^$tmp/\(none\|bad\).json\(:[1-9][0-9]*\(:[1-9][0-9]*\)\?\)\?: error: " <<<"$out"; then
    echo "FAIL: $c -> $rc:"; echo "$out"; fail=1
  else
    echo "ok: $c: $(head -1 <<<"$out")"
  fi
done
exit $fail
