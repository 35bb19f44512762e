#!/usr/bin/env bash
# tests/fault/fault_sweep.sh COVENANT_FAULT MAX_RUNS NAME -- ARGS...
#
# Runs `covenant ARGS` once to count its allocations (COV_FAULT_REPORT=1),
# then once per N with the Nth allocation failing (COV_FAULT_ALLOC=N): every
# N when there are at most MAX_RUNS, else MAX_RUNS values of N spread evenly
# over the range (the first 32 always among them: start-up paths). Each run
# must end cleanly: exit 0 with the same stdout as the run without a
# failure (the allocation was not needed after all), or exit 1-2 with a
# message on stderr; never a signal, a time-out, or a sanitizer report (run
# it on the ASan build: leaks on error paths are reported there).
# Lines of stdout that differ from run to run (wall times) are left out
# of the comparison (FAULT_IGNORE, an extended regex, '^wall time' by default).
# Each run's working directory is a fresh folder: outputs written by ARGS
# go there and are compared, file by file, with the run without a failure.
# Prints one summary line; exits 1 on the first bad run.
set -u
bin=$1 max=$2 name=$3 ignore=${FAULT_IGNORE:-^wall time}
shift 4
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/ref" && cd "$work/ref" || exit 1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
COV_FAULT_REPORT=1 timeout 120 "$bin" "$@" > ../ref.out 2> ../ref.err
rc=$?
[ $rc -eq 0 ] || { echo "FAIL $name: the run without a failure exits $rc"; cat ../ref.err; exit 1; }
cd "$work" || exit 1
total=$(sed -n 's/^fault: \([0-9]*\) allocations$/\1/p' ref.err | tail -1)
[ -n "$total" ] && [ "$total" -gt 0 ] || { echo "FAIL $name: no allocation count (not a fault-injection build?)"; exit 1; }
ns=$(python3 -c '
import sys
t, m = int(sys.argv[1]), int(sys.argv[2])
ns = set(range(1, min(t, 32) + 1))
if t <= m: ns = set(range(1, t + 1))
else:
    k = m - len(ns)
    ns |= {1 + (i * (t - 1)) // max(k - 1, 1) for i in range(k)}
print(" ".join(map(str, sorted(ns))))' "$total" "$max")
runs=0 clean_err=0 absorbed=0
for n in $ns; do
  rm -rf run && mkdir run || exit 1
  (cd run && COV_FAULT_ALLOC=$n exec timeout 120 "$bin" "$@") > run.out 2> run.err
  rc=$?
  runs=$((runs + 1))
  bad=""
  if grep -qE "AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:" run.err; then bad="sanitizer report"
  elif [ $rc -ge 124 ]; then bad="exit $rc (signal or time-out)"
  elif [ $rc -eq 0 ]; then
    if cmp -s <(grep -vE "$ignore" run.out) <(grep -vE "$ignore" ref.out) && diff -rq ref run > /dev/null; then absorbed=$((absorbed + 1)); else bad="exit 0 with different output"; fi
  elif [ $rc -le 2 ]; then
    if [ -s run.err ]; then clean_err=$((clean_err + 1)); else bad="exit $rc with nothing on stderr"; fi
  else bad="exit $rc"
  fi
  if [ -n "$bad" ]; then
    echo "FAIL $name: allocation $n of $total: $bad"
    head -40 run.err
    exit 1
  fi
done
echo "$name: $runs of $total allocations failed one at a time: $clean_err clean errors, $absorbed absorbed"
