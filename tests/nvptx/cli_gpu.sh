#!/usr/bin/env bash
# cli_gpu.sh COVENANT WORKDIR usage|run: `covenant gpu` usage and input errors (exit 2
# and 1, with messages naming the problem), and `gpu run` (suite layers, and
# `covenant run examples/convnet.onnx --target nvptx-sm90`) without a GPU: a
# clear error (the test then reports itself skipped, 77); with one, the runs
# must pass.
set -u
cov=$1 work=$2 what=$3
mkdir -p "$work"
fail=0
expect() { # expect CODE PATTERN -- ARGS...
  local code=$1 pat=$2
  shift 3
  local out
  out=$("$cov" "$@" 2>&1)
  local rc=$?
  if [ $rc -ne "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: covenant $* -> exit $rc, expected $code with '$pat'; got: $out"
    fail=1
  fi
}
expect 0 "usage: covenant gpu compile" -- gpu --help
expect 2 "expected a subcommand" -- gpu
expect 2 "unknown subcommand 'frob'" -- gpu frob
expect 2 "needs --target" -- gpu compile gemm_64x64x64 -o "$work/x"
expect 2 "compile needs -o DIR" -- gpu compile gemm_64x64x64 --target nvptx-sm90
expect 2 "at least one LAYER" -- gpu compile --target nvptx-sm90 -o "$work/x"
expect 2 "expected f16, bf16 or f32" -- gpu compile gemm_64x64x64 --target nvptx-sm90 -o "$work/x" --dtype i8
expect 1 "layers.json: error: \$.layers: no layer named 'no_such_layer' in the suite, nor of the form gemm_MxNxK" -- gpu compile no_such_layer --target nvptx-sm90 -o "$work/x"
# the suite's pool and attention softmax are lowered; other ops and post-ops
# are refused with their names
cat >"$work/suite.json" <<'JSON'
{"layers": [{"name": "avg", "op": "avgpool", "N": 1, "C": 4, "H": 8, "W": 8, "R": 2, "S": 2},
            {"name": "sm_then_relu", "op": "gemm", "M": 64, "N": 64, "K": 64, "post": ["softmax", "relu"]},
            {"name": "wide_softmax", "op": "gemm", "M": 64, "N": 1000, "K": 64, "post": ["softmax"]},
            {"name": "bad_pool", "op": "maxpool", "N": 1, "C": 4, "H": 8, "W": 8, "R": 3, "S": 3, "stride": 2, "pad": 2}]}
JSON
expect 0 "covenant_resnet50_stem_pool.*one output per thread" -- gpu compile resnet50_stem_pool --target nvptx-sm90 -o "$work/p" --report
expect 0 "covenant_bert_base_attn_qk.*staged epilogue" -- gpu compile bert_base_attn_qk --target nvptx-sm90 -o "$work/p" --report
expect 1 "is a avgpool (the GPU lowering builds" -- gpu compile avg --suite "$work/suite.json" --target nvptx-sm90 -o "$work/x"
expect 1 "relu.*--allow-unfused" -- gpu compile sm_then_relu --suite "$work/suite.json" --target nvptx-sm90 -o "$work/x"
expect 1 "softmax over rows of 1000 (at most 512)" -- gpu compile wide_softmax --suite "$work/suite.json" --target nvptx-sm90 -o "$work/x"
expect 1 "pad 2 exceeds half the 3x3 window" -- gpu compile bad_pool --suite "$work/suite.json" --target nvptx-sm90 -o "$work/x"
expect 1 "pool takes no" -- gpu compile resnet50_stem_pool:64x64x32:32x32:2 --target nvptx-sm90 -o "$work/x"
expect 1 "gemm_MxNxK" -- gpu compile gemm_12x12 --target nvptx-sm90 -o "$work/x"
expect 1 "which does not compile kernels" -- gpu compile gemm_64x64x64 --target npu-16x16 -o "$work/x"
expect 1 "schedule is written" -- gpu compile gemm_64x64x64:64x64 --target nvptx-sm90 -o "$work/x"
expect 1 "do not nest" -- gpu compile gemm_64x64x64:64x64x32:48x32:2 --target nvptx-sm90 -o "$work/x"
expect 0 "roofline" -- gpu compile convnet_layer1 --target amdgpu-gfx90a -o "$work/r" --report
models=$(dirname "$0")/../frontend/models
# a model compiles whole: its kernels, buffers and launch sequence
expect 0 "covenant_g0_1_matrix_cast .*matrix" -- gpu compile "$(dirname "$0")/../../examples/convnet.onnx" \
  --target nvptx-sm90 -o "$work/m" --report
expect 0 "layernorm" -- gpu compile "$models/encoder.onnx" --target nvptx-sm90 -o "$work/e" --report
# the same plan as one artifact the LLVM-free runtime reads
if ! "$(dirname "$cov")/covenant-run" "$work/m/model.covart" --info 2>&1 | grep -q "target nvptx-sm90 .*model convnet.onnx"; then
  echo "FAIL: covenant-run --info does not read the compiled model's artifact"
  fail=1
fi
# or one error lists every group that cannot, each at its node
expect 1 "3 layer groups cannot be compiled for nvptx-sm90" -- gpu compile "$(dirname "$0")/../gpu/gpu_unsupported.onnx" \
  --target nvptx-sm90 -o "$work/x"
expect 1 "half_1: layer group 0 (cast, node 'half_1'): its result is f16" -- gpu compile "$(dirname "$0")/../gpu/gpu_unsupported.onnx" \
  --target nvptx-sm90 -o "$work/x"
expect 1 "half_2: layer group 3 (cast, node 'half_2'): its result is f16" -- gpu compile "$(dirname "$0")/../gpu/gpu_unsupported.onnx" \
  --target nvptx-sm90 -o "$work/x"
expect 1 "no_such.onnx" -- gpu compile no_such.onnx --target nvptx-sm90 -o "$work/x"
expect 2 "run takes one MODEL.onnx alone" -- gpu run examples/convnet.onnx gemm_64x64x64 --target nvptx-sm90
expect 2 "are for run MODEL.onnx" -- gpu run gemm_64x64x64 --target nvptx-sm90 --seed 3
expect 2 "not a number >= 0" -- run examples/convnet.onnx --target nvptx-sm90 --tolerance x
[ $fail -ne 0 ] && exit 1
if [ "$what" = usage ]; then echo "ok: covenant gpu usage and input errors"; exit 0; fi
# runs where a GPU is present; without one, a clear error naming what the
# runtime said (then skipped); any other failure fails
ex=$(dirname "$0")/../../examples
skipped=0
# suite layers on both targets, and a whole model through `covenant run`
# (the model compiled whole, run through the runtime): it must PASS against ref
runs=("gpu run convnet_layer1 gemm_100x70x50 --target nvptx-sm90"
      "gpu run convnet_layer1 gemm_100x70x50 --target amdgpu-gfx90a"
      "run $ex/convnet.onnx --target nvptx-sm90")
for r in "${runs[@]}"; do
  t=${r##* }
  out=$("$cov" $r 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q "cannot run .*on $t: .*\(no NVIDIA driver\|no HIP runtime\|initialisation\)" <<<"$out"; then
    echo "no device for $t: $out"
    skipped=$((skipped + 1))
  elif [ $rc -ne 0 ]; then
    echo "FAIL: covenant $r: $out"
    exit 1
  elif [[ $r == run* ]] && ! grep -q "output .*max rel err .*PASS" <<<"$out"; then
    echo "FAIL: covenant $r: no PASS against ref: $out"
    exit 1
  else
    echo "$out"
  fi
done
[ $skipped -eq ${#runs[@]} ] && exit 77
exit 0
