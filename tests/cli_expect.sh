# tests/cli_expect.sh: sourced by the command-line tests.
#   expect STATUS PATTERN -- COMMAND...
# runs COMMAND, requires exit status STATUS and PATTERN (grep) in its stdout
# and stderr together, prints "ok:" or "FAIL:" with the output, and sets
# fail=1 on a mismatch so the test can end with `exit $fail`.
fail=0
expect() {
  local want=$1 pattern=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: $* -> $rc (want $want, /$pattern/):"; echo "$out"; fail=1
  else
    echo "ok: $*"
  fi
}
