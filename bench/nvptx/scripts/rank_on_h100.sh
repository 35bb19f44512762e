#!/usr/bin/env bash
# bench/nvptx/scripts/rank_on_h100.sh PAYLOAD OUT [rank_bench.py options]: on the GPU
# machine (gcc, python3 with torch, the NVIDIA driver; no LLVM), build
# covrun.so from PAYLOAD/src and time every candidate schedule of
# PAYLOAD/candidates.txt (rank_prepare.sh fills PAYLOAD with LLVM).
set -eu
payload=$1 out=$2
shift 2
src=$payload/src
mkdir -p "$out"
cc -std=c11 -O2 -fPIC -shared -D_POSIX_C_SOURCE=200809L -I "$src/include" -I "$src" -o "$out/covrun.so" \
   "$src/bench/nvptx/scripts/covrun.c" "$src/runtime/crt_cuda.c" "$src/common/status.c" "$src/common/fileio.c" "$src/common/text.c" -ldl
python3 "$src/bench/nvptx/scripts/rank_bench.py" --payload "$payload/ptx" --cands "$payload/candidates.txt" \
  --lib "$out/covrun.so" --out "$out" "$@"
