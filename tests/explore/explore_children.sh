#!/usr/bin/env bash
# A study waits for its own workers only: a child the calling process
# started before it (here a shell's background job that becomes covenant's
# child through exec) is neither counted as a worker nor reaped, so every
# design still runs and is written.
. "$(dirname "$0")/common.sh"
for j in 1 2; do
  sh -c 'sleep 0.3 & exec "$@"' sh "$cov" explore "${study_args[@]}" -q -j $j -o "$work/j$j" > /dev/null \
    || fail "-j $j with a foreign child"
  n=$(tail -n +2 "$work/j$j/summary.csv" | grep -c ',ok,')
  [ "$n" -eq 27 ] || fail "-j $j with a foreign child: $n of 27 designs in summary.csv"
done
"$cov" explore "${study_args[@]}" -q -j 2 -o "$work/plain" > /dev/null || fail "plain run"
same "$work/plain/summary.csv" "$work/j1/summary.csv" "summary with a foreign child"
finish
