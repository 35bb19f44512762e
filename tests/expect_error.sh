#!/usr/bin/env bash
# expect_error.sh DIR EXPECTED COMMAND...
# Runs COMMAND inside DIR and requires exit status 1 and a stderr equal, line
# for line, to the EXPECTED file (relative to DIR): the located diagnostics a
# malformed input (ACG, codelet, ONNX model) must produce.
set -u
dir=$1 expected=$2
shift 2
cd "$dir" || exit 2
what=${*: -1}
actual=$("$@" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 1 ]; then
  echo "FAIL: $what: expected exit status 1, got $rc"
  printf '%s\n' "$actual"
  exit 1
fi
if ! diff -u "$expected" <(printf '%s\n' "$actual"); then
  echo "FAIL: $what: diagnostics differ from $expected"
  exit 1
fi
echo "ok: $what"
