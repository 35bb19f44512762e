#!/usr/bin/env bash
# planted_loc.sh PYTHON DIR: the location check run on a small tree with
# planted NULL locations (on one line and across two, a literal 0, a stale
# allow-list entry) beside calls it must pass (out of memory, allow-listed,
# located, in a comment, in cli/) must fail with exactly DIR/expected.txt.
set -u
py=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$dir" && "$py" "$here/check_locations.py" .)
rc=$?
if [ $rc -ne 1 ]; then
  echo "FAIL: the check exited $rc on planted violations, expected 1"; exit 1
fi
if ! diff <(printf '%s\n' "$out") "$dir/expected.txt"; then
  echo "FAIL: diagnostics differ from $dir/expected.txt"; exit 1
fi
echo "ok: every planted NULL location found"
