#!/usr/bin/env bash
# bench/nvptx/scripts/attn_on_h100.sh PAYLOAD OUT [attn_bench.py options]: on the GPU
# machine, build covrun.so from PAYLOAD/src and run attn_bench.py on the
# kernels in PAYLOAD/ptx (attn_prepare.sh fills PAYLOAD).
set -eu
payload=$1 out=$2
shift 2
src=$payload/src
mkdir -p "$out"
cc -std=c11 -O2 -fPIC -shared -D_POSIX_C_SOURCE=200809L -I "$src/include" -I "$src" -o "$payload/covrun.so" \
   "$src/bench/nvptx/scripts/covrun.c" "$src/runtime/crt_cuda.c" "$src/common/status.c" "$src/common/fileio.c" "$src/common/text.c" -ldl
python3 "$src/bench/nvptx/scripts/attn_bench.py" --payload "$payload/ptx" --lib "$payload/covrun.so" --out "$out" "$@"
