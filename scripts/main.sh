#!/usr/bin/env bash
# scripts/main.sh: set up, build, and run covenant's main job on the default
# target npu-16x16.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
# The example ConvNet compiled for the simulated NPU and run in the cycle
# simulator: outputs, the check against the CPU reference, per-layer cycles.
build/covenant run examples/convnet.onnx --target npu-16x16
