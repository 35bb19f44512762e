#!/usr/bin/env bash
# planted.sh PYTHON DIR: the include check run on a small tree with planted
# violations (an internal header, an undeclared dependency, a relative
# include, a cycle, a stale allow-list entry) must fail with exactly the
# diagnostics of DIR/expected.txt, so the check on the real tree can fail.
set -u
py=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$dir" && "$py" "$here/check_includes.py" . modules.txt include_allow.txt)
rc=$?
if [ $rc -ne 1 ]; then
  echo "FAIL: the check exited $rc on planted violations, expected 1"; exit 1
fi
if ! diff <(printf '%s\n' "$out") "$dir/expected.txt"; then
  echo "FAIL: diagnostics differ from $dir/expected.txt"; exit 1
fi
echo "ok: every planted violation found"
