#!/bin/bash
# covenant disasm / sim on the committed sample programs, and malformed
# programs given to them: each must fail with exit 1 and a message naming
# what is wrong (never crash).
set -u
cov=$1 src=$2 tmp=$3
progs=$src/tests/npu-sim/programs
mkdir -p "$tmp"
fail=0
expect() { # expect RC PATTERN CMD...
  local rc=$1 pat=$2
  shift 2
  out=$("$@" 2>&1)
  got=$?
  if [ "$got" != "$rc" ] || ! grep -qF -- "$pat" <<<"$out"; then
    echo "FAIL: $* (exit $got, want $rc, pattern '$pat')"
    echo "$out" | head -5
    fail=1
  fi
}
expect 0 "gemm    pe_array cap1 m=16 k=40 n=16" "$cov" disasm "$progs/gemm_os.npu"
expect 0 "gemm    unit0 cap1 m=16 k=40 n=16 a=buf1[8192, 1, 16]" "$cov" disasm --raw "$progs/gemm_os.npu"
expect 0 "array utilisation" "$cov" sim "$progs/gemm_ws.npu"
expect 0 "output y f32[32,16]" "$cov" sim "$progs/gemm_os.npu" --seed 7
"$cov" sim "$progs/gemm_ws.npu" --trace "$tmp/trace.json" >/dev/null || fail=1
/usr/bin/python3 -c "import json,sys; d=json.load(open('$tmp/trace.json')); sys.exit(0 if any(e.get('name')=='gemm' for e in d['traceEvents']) else 1)" || { echo "FAIL: trace"; fail=1; }
# Determinism: the same run twice gives byte-identical reports and traces.
"$cov" sim "$progs/gemm_ws.npu" --trace "$tmp/trace2.json" >"$tmp/r2" && "$cov" sim "$progs/gemm_ws.npu" >"$tmp/r1"
cmp -s "$tmp/r1" "$tmp/r2" && cmp -s "$tmp/trace.json" "$tmp/trace2.json" || { echo "FAIL: nondeterministic"; fail=1; }
# Wrong ACG.
expect 1 "compiled for ACG 'npu-16x16'" "$cov" sim "$progs/gemm_ws.npu" --target npu-32x32-os
# Truncated.
head -c 100 "$progs/gemm_ws.npu" >"$tmp/trunc.npu"
expect 1 "truncated program" "$cov" sim "$tmp/trunc.npu"
expect 1 "truncated program" "$cov" disasm "$tmp/trunc.npu"
head -c 10 "$progs/gemm_ws.npu" >"$tmp/short.npu"
expect 1 "the header needs 80 bytes" "$cov" disasm "$tmp/short.npu"
# Bad magic and version.
{ printf 'XNPU'; tail -c +5 "$progs/loop.npu"; } >"$tmp/magic.npu"
expect 1 "field magic" "$cov" sim "$tmp/magic.npu"
{ head -c 4 "$progs/loop.npu"; printf '\x09'; tail -c +6 "$progs/loop.npu"; } >"$tmp/version.npu"
expect 1 "field version" "$cov" sim "$tmp/version.npu"
# Bad opcode: loop.npu has 2 tensors (80 bytes each) after the 80-byte header;
# instruction 0 starts at 240.
{ head -c 240 "$progs/loop.npu"; printf '\x66'; tail -c +242 "$progs/loop.npu"; } >"$tmp/opcode.npu"
expect 1 "instruction 0 (offset 240): field opcode: unknown opcode 0x66" "$cov" sim "$tmp/opcode.npu"
# Out-of-range address: instruction 0's local_off (bytes 12..15 of it) = 0x00ffff00.
{ head -c 252 "$progs/loop.npu"; printf '\x00\xff\xff\x00'; tail -c +257 "$progs/loop.npu"; } >"$tmp/addr.npu"
expect 1 "instruction 0 (dma): field local_off" "$cov" sim "$tmp/addr.npu"
# Chained gemms: the flags disassemble; a gemm that breaks a chain (its chain
# bit cleared in the binary, instruction 3 at byte 648) is refused by name.
expect 0 "acc chain hold a=ubuf" "$cov" disasm "$progs/gemm_os_chain.npu"
expect 0 "n=16 wkeep a=ibuf" "$cov" disasm "$progs/gemm_ws_wkeep.npu"
/usr/bin/python3 -c "
import sys; b = bytearray(open('$progs/gemm_os_chain.npu', 'rb').read())
assert b[648] == 0x30 and b[650] == 0x0d, (b[648], b[650])
b[650] = 0x05; open('$tmp/chain.npu', 'wb').write(b)" || { echo "FAIL: chain patch"; fail=1; }
expect 1 "instruction 3 (gemm): field flags: gemm 2 holds its tile in 'pe_array'" "$cov" sim "$tmp/chain.npu"
expect 1 "cannot open" "$cov" sim "$tmp/none.npu"
expect 2 "takes exactly one PROGRAM" "$cov" sim
exit $fail
