#!/usr/bin/env bash
# typos.sh COVENANT SRCDIR WITH_LLVM: a typo gets a "did you mean" (commands, options,
# targets, suite layers), a bare option says which one lacks its argument,
# targets and suite layers can be listed, `covenant help CMD` prints that
# command's help, -V prints the version.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2 gpu=${3:-OFF}
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=examples/convnet.onnx

# commands
expect 2 "unknown command 'rnu'; did you mean 'run'?" -- "$cov" rnu $m
expect 2 "unknown command 'verfy'; did you mean 'verify'?" -- "$cov" verfy all
expect 2 "unknown command 'frobnicate'$" -- "$cov" frobnicate
expect 2 "unknown option '--verison'; did you mean '--version'?" -- "$cov" --verison
# options: which one, and the closest
expect 2 "covenant run: unknown option '--traget'; did you mean '--target'?" -- "$cov" run $m --traget npu-16x16
expect 2 "covenant run: option '-t' (--target) needs an argument" -- "$cov" run $m -t
expect 2 "covenant run: option '--input' needs an argument" -- "$cov" run $m --input
expect 2 "covenant verify: option '-t' (--target) needs an argument" -- "$cov" verify all -t
expect 2 "covenant sim: unknown option '--trce'; did you mean '--trace'?" -- "$cov" sim x.npu --trce t.json
expect 2 "covenant map: unknown option '--explian'; did you mean '--explain'?" -- "$cov" map convnet_layer1 -t npu-16x16 --explian
expect 2 "covenant map: option '-t' needs an argument" -- "$cov" map convnet_layer1 -t
expect 2 "covenant explore: unknown option '--vray'; did you mean '--vary'?" -- "$cov" explore --base npu-16x16 --vray x=1
# a --vary path's node and field, and an evaluator's name
expect 1 "no storage or compute node 'pe_aray' (did you mean 'pe_array'?)" -- "$cov" explore --base npu-16x16 --vary pe_aray.dims=8x8 --suite convnet_layer1 -o "$tmp/s1"
expect 1 "'dimz' is not a field of a compute node (did you mean 'dims'?)" -- "$cov" explore --base npu-16x16 --vary pe_array.dimz=8x8 --suite convnet_layer1 -o "$tmp/s2"
expect 1 "unknown evaluator (did you mean 'npusim'?)" -- "$cov" explore --base npu-16x16 --vary pe_array.dims=8x8 --eval npusm --suite convnet_layer1 -o "$tmp/s3"
expect 2 "covenant inspect: unknown option '--grpah'; did you mean '--graph'?" -- "$cov" inspect --grpah $m
expect 2 "covenant codelet: unknown option '--dyr-run'; did you mean '--dry-run'?" -- "$cov" codelet run conv2d --dyr-run
# targets: the closest shipped one, and the list
expect 1 "no target named 'npu16x16' (did you mean 'npu-16x16'?); the targets found: .*npu-32x32-os" -- "$cov" run $m --target npu16x16
expect 1 "no target named 'npu-32x32' (did you mean 'npu-32x32-os'?)" -- "$cov" map convnet_layer1 --target npu-32x32
expect 1 "no target named 'nvptx-sm9' (did you mean 'nvptx-sm90'?)" -- "$cov" acg show nvptx-sm9
expect 1 "no target named 'tpu'; the targets found: amdgpu-gfx90a, amdgpu-gfx942, dsp-hvx, npu-16x16" -- "$cov" run $m --target tpu
# suite layers, in every command that takes them
expect 1 "no layer named 'resnet50_res3_1x11' in the suite (did you mean 'resnet50_res3_1x1'?)" -- "$cov" map resnet50_res3_1x11 -t npu-16x16
expect 1 "no layer named 'convnet_layr1' in the suite (did you mean 'convnet_layer1'?)" -- "$cov" verify convnet_layr1 -t npu-16x16
expect 1 "no layer named 'convnet_layr1' in the suite (did you mean 'convnet_layer1'?)" -- "$cov" compile convnet_layr1 -t npu-16x16 -o "$tmp/c"
[ "$gpu" = ON ] && expect 1 "no layer named 'resnet50_res3_1x11' in the suite (did you mean 'resnet50_res3_1x1'?)" -- "$cov" gpu compile resnet50_res3_1x11 -t nvptx-sm90 -o "$tmp/g"
expect 1 "no layer named 'resnet50_res3_1x11' (did you mean 'resnet50_res3_1x1'?)" -- "$cov" explore --base npu-16x16 --suite resnet50_res3_1x11 -q -o "$tmp/s"
# listings
expect 0 "^npu-32x32-os  *npu-sim  *A second NPU" -- "$cov" targets
expect 0 "^nvptx-sm90  *nvptx  *NVIDIA H100" -- "$cov" targets
expect 0 "^ref  *cpu  *the CPU reference interpreter" -- "$cov" targets
n=$(/usr/bin/python3 -c "import json; print(len(json.load(open('bench/suite/layers.json'))['layers']))")
expect 0 "^$n layers in .*layers.json:" -- "$cov" layers
expect 0 "^  resnet50_res3_1x1$" -- "$cov" layers
expect 2 "unknown option '--sute'; did you mean '--suite'?" -- "$cov" layers --sute x
# every target listed loads, every layer listed maps
for t in $("$cov" targets | awk '$1 != "ref" { print $1 }'); do
  expect 0 "" -- "$cov" acg show "$t"
done
# help CMD, -V
expect 0 "^usage: covenant run MODEL.onnx" -- "$cov" help run
expect 0 "^usage: covenant verify" -- "$cov" help verify
expect 0 "^usage: covenant targets" -- "$cov" help targets
expect 2 "unknown command 'rnu'; did you mean 'run'?" -- "$cov" help rnu
expect 0 "^usage: covenant <command>" -- "$cov" help
expect 0 "^covenant [0-9]*\.[0-9]*\.[0-9]*$" -- "$cov" -V
expect 0 "^covenant [0-9]*\.[0-9]*\.[0-9]*$" -- "$cov" --version
# --seed is a non-negative integer: "-1" is refused, not wrapped to 2^64 - 1
for c in run sim; do
  expect 2 "covenant $c: --seed: '-1' is not a non-negative integer" -- "$cov" $c $m --seed -1
done
expect 2 "covenant codelet: --seed: '-1' is not a non-negative integer" -- "$cov" codelet run relu -s x=4 --seed -1
expect 2 "covenant run: --seed: ' 5' is not a non-negative integer" -- "$cov" run $m --seed " 5"
expect 2 "covenant run: --seed: '18446744073709551616' is larger than 18446744073709551615" -- \
  "$cov" run $m --seed 18446744073709551616
expect 0 "check against" -- "$cov" run $m --seed 18446744073709551615
exit $fail
