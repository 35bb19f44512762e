#!/usr/bin/env bash
# bench/nvptx/scripts/run_on_h100.sh PAYLOAD OUT [gpu_bench.py options]: on the GPU
# machine (gcc, python3 with torch, the NVIDIA driver; no LLVM), build
# covrun.so from the sources carried in PAYLOAD/src and run gpu_bench.py on
# the PTX in PAYLOAD/ptx, then print the kernel summary table from its results
# (kernel_summary.py). prepare_payload.sh fills PAYLOAD on a machine with
# LLVM.
set -eu
payload=$1 out=$2
shift 2
src=$payload/src
mkdir -p "$out"
cc -std=c11 -O2 -fPIC -shared -D_POSIX_C_SOURCE=200809L -I "$src/include" -I "$src" -o "$payload/covrun.so" \
   "$src/bench/nvptx/scripts/covrun.c" "$src/runtime/crt_cuda.c" "$src/common/status.c" "$src/common/fileio.c" "$src/common/text.c" -ldl
rc=0
python3 "$src/bench/nvptx/scripts/gpu_bench.py" --payload "$payload/ptx" --lib "$payload/covrun.so" --out "$out" "$@" || rc=$?
# the kernel summary table from this run (when the bench got as far as its results)
if [ -f "$out/results.json" ] && [ -f "$src/bench/nvptx/scripts/kernel_summary.py" ]; then
  python3 "$src/bench/nvptx/scripts/kernel_summary.py" "$out/results.json" || rc=1
fi
exit $rc
