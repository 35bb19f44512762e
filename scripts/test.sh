#!/usr/bin/env bash
# scripts/test.sh: set up, build, and run every test twice: once in a normal
# build, once under AddressSanitizer + UndefinedBehaviorSanitizer (clang-19),
# (there also the allocation-failure sweeps of tests/fault: every command
# of them run with its Nth allocation failing, for a bounded range of N),
# then each libFuzzer target for FUZZ_SECONDS (default 30) seconds (as many
# at a time as there are cores), then the
# multi-threaded test (tests/unit/test_threads.c) under ThreadSanitizer: that
# tree builds that one test only (no GPU backends), about a minute. The other
# build types with gcc and clang-19 are built (not tested) in between.
# At the end (also after a failure) it prints what it cost: the time of
# each stage and in all, the disk each build tree takes, the ONNX
# conformance count (passed, failed, skipped by class), and every test
# that was skipped (exit 77: a tool or a device this machine lacks) with
# the reason the test gave.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

start=$SECONDS stage_start=$SECONDS stage_name="" stages=()
trees=(build build-release build-clang-release build-gcc-debug build-gcc-minsize build-clang-relwithdebinfo
       build-clang-minsize build-asan build-tsan)
stage() { # stage NAME: closes the stage running, opens NAME
  [ -n "$stage_name" ] && stages+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$stage_name")")
  stage_name=$1 stage_start=$SECONDS
  echo "== $1"
}
# ctest in DIR, its log kept for the summary's list of skipped tests
run_ctest() {
  (cd "$1" && ctest -j"$jobs" --output-on-failure | tee ctest-summary.log)
}
skipped_in() { # the tests ctest reported as skipped in DIR, with the reason each printed
  local log=$1/ctest-summary.log name
  [ -f "$log" ] || return 0
  sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$log" | while read -r name; do
    reason=$(ctest --test-dir "$1" -R "^${name}\$" -V 2>/dev/null | grep -m1 -i 'skip' | sed 's/^ *//')
    printf '  %s: %s  %s\n' "$1" "$name" "${reason:-(no reason printed)}"
  done
}
summary() {
  local rc=$?
  # a report: nothing in it may change the exit status (grep -m1 closing
  # ctest's pipe early is a SIGPIPE, which pipefail and -e would turn
  # into the script's status)
  set +e +o pipefail
  stage "summary"
  echo "time per stage:"; printf '  %s\n' "${stages[@]}"
  printf 'time in all: %dm%02ds\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60))
  echo "disk per build tree:"
  local t total=0 kb
  for t in "${trees[@]}"; do
    [ -d "$t" ] || continue
    kb=$(du -sk "$t" | cut -f1); total=$((total + kb))
    printf '  %6d MiB  %s\n' $((kb / 1024)) "$t"
  done
  printf '  %6d MiB  in all\n' $((total / 1024))
  # before skipped_in, whose ctest runs rewrite LastTest.log
  echo "ONNX backend conformance (frontend_onnx_conformance):"
  for t in build build-asan; do
    grep -h '^conformance: ' "$t/Testing/Temporary/LastTest.log" 2>/dev/null | sed "s|^|  $t: |"
  done
  echo "skipped tests (exit 77):"
  skipped_in build; skipped_in build-asan
  if [ "$rc" -eq 0 ]; then echo "all tests passed"; else echo "FAILED (exit $rc)"; fi
  exit "$rc"
}
trap summary EXIT

stage "build (gcc, -Werror)"
scripts/build.sh build
stage "tests"
run_ctest build

# Optimizers see different code paths (gcc -O3's maybe-uninitialized and
# array-bounds, -Os's inlining): every build type with both compilers builds
# with -Werror. Tested above and below: gcc RelWithDebInfo (build), clang-19
# Debug (build-asan). Built whole: gcc and clang-19 Release. The other four
# build the libraries, the CLI and covenant-run only (what users build; the
# tests add a minute per configuration): gcc Debug and MinSizeRel, clang-19
# RelWithDebInfo and MinSizeRel. scripts/build_configs.sh builds all eight whole.
# (build-asan, Debug, compiles at -O1: see CMakeLists.txt.)
stage "build only (gcc Release, clang-19 Release; -Werror)"
scripts/build.sh build-release -DCMAKE_BUILD_TYPE=Release
CC=clang-19 scripts/build.sh build-clang-release -DCMAKE_BUILD_TYPE=Release
stage "build only, libraries and programs (gcc Debug, MinSizeRel; clang-19 RelWithDebInfo, MinSizeRel; -Werror)"
lib_targets="covenant covenant_shared covenant-cli covenant-run"
COV_BUILD_TARGETS=$lib_targets scripts/build.sh build-gcc-debug -DCMAKE_BUILD_TYPE=Debug
COV_BUILD_TARGETS=$lib_targets scripts/build.sh build-gcc-minsize -DCMAKE_BUILD_TYPE=MinSizeRel
COV_BUILD_TARGETS=$lib_targets CC=clang-19 scripts/build.sh build-clang-relwithdebinfo \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
COV_BUILD_TARGETS=$lib_targets CC=clang-19 scripts/build.sh build-clang-minsize -DCMAKE_BUILD_TYPE=MinSizeRel

stage "build (clang-19, ASan+UBSan, libFuzzer, allocation-failure injection)"
CC=clang-19 scripts/build.sh build-asan -DCOV_SANITIZE=ON -DCOV_FUZZ=ON -DCOV_FAULT_INJECT=ON \
  -DCMAKE_BUILD_TYPE=Debug
stage "tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest build-asan

# The fuzzers run $jobs at a time, each for FUZZ_SECONDS of its own (a
# libFuzzer target is one process on one core): the fuzzing each gets is
# the same as one after the other, in half the time on 2 cores.
fuzz_pids=() fuzz_names=()
fuzz_start() { # fuzz_start NAME SEEDS...: starts one target in the background
  local name=$1 corpus="build-asan/fuzz-corpus/$1"
  shift
  mkdir -p "$corpus"
  rm -f "build-asan/fuzz-$name.rc"
  # the status goes to a file: bash may have forgotten a finished child by
  # the time `wait` asks for it ("No record of process")
  (build-asan/fuzz_"$name" -max_total_time="${FUZZ_SECONDS:-30}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$corpus" "$@" > "build-asan/fuzz-$name.log" 2>&1
   echo $? > "build-asan/fuzz-$name.rc") &
  fuzz_pids+=($!) fuzz_names+=("$name")
}
fuzz_wait() { # waits for the oldest target running and reports it; a failure stops the others
  local pid=${fuzz_pids[0]} name=${fuzz_names[0]}
  fuzz_pids=("${fuzz_pids[@]:1}") fuzz_names=("${fuzz_names[@]:1}")
  wait "$pid" 2>/dev/null || true
  local t=0
  while [ ! -s "build-asan/fuzz-$name.rc" ] && [ $t -lt 600 ]; do sleep 1; t=$((t + 1)); done
  if [ "$(cat "build-asan/fuzz-$name.rc" 2>/dev/null)" != 0 ]; then
    local p
    for p in "${fuzz_pids[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
    tail -50 "build-asan/fuzz-$name.log"; echo "fuzz_$name: FAILED"; exit 1
  fi
  echo "fuzz_$name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-asan/fuzz-$name.log" | grep -o '[0-9]*$') runs, no crash, leak or sanitizer report"
}
stage "fuzzing (${FUZZ_SECONDS:-30}s per target, $jobs at a time)"
while read -r name seeds; do
  case "$name" in ''|'#'*) continue ;; esac
  [ ${#fuzz_pids[@]} -lt "$jobs" ] || fuzz_wait
  # shellcheck disable=SC2086 # seed dirs are a word list
  fuzz_start "$name" $seeds
done < fuzz/seeds.txt
while [ ${#fuzz_pids[@]} -gt 0 ]; do fuzz_wait; done
stage "ThreadSanitizer (clang-19): tests/unit/test_threads only"
CC=clang-19 cmake -S . -B build-tsan -G Ninja -DCOV_TSAN=ON -DCOV_WITH_LLVM=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
ninja -C build-tsan test_threads > build-tsan.log 2>&1 || { cat build-tsan.log >&2; exit 1; }
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/unit/test_threads . 4 3
