#!/usr/bin/env bash
# bench/nvptx/scripts/tune_prepare.sh COVENANT OUT [TOP] [MODEL]: here (with LLVM),
# step 1 of measured tuning (backends/gpu/README.md, "Measured tuning") for
# the H100 run: the suite's GPU shapes and bench/nvptx's GEMM/conv shapes
# (matrix kernels; mobilenetv2_dw3x3@cl the channels-last depthwise kernel)
# (`covenant tune ... --top TOP`, default 8) into OUT/suite, one real model
# (default mobilenet_v2, batch 1, materialized from tests/models) into
# OUT/model, and the model compiled with the compiler's own picks
# (OUT/untuned.covart). With OUT under the repository's ignored
# build-h100-* directories, the device runs
#     bash bench/nvptx/scripts/tune_on_h100.sh OUT RESULTS
# then here tune_record.sh OUT RESULTS writes the tuning files and compiles
# OUT/tuned.covart, and a second device call times both models.
set -eu
cov=$1 out=$2 top=${3:-8} model=${4:-mobilenet_v2}
root=$(cd "$(dirname "$0")/../../.." && pwd)
shapes=(gemm_1024x1024x1024 gemm_4096x4096x4096 gemm_8192x8192x8192 gemm_512x2304x768 gemm_4096x3072x768
        resnet50_conv1 resnet50_res2_3x3 resnet50_res3_1x1 resnet50_res4_3x3 resnet50_res5_1x1 mobilenetv2_dw3x3
        mobilenetv2_pw1x1 bert_base_qkv bert_base_ffn1 bert_base_attn_qk dlrm_mlp_top convnet_layer1 convnet_layer2
        resnet50_res2_3x3@b32 resnet50_res4_3x3@b32 convnet_layer1@b32 bert_base_attn_qk@b32
        mobilenetv2_dw3x3@cl)
rm -rf "$out"
mkdir -p "$out/onnx"
"$cov" tune "${shapes[@]}" --target nvptx-sm90 --top "$top" -o "$out/suite"
/usr/bin/python3 "$root/tests/models/materialize.py" "$out/onnx" "$model" > /dev/null
"$cov" tune "$out/onnx/$model.onnx" --target nvptx-sm90 --top "$top" -o "$out/model"
"$cov" compile "$out/onnx/$model.onnx" --target nvptx-sm90 -o "$out/untuned.covart"
echo "$model" > "$out/model_name"
rm -rf "$out/onnx"
du -sh "$out"
