#!/usr/bin/env bash
# scripts/build_configs.sh [DIR]: builds every configuration, -Werror:
# Debug, Release, RelWithDebInfo and MinSizeRel, each with gcc and clang-19,
# in DIR/<compiler>-<type> (default build-configs/). Build only; ctest runs
# in scripts/test.sh. Fails at the first configuration with a warning.
set -euo pipefail
cd "$(dirname "$0")/.."
top=${1:-build-configs}
for cc in gcc clang-19; do
  for type in Debug Release RelWithDebInfo MinSizeRel; do
    echo "== $cc $type"
    CC=$cc scripts/build.sh "$top/$cc-$type" -DCMAKE_BUILD_TYPE=$type
  done
done
echo "every configuration builds without a warning"
