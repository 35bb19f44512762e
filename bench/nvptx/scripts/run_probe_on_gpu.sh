#!/usr/bin/env bash
# bench/nvptx/scripts/run_probe_on_gpu.sh PTX: on the GPU machine (which has a C
# compiler and the NVIDIA driver but no LLVM), build the probe runner from
# covenant's dlopen'ed driver layer and run PTX that was emitted here.
set -eu
cd "$(dirname "$0")/../../.."
ptx=${1:-build-gpu/probe.ptx}
mkdir -p build-gpu
cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -I include -I . -o build-gpu/run_probe \
   tests/nvptx/run_probe.c runtime/crt_cuda.c common/status.c common/fileio.c common/text.c -ldl -lm
build-gpu/run_probe "$ptx"
