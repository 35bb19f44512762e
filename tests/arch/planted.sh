#!/usr/bin/env bash
# planted.sh PYTHON DIR CHECK [ARG...]: an architecture check run (from DIR,
# as `PYTHON CHECK . ARG...`) on a small tree with planted violations must
# exit 1 with exactly the diagnostics of DIR/expected.txt, so the check on
# the real tree can fail. planted/: the include check (an internal header,
# an undeclared dependency, a relative include, a cycle, a stale allow-list
# entry); planted_loc/: the location check (NULL locations on one line and
# across two, a literal 0, a stale allow-list entry, beside calls it must
# pass: out of memory, allow-listed, located, in a comment, in cli/).
set -u
py=$1 dir=$2 check=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$dir" && "$py" "$here/$check" . "$@")
rc=$?
if [ $rc -ne 1 ]; then
  echo "FAIL: $check exited $rc on planted violations, expected 1"; exit 1
fi
if ! diff <(printf '%s\n' "$out") "$dir/expected.txt"; then
  echo "FAIL: $check's diagnostics differ from $dir/expected.txt"; exit 1
fi
echo "ok: $check reported every planted violation"
