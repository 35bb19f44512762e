#!/usr/bin/env bash
# The GNU parallel route (explore/parallel/explore_parallel.sh): shards run by
# parallel, merged; equal to one run. Needs the Debian package 'parallel'
# (scripts/setup.sh installs it).
. "$(dirname "$0")/common.sh"
command -v parallel > /dev/null || { echo "FAIL: GNU parallel not installed (bash scripts/setup.sh)" >&2; exit 1; }
"$cov" explore "${study_args[@]}" -q -o "$work/single" > /dev/null || fail "single run"
bash "$src/explore/parallel/explore_parallel.sh" -c "$cov" 4 "$work/par" "${study_args[@]}" > /dev/null \
  || fail "parallel route"
same "$work/single/results.csv" "$work/par/results.csv" "parallel results"
same "$work/single/summary.csv" "$work/par/summary.csv" "parallel summary"
finish
