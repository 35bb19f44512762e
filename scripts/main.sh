#!/usr/bin/env bash
# scripts/main.sh: set up, build, and run covenant's main job on the default
# target npu-16x16.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
build/covenant acg show npu-16x16
