#!/usr/bin/env bash
# bench/nvptx/scripts/compile_check_models.sh COVENANT PAYLOAD [TARGET]: compiles the
# acceptance models whole for TARGET (default nvptx-sm90) into
# PAYLOAD/NAME/model.covart (the artifact covenant-run runs without LLVM) with
# the .onnx beside it, for bench/nvptx/scripts/check_models.py on the GPU machine.
# Run here (LLVM): the real exports are materialized first.
set -euo pipefail
cov=$1 out=$2 target=${3:-nvptx-sm90}
root=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$out/models"
/usr/bin/python3 "$root/tests/models/materialize.py" "$out/models" squeezenet1_1 mobilenet_v2 shufflenet_v2_x1_0 \
  resnet18 small_cnn > /dev/null
models="$root/examples/convnet.onnx $root/tests/frontend/models/squeezenet1_1.onnx
  $root/tests/frontend/models/mobilenet_v2.onnx $root/tests/frontend/models/shufflenet_v2_x0_5.onnx
  $root/tests/frontend/models/encoder.onnx $out/models/squeezenet1_1.onnx $out/models/mobilenet_v2.onnx
  $out/models/shufflenet_v2_x1_0.onnx $out/models/resnet18.onnx $out/models/small_cnn.onnx"
for m in $models; do
  # the real exports (materialized into $out/models) as real_NAME, the older small ones as NAME
  case "$m" in "$out"/models/*) d=real_$(basename "$m" .onnx) ;; *) d=$(basename "$m" .onnx) ;; esac
  rm -rf "$out/$d" && mkdir -p "$out/$d"
  "$cov" gpu compile "$m" --target "$target" -o "$out/$d/build" > /dev/null
  cp "$out/$d/build/model.covart" "$out/$d/"
  cp "$m" "$out/$d/model.onnx"
  [ -f "$m.data" ] && cp "$m.data" "$out/$d/"
  echo "compiled $m -> $out/$d/model.covart"
done
