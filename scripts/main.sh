#!/usr/bin/env bash
# scripts/main.sh: set up, build, and run covenant's main job on the default
# target npu-16x16.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The build is silent (its log goes to build.log) and takes about a minute
# the first time: say so, and how long it took.
echo "main: building covenant in build/ (log: build.log) ..." >&2
start=$SECONDS
scripts/build.sh build
echo "main: built in $((SECONDS - start)) s; running the main job" >&2
# The example ConvNet compiled for the simulated NPU and run in the cycle
# simulator on the shipped input: outputs, the check against the shipped
# numpy reference (examples/convnet_output.npy), cycles per layer group.
build/covenant run examples/convnet.onnx --target npu-16x16 --input examples/convnet_input.npy
