#!/usr/bin/env bash
# shape.sh COVENANT SRCDIR WITH_LLVM: --shape NAME=DIMS binds the dims a
# model leaves symbolic (covenant compile on NPU and GPU targets, covenant
# run); artifacts record the shapes and which dims were symbolic, and an
# artifact refuses another batch naming the option that compiles for it.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2 llvm=${3:-OFF}
run=$(dirname "$cov")/covenant-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$src/tests/gpu/make_dyn_batch.py" "$tmp/dyn.onnx" || exit 2
m=$tmp/dyn.onnx
/usr/bin/python3 -c "
import numpy as np
r = np.random.default_rng(1)
for n in (1, 3):
    np.save('$tmp/x%d.npy' % n, r.uniform(-1, 1, (n, 3, 8, 8)).astype(np.float32))
    np.save('$tmp/s%d.npy' % n, r.uniform(-1, 1, (n, 5)).astype(np.float32))" || exit 2

# bad names and dims, located
expect 1 "a shape is given for 'foo', which is not an input of the model (its inputs: 'input', 'shift')" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape foo=3x3x8x8
expect 1 "input 'input': dim 1 is 3 in the model, not symbolic; the shape given says 4" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape input=3x4x8x8
expect 1 "input 'input': the shape given has 3 dims; the model declares rank 4" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape input=3x3x8
expect 1 "dim 0 ('N') is given as 2; input 'input' gives 'N' as 3" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape input=3x3x8x8 --shape shift=2x5
expect 2 "covenant compile: --shape '3xx3': dims are integers >= 1" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape input=3xx3
expect 2 "covenant compile: --shape '0x3x8x8': dims are integers >= 1" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape input=0x3x8x8
expect 2 "is not NAME=DIMS" -- "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape 3x3x8x8
expect 2 "two shapes for input 'input'" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/a" --shape input=3x3x8x8 --shape input=3x3x8x8
expect 2 "--shape: for models, not layers" -- "$cov" compile conv3x3_64 -t npu-16x16 -o "$tmp/a" --shape x=1
expect 2 "is not NAME=DIMS" -- "$cov" run "$m" -t ref --shape input

# NPU: a symbolic dim is an error naming the option; bound, the artifact
# records it (shift's N bound through input's)
expect 1 "dim 0 of input 'input' is symbolic; give the input's shape with --shape NAME=DIMS" -- \
  "$cov" compile "$m" -t npu-16x16 -o "$tmp/n.covart"
expect 0 "wrote" -- "$cov" compile "$m" -t npu-16x16 -o "$tmp/n3.covart" --shape input=3x3x8x8
expect 0 "input 1 'shift': f32\[3, 5\] (buffer f32); symbolic in the model: dim 0" -- "$run" "$tmp/n3.covart" --info
expect 0 "format version [4-9]" -- "$run" "$tmp/n3.covart" --info
expect 1 "input 'input' must be f32\[3, 3, 8, 8\], not f32\[1, 3, 8, 8\]; the model leaves dim 0 symbolic and this artifact was compiled at 3 (covenant compile --shape input=1x3x8x8 compiles it for this shape)" -- \
  "$run" "$tmp/n3.covart" --input "$tmp/x1.npy" --input "$tmp/s1.npy"

# covenant run: random inputs at the shape given, on every kind of target
expect 0 "output 'output': f32\[3, 5\]" -- "$cov" run "$m" -t ref --shape input=3x3x8x8
expect 0 "output max rel err .*PASS" -- "$cov" run "$m" -t npu-16x16 --shape input=3x3x8x8
expect 1 "a shape is given for 'nope'" -- "$cov" run "$m" -t ref --shape nope=1

if [ "$llvm" = ON ]; then
  for t in nvptx-sm90 amdgpu-gfx90a amdgpu-gfx942; do
    expect 0 "wrote" -- "$cov" compile "$m" -t "$t" -o "$tmp/g3.covart" --shape input=3x3x8x8
    expect 0 "input 0 'input': f32\[3, 3, 8, 8\] (buffer f32); symbolic in the model: dim 0" -- "$run" "$tmp/g3.covart" --info
    expect 1 "input 'input' must be f32\[3, 3, 8, 8\], not f32\[1, 3, 8, 8\]; .*--shape input=1x3x8x8" -- \
      "$run" "$tmp/g3.covart" --input "$tmp/x1.npy" --input "$tmp/s1.npy"
  done
  # without --shape a GPU target compiles the symbolic batch as 1, and says so at run time
  expect 0 "note: input 'input' has symbolic dims, compiled as 1 (1x3x8x8); --shape input=DIMS compiles another shape" -- \
    "$cov" compile "$m" -t nvptx-sm90 -o "$tmp/g1.covart"
  expect 1 "compiled at 1 (covenant compile --shape input=3x3x8x8 compiles it for this shape)" -- \
    "$run" "$tmp/g1.covart" --input "$tmp/x3.npy" --input "$tmp/s3.npy"
  expect 0 "--shape" -- "$cov" compile --help
fi
exit $fail
