#!/usr/bin/env bash
# expect_error.sh COVENANT SRCDIR FILE EXPECTED
# Runs `covenant codelet check FILE` from the source tree and requires exit
# status 1 and a stderr equal, line for line, to the EXPECTED file: every
# located diagnostic, the first one being the file's first mistake.
set -u
cov=$1 src=$2 file=$3 expected=$4
cd "$src" || exit 2
actual=$("$cov" codelet check "$file" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 1 ]; then
  echo "FAIL: $file: expected exit status 1, got $rc"
  printf '%s\n' "$actual"
  exit 1
fi
if ! diff -u "$expected" <(printf '%s\n' "$actual"); then
  echo "FAIL: $file: diagnostics differ from $expected"
  exit 1
fi
echo "ok: $file"
