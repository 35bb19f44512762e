#!/usr/bin/env bash
# expect_error.sh COVENANT DIR NAME
# Runs `covenant inspect NAME.onnx` inside DIR and requires exit status 1 and
# a stderr equal, line for line, to NAME.expect.
set -u
cov=$1 dir=$2 name=$3
cd "$dir" || exit 2
actual=$("$cov" inspect "$name.onnx" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 1 ]; then
  echo "FAIL: $name.onnx: expected exit status 1, got $rc"
  printf '%s\n' "$actual"
  exit 1
fi
if ! diff -u "$name.expect" <(printf '%s\n' "$actual"); then
  echo "FAIL: $name.onnx: diagnostics differ from $name.expect"
  exit 1
fi
echo "ok: $name.onnx"
