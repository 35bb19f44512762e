#!/usr/bin/env bash
# bench_builds.sh ROOT WORK: the GPU machine has a C compiler and the driver,
# no CMake build of covenant and no LLVM, so the bench scripts build their
# runners there with cc from a list of sources (bench/nvptx/scripts/*.sh).
# Each script's cc command, run here from the source tree with its
# variables (src, payload, out) pointing at ROOT and WORK, must compile and
# link: a source the list leaves out is caught here, not on the H100.
set -u
root=$1 work=$2
rm -rf "$work" && mkdir -p "$work/build-gpu" || exit 1
fail=0 n=0
for s in "$root"/bench/nvptx/scripts/*.sh; do
  # the command: from a line starting with cc to the first without a trailing backslash
  cmd=$(awk '/^[[:space:]]*cc /{on=1} on{print; if (!/\\$/) exit}' "$s")
  [ -n "$cmd" ] || continue
  n=$((n + 1))
  name=$(basename "$s")
  cmd=${cmd//build-gpu\//$work/build-gpu/}
  if ! (cd "$root" && src=$root payload=$work out=$work && eval "$cmd") > "$work/$name.log" 2>&1; then
    echo "FAIL: $name: its cc command does not build"
    tail -5 "$work/$name.log"
    fail=1
  fi
done
[ "$n" -ge 4 ] || { echo "FAIL: found $n cc commands in bench/nvptx/scripts, expected at least 4"; exit 1; }
[ "$fail" = 0 ] && echo "ok: the $n cc commands of bench/nvptx/scripts build"
exit "$fail"
