#!/usr/bin/env bash
# scripts/build.sh [DIR [cmake options...]]: configure (once) and build.
# COV_BUILD_TARGETS (space-separated ninja targets) builds only those.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "$@" > /dev/null
fi
# shellcheck disable=SC2086 # a word list of targets
ninja -C "$dir" ${COV_BUILD_TARGETS:-} > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
