#!/usr/bin/env bash
# golden.sh BUILD OUT: every compiler output a refactor must keep byte for byte.
#
# Compiles the suite layers and the models on the shipped NPU and DSP
# targets (simulating each layer's program and running the ConvNet's
# artifact), two nvptx-sm90 artifacts and a small explore study into OUT,
# with the covenant binary of BUILD. Run it before and after a change and
# compare with `cmp`/`diff -r` (scripts/golden.sh build /tmp/a; ...;
# diff -r /tmp/a /tmp/b). Models: examples/convnet.onnx and those of
# tests/models/materialize.py (materialized into OUT/models once).
set -euo pipefail
build=${1:?usage: golden.sh BUILD OUT}
out=${2:?usage: golden.sh BUILD OUT}
cov="$build/covenant"
root=$(cd "$(dirname "$0")/.." && pwd)
suite="$root/bench/suite/layers.json"
models_dir=${GOLDEN_MODELS:-$out/models}
mkdir -p "$out" "$models_dir"
# the codelets from one fixed folder: a model's artifact names the file of a
# codelet's error, which would otherwise differ between two checkouts
codelets=${GOLDEN_CODELETS:-/tmp/golden-codelets}
mkdir -p "$codelets" && cp "$root"/codelets/*.cdl "$codelets"/
export COVENANT_CODELET_PATH=$codelets
names="resnet18_64 mobilenet_v2_64 vit_tiny int8_qdq_cnn"
for m in $names; do
  [ -f "$models_dir/$m.onnx" ] ||
    /usr/bin/python3 "$root/tests/models/materialize.py" "$models_dir" "$m" >/dev/null
done
models="$root/examples/convnet.onnx"
for m in $names; do models="$models $models_dir/$m.onnx"; done
layers=$("$cov" layers --suite "$suite" | sed -n 's/^  //p')

# run CMD...: record the command's status and its diagnostics too
run() {
  local tag=$1; shift
  local rc=0
  "$@" >"$out/log/$tag.out" 2>&1 || rc=$?
  sed -i "s|$out|OUT|g; s|$root|ROOT|g" "$out/log/$tag.out"
  echo "$rc" >"$out/log/$tag.rc"
}
mkdir -p "$out/log"
for t in npu-16x16 npu-32x32-os npu-4core dsp-hvx npu-matrix; do
  mkdir -p "$out/$t/layers" "$out/$t/models"
  for l in $layers; do
    run "$t.$l" "$cov" compile "$l" --target "$t" --suite "$suite" -o "$out/$t/layers/$l"
    run "$t.$l.sim" "$cov" sim "$out/$t/layers/$l/program.npu"
  done
  for m in $models; do
    b=$(basename "$m" .onnx)
    run "$t.$b" "$cov" compile "$m" --target "$t" -o "$out/$t/models/$b.art"
  done
  run "$t.convnet.run" "$build/covenant-run" "$out/$t/models/convnet.art" \
    --input "$root/examples/convnet_input.npy" -o "$out/$t/models/convnet.npy"
done
mkdir -p "$out/nvptx-sm90"
run nvptx.layers "$cov" compile all --target nvptx-sm90 --suite "$suite" --report \
  -o "$out/nvptx-sm90/layers"
run nvptx.convnet "$cov" compile "$root/examples/convnet.onnx" --target nvptx-sm90 \
  -o "$out/nvptx-sm90/convnet.art"
run nvptx.resnet18 "$cov" compile "$models_dir/resnet18_64.onnx" --target nvptx-sm90 \
  -o "$out/nvptx-sm90/resnet18_64.art"
run explore "$cov" explore --base npu-16x16 --vary pe_array.dims=8x8,16x16 \
  --vary ibuf.capacity=32KiB,64KiB --suite resnet50_conv1,mobilenetv2_dw3x3,bert_base_qkv \
  --eval mapper -j 1 -q -o "$out/explore-mapper"
run explore-model "$cov" explore --base npu-16x16 --vary pe_array.dims=8x8,16x16 \
  --model "$root/examples/convnet.onnx" --eval roofline -j 1 -q -o "$out/explore-roofline"
rm -rf "$models_dir/__pycache__"
echo "golden: $(find "$out" -type f -not -path "$models_dir/*" | wc -l) files in $out"
