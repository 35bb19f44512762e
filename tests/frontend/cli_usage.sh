#!/usr/bin/env bash
# cli_usage.sh COVENANT SRCDIR: `covenant inspect` and `covenant run`: usage
# errors exit 2 with a hint, help exits 0, rejected inputs exit 1 with the
# file and the reason.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=examples/convnet.onnx
x=examples/convnet_input.npy
expect 0 "inspect" -- "$cov" --help
expect 0 "covenant inspect MODEL.onnx" -- "$cov" inspect --help
expect 0 "covenant run MODEL.onnx" -- "$cov" run --help
expect 2 "takes exactly one MODEL" -- "$cov" inspect
expect 2 "unknown option" -- "$cov" inspect --bogus $m
expect 0 "Conv	compute" -- "$cov" inspect --ops
expect 1 "no such file\|cannot open" -- "$cov" inspect does/not/exist.onnx
expect 1 "is a directory" -- "$cov" inspect examples/
expect 0 "layer groups: 2" -- "$cov" inspect $m
expect 0 "node #0 \[group 0\] conv1 (Conv)" -- "$cov" inspect --graph $m
expect 0 "layer groups: 5" -- "$cov" inspect --no-fuse $m
expect 0 "^  output max rel err [0-9.e+-]*  PASS" -- "$cov" run $m --target npu-16x16 --input $x
expect 0 "input 'input': random values in \[-1, 1), seed 1" -- "$cov" run $m
expect 2 "more inputs than the model's 1" -- "$cov" run $m --input $x --input $x
expect 2 "input 'input' is given twice" -- "$cov" run $m --input input=$x --input input=$x
expect 1 "convnet_output.npy: error: input 'input': expected f32\[1, 3, 32, 32\], got f32\[1, 10, 11, 11\]\|input 'input': expected f32\[1, 3, 32, 32\], got f32\[1, 10, 11, 11\]" -- "$cov" run $m --input examples/convnet_output.npy
expect 1 "not a .npy file\|not a valid ONNX TensorProto" -- "$cov" run $m --input examples/make_convnet.py
expect 0 "^output 'output': f32\[1, 10, 11, 11\]  min " -- "$cov" run $m --input $x
expect 0 "" -- "$cov" run $m --target ref --input input=$x -o output="$tmp/o.npy"
[ -s "$tmp/o.npy" ] || { echo "FAIL: -o NAME=FILE wrote nothing"; fail=1; }
expect 0 "" -- "$cov" run $m --input $x -o "$tmp"
[ -s "$tmp/output_0.npy" ] || { echo "FAIL: -o DIR wrote no output_0.npy"; fail=1; }
expect 2 "more -o options than the model's 1 outputs" -- "$cov" run $m --input $x -o "$tmp/a.npy" -o "$tmp/b.npy"
expect 1 "cannot open\|No such file" -- "$cov" run $m --input $x -o /nonexistent/dir/o.npy
exit $fail
