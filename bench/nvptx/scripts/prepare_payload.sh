#!/usr/bin/env bash
# bench/nvptx/scripts/prepare_payload.sh COVENANT PAYLOAD [LAYER...]: compile the
# layers (default: the suite, its GPU shapes, batch-32 convolutions, pool,
# attention and fused attention) to PTX
# for nvptx-sm90 and copy the sources run_on_h100.sh builds there.
set -eu
cov=$1 payload=$2
shift 2
root=$(cd "$(dirname "$0")/../../.." && pwd)
layers=("$@")
if [ ${#layers[@]} -eq 0 ]; then
  layers=(all gemm_1024x1024x1024 gemm_4096x4096x4096 gemm_8192x8192x8192 gemm_512x2304x768
          gemm_4096x3072x768 resnet50_res2_3x3@b32 resnet50_res4_3x3@b32 convnet_layer1@b32
          resnet50_stem_pool@b32 bert_base_attn_qk@b32
          resnet50_res2_3x3@b32@cl resnet50_res3_1x1@b32@cl resnet50_res4_3x3@b32@cl resnet50_res5_1x1@b32@cl
          mobilenetv2_dw3x3@b32@cl)
  # (@cl: the same convolutions on channels-last tensors, NHWC f16 in and
  # out, as cuDNN's channels-last call takes them: like with like)
  # fused attention at the BERT-base shapes, the mapper's tiles (attn_bench.py's
  # check and timing against torch SDPA)
  layers+=(attn_1x12x128x64 attn_1x12x512x64 attn_32x12x128x64 attn_32x12x512x64)
  # the GEMMs above are the compiler's own picks (the mapper's plan: the
  # warp-specialised persistent kernel with bulk tensor copies where the
  # tiles divide), with f32 outputs; next to them the compiler's picks for
  # the same layers with f16 outputs (NAME:f16), as cuBLAS writes them:
  # like with like, the headline. The 1x1 and depthwise convolutions at
  # batch 32 complete the kernel summary table.
  layers+=(gemm_1024x1024x1024:f16 gemm_4096x4096x4096:f16 gemm_8192x8192x8192:f16 gemm_512x2304x768:f16
           gemm_4096x3072x768:f16 resnet50_res3_1x1@b32 resnet50_res5_1x1@b32 mobilenetv2_dw3x3@b32)
fi
rm -rf "$payload/ptx" "$payload/src"
"$cov" gpu compile "${layers[@]}" --target nvptx-sm90 -o "$payload/ptx"
# the fused conv+relu+maxpool layers of bench/nvptx/inputs/fused_layers.json, merged
# into the same manifest
"$cov" gpu compile fused_3x3_c64_56_pool fused_3x3_c128_28_pool --suite "$root/bench/nvptx/inputs/fused_layers.json" \
  --target nvptx-sm90 -o "$payload/fused"
/usr/bin/python3 - "$payload" <<'PY'
import json, os, shutil, sys
d = sys.argv[1]
man = json.load(open(os.path.join(d, "ptx", "manifest.json")))
for k in json.load(open(os.path.join(d, "fused", "manifest.json")))["kernels"]:
    shutil.copy(os.path.join(d, "fused", k["file"]), os.path.join(d, "ptx", k["file"]))
    man["kernels"].append(k)
json.dump(man, open(os.path.join(d, "ptx", "manifest.json"), "w"), indent=1)
shutil.rmtree(os.path.join(d, "fused"))
PY
# (every public and common header: status.h includes covenant/api.h)
for f in bench/nvptx/scripts/covrun.c bench/nvptx/scripts/gpu_bench.py bench/nvptx/scripts/attn_bench.py bench/nvptx/scripts/kernel_summary.py \
         runtime/crt_cuda.c runtime/crt_cuda.h \
         common/status.c common/fileio.c common/text.c $(cd "$root" && ls common/*.h include/covenant/*.h) \
         examples/convnet.onnx; do
  mkdir -p "$payload/src/$(dirname "$f")"
  cp "$root/$f" "$payload/src/$f"
done
cp "$root/bench/nvptx/scripts/run_on_h100.sh" "$payload/"
du -sh "$payload"
