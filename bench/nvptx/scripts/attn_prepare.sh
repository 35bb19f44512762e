#!/usr/bin/env bash
# bench/nvptx/scripts/attn_prepare.sh COVENANT PAYLOAD [SPEC...]: compile the fused
# attention kernels (default: BERT-base, 12 heads of 64, sequence 128 and
# 512, batch 1 and 32; 64 to 256 query rows per workgroup, 16 or 32 per
# warp or 64 per warpgroup; 64 or 128 keys per block; warpgroups pipelined,
# chained or neither: the mapper's pick at each shape is among them) for
# nvptx-sm90
# and copy the sources attn_on_h100.sh builds there.
set -eu
cov=$1 payload=$2
shift 2
root=$(cd "$(dirname "$0")/../../.." && pwd)
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  for b in 1 32; do
    for s in 128 512; do
      specs+=("attn_${b}x12x${s}x64:64x16" "attn_${b}x12x${s}x64:64x32" "attn_${b}x12x${s}x64:128x32"
              "attn_${b}x12x${s}x64:64x64" "attn_${b}x12x${s}x64:128x64" "attn_${b}x12x${s}x64:64x64x128"
              "attn_${b}x12x${s}x64:128x64x128" "attn_${b}x12x${s}x64:64x64p" "attn_${b}x12x${s}x64:64x64x128p"
              "attn_${b}x12x${s}x64:64x64c" "attn_${b}x12x${s}x64:64x64x128c")
      [ "$s" = 512 ] && specs+=("attn_${b}x12x${s}x64:256x64")
    done
  done
fi
rm -rf "$payload/ptx" "$payload/src"
"$cov" gpu compile "${specs[@]}" --target nvptx-sm90 -o "$payload/ptx"
for f in bench/nvptx/scripts/covrun.c bench/nvptx/scripts/gpu_bench.py bench/nvptx/scripts/attn_bench.py runtime/crt_cuda.c runtime/crt_cuda.h \
         common/status.c common/fileio.c common/text.c $(cd "$root" && ls common/*.h include/covenant/*.h); do
  mkdir -p "$payload/src/$(dirname "$f")"
  cp "$root/$f" "$payload/src/$f"
done
cp "$root/bench/nvptx/scripts/attn_on_h100.sh" "$payload/"
du -sh "$payload"
