#!/usr/bin/env bash
# scripts/test.sh: set up, build, and run every test twice: once in a normal
# build, once under AddressSanitizer + UndefinedBehaviorSanitizer (clang-19),
# (there also the allocation-failure sweeps of tests/fault: every command
# of them run with its Nth allocation failing, for a bounded range of N),
# then each libFuzzer target for FUZZ_SECONDS (default 30) seconds, then the
# multi-threaded test (tests/unit/test_threads.c) under ThreadSanitizer: that
# tree builds that one test only (no GPU backends), about a minute. The other
# build types with gcc and clang-19 are built (not tested) in between.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

echo "== build (gcc, -Werror)"
scripts/build.sh build
echo "== tests"
(cd build && ctest -j"$jobs" --output-on-failure)

# Optimizers see different code paths (gcc -O3's maybe-uninitialized and
# array-bounds, -Os's inlining): every build type with both compilers builds
# with -Werror. Tested above and below: gcc RelWithDebInfo (build), clang-19
# Debug (build-asan). Built whole: gcc and clang-19 Release. The other four
# build the libraries, the CLI and covenant-run only (what users build; the
# tests add a minute per configuration): gcc Debug and MinSizeRel, clang-19
# RelWithDebInfo and MinSizeRel. scripts/build_configs.sh builds all eight whole.
# (build-asan compiles the interpreters the tests run per MAC, and the
# mapper's search and cost model, at -O1: see
# CMakeLists.txt.)
echo "== build only (gcc Release, clang-19 Release; -Werror)"
scripts/build.sh build-release -DCMAKE_BUILD_TYPE=Release
CC=clang-19 scripts/build.sh build-clang-release -DCMAKE_BUILD_TYPE=Release
echo "== build only, libraries and programs (gcc Debug, MinSizeRel; clang-19 RelWithDebInfo, MinSizeRel; -Werror)"
lib_targets="covenant covenant_shared covenant-cli covenant-run"
COV_BUILD_TARGETS=$lib_targets scripts/build.sh build-gcc-debug -DCMAKE_BUILD_TYPE=Debug
COV_BUILD_TARGETS=$lib_targets scripts/build.sh build-gcc-minsize -DCMAKE_BUILD_TYPE=MinSizeRel
COV_BUILD_TARGETS=$lib_targets CC=clang-19 scripts/build.sh build-clang-relwithdebinfo \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
COV_BUILD_TARGETS=$lib_targets CC=clang-19 scripts/build.sh build-clang-minsize -DCMAKE_BUILD_TYPE=MinSizeRel

echo "== build (clang-19, ASan+UBSan, libFuzzer, allocation-failure injection)"
CC=clang-19 scripts/build.sh build-asan -DCOV_SANITIZE=ON -DCOV_FUZZ=ON -DCOV_FAULT_INJECT=ON \
  -DCMAKE_BUILD_TYPE=Debug
echo "== tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest -j"$jobs" --output-on-failure)

echo "== fuzzing (${FUZZ_SECONDS:-30}s per target)"
while read -r name seeds; do
  case "$name" in ''|'#'*) continue ;; esac
  corpus="build-asan/fuzz-corpus/$name"
  mkdir -p "$corpus"
  # shellcheck disable=SC2086 # seed dirs are a word list
  build-asan/fuzz_"$name" -max_total_time="${FUZZ_SECONDS:-30}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$corpus" $seeds > "build-asan/fuzz-$name.log" 2>&1 || {
      tail -50 "build-asan/fuzz-$name.log"; echo "fuzz_$name: FAILED"; exit 1; }
  echo "fuzz_$name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-asan/fuzz-$name.log" | grep -o '[0-9]*$') runs, no crash, leak or sanitizer report"
done < fuzz/seeds.txt
echo "== ThreadSanitizer (clang-19): tests/unit/test_threads only"
CC=clang-19 cmake -S . -B build-tsan -G Ninja -DCOV_TSAN=ON -DCOV_WITH_LLVM=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
ninja -C build-tsan test_threads > build-tsan.log 2>&1 || { cat build-tsan.log >&2; exit 1; }
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/unit/test_threads . 4 3
echo "all tests passed"
