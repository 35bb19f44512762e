#!/usr/bin/env bash
# dtypes.sh COVENANT SRCDIR: inputs of every dtype the frontend has get
# valid random values: token ids within the rows of the table they index,
# bool 0/1, u8 over its range, a mask's {0, 1} said to be a guess, f16 for a
# model exported in float16; NPU artifacts record the integer ranges for
# covenant-run.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2
run=$(dirname "$cov")/covenant-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$src/tests/cli/make_embed.py" "$tmp/embed.onnx" || exit 2
/usr/bin/python3 "$src/tests/gpu/make_f16_cnn.py" "$tmp/f16.onnx" || exit 2
m=$tmp/embed.onnx
expect 0 "input 'input_ids': random i64 in \[0, 49\] (the rows of the table it indexes)" -- "$cov" run "$m" -t ref
expect 0 "input 'token_type_ids': random i64 in \[0, 1\], seed 1" -- "$cov" run "$m" -t ref
expect 0 "input 'attention_mask': random i64 in \[0, 1\] (the model does not say its range" -- "$cov" run "$m" -t ref
expect 0 "input 'keep': random bool in \[0, 1\]" -- "$cov" run "$m" -t ref
expect 0 "input 'scale': random u8 in \[0, 255\]" -- "$cov" run "$m" -t ref
# the NPU runs it too (its fallbacks on the CPU), checked against ref on the same inputs
expect 0 "hidden max rel err .*PASS" -- "$cov" run "$m" -t npu-16x16 --seed 3
expect 0 "wrote" -- "$cov" compile "$m" -t npu-16x16 -o "$tmp/e.covart"
expect 0 "input 0 'input_ids': i64\[2, 5\] (buffer i64); values in \[0, 49\]" -- "$run" "$tmp/e.covart" --info
expect 0 "input 3 'keep': bool\[2, 5\] (buffer bool); values in \[0, 1\]" -- "$run" "$tmp/e.covart" --info
# a model exported in float16: random f16 inputs
expect 0 "input 'input': random values in \[-1, 1)" -- "$cov" run "$tmp/f16.onnx" -t ref
expect 0 "output max rel err .*PASS" -- "$cov" run "$tmp/f16.onnx" -t npu-16x16
exit $fail
