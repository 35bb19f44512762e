#!/bin/bash
# covenant map: usage errors exit 2, input errors 1 with a located message,
# --explain prints the schedule, its cost and alternatives, -o writes a file.
set -u
cov=$1
fail=0
expect() { # rc pattern cmd...
  local want=$1 pat=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: $* (rc $rc, want $want, pattern '$pat')"; echo "$out" | head -5; fail=1
  fi
}
expect 0 "usage: covenant map" "$cov" map --help
expect 2 "--target is required" "$cov" map convnet_layer2
expect 2 "unknown option" "$cov" map convnet_layer2 --target npu-16x16 --frobnicate
expect 2 "positive integer" "$cov" map convnet_layer2 --target npu-16x16 --budget 0
expect 1 "no layer named 'nosuch'" "$cov" map nosuch --target npu-16x16
expect 0 "next best alternatives" "$cov" map convnet_layer2 --target npu-16x16 --explain
expect 0 "cost:" "$cov" map convnet_layer2 --target npu-32x32-os --explain
expect 0 "utilisation of pe_array" "$cov" map resnet50_res3_1x1 --target npu-16x16 --explain
expect 0 "narrowed" "$cov" map resnet50_res3_1x1 --target npu-16x16 --dump=schedule
expect 0 "check: .*: ok" "$cov" map convnet_layer1 --target npu-16x16 --check
expect 0 "check: .*: ok" "$cov" map --codelet matmul --shape 8x12 --shape 12x4 --target npu-32x32-os --check
# GPU targets: the GPU search's schedule, cost and ranked alternatives
expect 0 "chosen: tile .* warpgroup 64x.* matrix 64x" "$cov" map bert_base_qkv --target nvptx-sm90 --explain
expect 0 "next best alternatives" "$cov" map resnet50_res4_3x3 --target amdgpu-gfx942 --explain
expect 0 "channels-last" "$cov" map resnet50_res2_3x3 --target nvptx-sm90 --explain
expect 0 "whole rows per workgroup" "$cov" map bert_base_attn_qk --target amdgpu-gfx90a --explain
expect 1 "not a contraction" "$cov" map resnet50_stem_pool --target nvptx-sm90 --explain
expect 0 "check: .*: ok" "$cov" map convnet_layer1 --target amdgpu-gfx942 --check
tmp=$(mktemp)
expect 0 "" "$cov" map convnet_layer2 --target npu-16x16 --dump=schedule -o "$tmp"
grep -q "schedule convnet_layer2 on npu-16x16" "$tmp" || { echo "FAIL: -o"; fail=1; }
rm -f "$tmp"
exit $fail
