#!/usr/bin/env bash
# bench/nvptx/scripts/rank_prepare.sh COVENANT PAYLOAD [TOP]: here (with LLVM), the
# mapper's TOP (default 8) ranked GPU schedules of every suite GPU shape and
# bench/nvptx kernel (`covenant gpu candidates`), plus the schedules the
# former planner (gpu_plan_choose) picked for them (rank_baseline.txt),
# compiled to PTX for nvptx-sm90 as hand-fixed specs, with the runner's
# sources; there: bash PAYLOAD/rank_on_h100.sh PAYLOAD OUT (README.md).
set -eu
cov=$1 payload=$2 top=${3:-8}
root=$(cd "$(dirname "$0")/../../.." && pwd)
shapes=(gemm_1024x1024x1024 gemm_4096x4096x4096 gemm_8192x8192x8192 gemm_512x2304x768 gemm_4096x3072x768
        resnet50_conv1 resnet50_res2_3x3 resnet50_res3_1x1 resnet50_res4_3x3 resnet50_res5_1x1 mobilenetv2_dw3x3
        mobilenetv2_pw1x1 bert_base_qkv bert_base_ffn1 bert_base_attn_qk dlrm_mlp_top convnet_layer1 convnet_layer2
        resnet50_res2_3x3@b32 resnet50_res4_3x3@b32 convnet_layer1@b32 bert_base_attn_qk@b32)
fused=(fused_3x3_c64_56_pool fused_3x3_c128_28_pool)
rm -rf "$payload"
mkdir -p "$payload"
"$cov" gpu candidates "${shapes[@]}" --target nvptx-sm90 --top "$top" > "$payload/candidates.txt"
"$cov" gpu candidates "${fused[@]}" --suite "$root/bench/nvptx/inputs/fused_layers.json" --target nvptx-sm90 --top "$top" \
  > "$payload/candidates_fused.txt"
# the former planner's picks (rank -1), unless the mapper ranked the same schedule
for f in candidates candidates_fused; do
  grep -v '^#' "$root/bench/nvptx/inputs/rank_baseline.txt" | while read -r spec hand kernel; do
    if grep -q "^$spec " "$payload/$f.txt" && ! grep -q " $kernel " "$payload/$f.txt"; then
      echo "$spec $hand $kernel -1 -" >> "$payload/$f.txt"
    fi
  done
done
"$cov" gpu compile $(awk '{print $2}' "$payload/candidates.txt" | sort -u) --target nvptx-sm90 -o "$payload/ptx"
"$cov" gpu compile $(awk '{print $2}' "$payload/candidates_fused.txt" | sort -u) \
  --suite "$root/bench/nvptx/inputs/fused_layers.json" --target nvptx-sm90 -o "$payload/fused"
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
cat "$payload/candidates_fused.txt" >> "$payload/candidates.txt"
rm "$payload/candidates_fused.txt"
for f in bench/nvptx/scripts/covrun.c bench/nvptx/scripts/gpu_bench.py bench/nvptx/scripts/rank_bench.py bench/nvptx/scripts/spearman.py runtime/crt_cuda.c runtime/crt_cuda.h \
         common/status.c common/fileio.c common/text.c $(cd "$root" && ls common/*.h include/covenant/*.h); do
  mkdir -p "$payload/src/$(dirname "$f")"
  cp "$root/$f" "$payload/src/$f"
done
cp "$root/bench/nvptx/scripts/rank_on_h100.sh" "$payload/"
echo "$(wc -l < "$payload/candidates.txt") candidates, $(ls "$payload/ptx" | wc -l) files"
du -sh "$payload"
