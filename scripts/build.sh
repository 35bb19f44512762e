#!/usr/bin/env bash
# scripts/build.sh [DIR [cmake options...]]: configure (once) and build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "$@" > /dev/null
fi
ninja -C "$dir" > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
