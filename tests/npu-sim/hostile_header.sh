#!/bin/bash
# An NPU program's header names the ACG it was compiled for. That name is
# input: covenant looks it up as a shipped target name only, never opens it
# as a path. Each case runs under `timeout`: a header naming
# /dev/stdin or a FIFO blocked sim and disasm forever; /etc/passwd was read
# and its first token echoed. Files passed on the command line must be
# regular files (a FIFO as the program or as --target is refused at once),
# and control bytes in the name are shown escaped.
set -u
cov=$1 src=$2 tmp=$3
prog=$src/tests/npu-sim/programs/gemm_ws.npu
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
expect() { # expect RC PATTERN CMD...
  local rc=$1 pat=$2
  shift 2
  out=$(timeout 10 "$@" 2>&1 </dev/null)
  got=$?
  if [ "$got" != "$rc" ] || ! grep -qF -- "$pat" <<<"$out"; then
    echo "FAIL: $* (exit $got, want $rc, pattern '$pat')"
    echo "$out" | head -5
    fail=1
  fi
  if grep -q "root:" <<<"$out"; then echo "FAIL: $*: printed a line of /etc/passwd"; fail=1; fi
}
# with_name NAME OUT: the program with NAME (<= 31 bytes) as its ACG name
with_name() {
  /usr/bin/python3 - "$prog" "$1" "$2" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
name = sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
assert len(name) < 32
data[16:48] = name + b"\0" * (32 - len(name))
open(sys.argv[3], "wb").write(data)
PY
}
# the FIFO where its path fits the header's 31 bytes
fdir=$(mktemp -d /tmp/covhhXXXXXX)
trap 'rm -rf "$fdir"' EXIT
mkfifo "$fdir/fifo"
ln -s "$fdir/fifo" "$tmp/fifo"
for name in /etc/passwd /dev/stdin /dev/zero ../../../../etc/passwd "$fdir/fifo" .hidden; do
  with_name "$name" "$tmp/p.npu"
  for cmd in sim disasm; do
    expect 1 "is not a target name" "$cov" $cmd "$tmp/p.npu"
  done
done
# a name that is a plain name but not a shipped target: not found, with the hint
with_name "no-such-npu" "$tmp/p.npu"
expect 1 "no target named 'no-such-npu'" "$cov" sim "$tmp/p.npu"
expect 1 "hint: pass --target ACG, or --raw" "$cov" disasm "$tmp/p.npu"
# control bytes in the name are escaped, never printed raw
with_name '\x1b[2Jnpu\x07' "$tmp/p.npu"
expect 1 "'\\x1b[2Jnpu\\x07' is not a target name" "$cov" sim "$tmp/p.npu"
if timeout 10 "$cov" sim "$tmp/p.npu" 2>&1 | grep -q $'\x1b'; then echo "FAIL: raw ESC printed"; fail=1; fi
# --target given by the user still takes a path, but only a regular file
expect 1 "is a FIFO, expected a regular file" "$cov" sim "$prog" --target "$tmp/fifo"
expect 1 "is a device, expected a regular file" "$cov" sim "$prog" --target /dev/zero
# the program itself a FIFO or a device
expect 1 "is a FIFO, expected a regular file" "$cov" sim "$tmp/fifo"
expect 1 "is a FIFO, expected a regular file" "$cov" disasm "$tmp/fifo"
expect 1 "is a device, expected a regular file" "$cov" disasm /dev/stdin
# the shipped name still works
expect 0 "array utilisation" "$cov" sim "$prog"
[ $fail = 0 ] && echo "hostile headers: all refused"
exit $fail
