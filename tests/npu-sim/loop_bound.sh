#!/bin/bash
# The work a program asks for is bounded before it is simulated: the
# dynamic instruction count is the loop nest multiplied out (ISA.md,
# "Verification"), refused above the limit (2^24 by default, --max-insns N)
# before the dry run walks a single instruction. The compiled ConvNet's
# first program wrapped in `loop x26000000` (10^10 instructions, the whole
# 34 KB artifact) simulated for hours; wrapped just past 2^30 it took 21
# minutes to be refused. Both must be refused in well under a second, by
# `covenant sim` and by `covenant-run` (the program inside an artifact, its
# checksums recomputed); the limit can be raised and lowered.
set -u
cov=$1 src=$2 work=$3
rt=$(dirname "$cov")/covenant-run
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
art=$work/c.cvx
"$cov" compile "$src/examples/convnet.onnx" --target npu-16x16 -o "$art" >/dev/null || bad "compile"
# wrap COUNT OUT: the artifact's group_0.npu inside `loop xCOUNT`, as a
# program file OUT.npu and an artifact OUT.cvx
wrap() {
  $py - "$src/runtime" "$art" "$1" "$2" <<'PY' || bad "wrap $1"
import struct, sys
sys.path.insert(0, sys.argv[1])
import artifact
m, d = artifact.read(sys.argv[2])
count, out = int(sys.argv[3]), sys.argv[4]
b = m["blobs"][0]
p = bytearray(d[b["offset"]:b["offset"] + b["bytes"]])
n_insns, n_tensors = struct.unpack_from("<II", p, 48)
code = 80 + 80 * n_tensors
loop = struct.pack("<BBHIII", 0x12, 0, 0, 16, count, n_insns)  # loop xCOUNT, body = every instruction
p[code:code] = loop
struct.pack_into("<I", p, 48, n_insns + 1)
struct.pack_into("<Q", p, 72, struct.unpack_from("<Q", p, 72)[0] + 16)
open(out + ".npu", "wb").write(p)
# the artifact with the wrapped program: blobs laid out again
blobs = [bytes(p)] + [bytes(d[x["offset"]:x["offset"] + x["bytes"]]) for x in m["blobs"][1:]]
data, off = bytearray(), 0
for x, raw in zip(m["blobs"], blobs):
    x["offset"], x["bytes"] = len(data), len(raw)
    data += raw + bytes((-len(raw)) % 256)
artifact.write(out + ".cvx", m, data)
PY
}
# within MS milliseconds, exit RC and PATTERN
timed() {
  local ms=$1 rc=$2 pat=$3
  shift 3
  local start=$(date +%s%N)
  out=$(timeout 60 "$@" 2>&1)
  local got=$? took=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$got" = "$rc" ] && grep -qF -- "$pat" <<<"$out" || { bad "$* (exit $got, want $rc, '$pat')"; echo "$out" | head -3; }
  [ "$took" -lt "$ms" ] || bad "$*: took $took ms (limit $ms)"
}
wrap 26000000 "$work/hours"
wrap 4903000 "$work/past30" # x 219 instructions: just past 2^30
for f in hours past30; do
  timed 1000 1 "more than the simulator's limit of 16777216" "$cov" sim "$work/$f.npu"
  timed 1000 1 "more than the simulator's limit of 16777216" "$rt" "$work/$f.cvx"
  grep -qF "steps[0]: " <<<"$out" || bad "$f: covenant-run does not name the step: $out"
done
# the count is exact: the unwrapped program runs 219 instructions, x3 + 1 wrapped
wrap 3 "$work/three"
timed 5000 0 "658 instructions executed" "$cov" sim "$work/three.npu"
timed 5000 0 "658 instructions executed" "$cov" sim "$work/three.npu" --max-insns 658
timed 5000 1 "the program runs 658 instructions" "$cov" sim "$work/three.npu" --max-insns 657
timed 5000 1 "more than the simulator's limit of 657" "$rt" "$work/three.cvx" --max-insns 657
timed 5000 0 "device: npu-sim" "$rt" "$work/three.cvx" --max-insns 658
timed 5000 2 "--max-insns takes an integer >= 1" "$cov" sim "$work/three.npu" --max-insns -1
timed 5000 2 "--max-insns takes an integer >= 1" "$rt" "$work/three.cvx" --max-insns 0
# the element work (gemm multiply-adds, DMA and vector elements) likewise,
# against an independent count: the binary's instructions parsed here,
# each weighted by its enclosing loops (ISA.md, "Binary encoding")
elems=$($py - "$work/three.npu" <<'PY'
import struct, sys
p = open(sys.argv[1], "rb").read()
n_insns, n_tensors = struct.unpack_from("<II", p, 48)
at, ends, mult, total = 80 + 80 * n_tensors, [], [1], 0
for i in range(n_insns):
    while ends and i >= ends[-1]:
        ends.pop(); mult.pop()
    op, size = p[at], struct.unpack_from("<I", p, at + 4)[0]
    if op == 0x12:  # loop: u32 count, u32 body
        count, body = struct.unpack_from("<II", p, at + 8)
        total += mult[-1]
        ends.append(i + 1 + body); mult.append(mult[-1] * count)
    else:
        w = 1
        kind = {0x20: "dma", 0x30: "gemm", 0x40: "vop"}.get(op)
        if kind == "gemm":
            k, n = struct.unpack_from("<HH", p, at + 10); m = struct.unpack_from("<I", p, at + 16)[0]; w = m * n * k
        elif kind == "vop":
            w = struct.unpack_from("<I", p, at + 16)[0] * struct.unpack_from("<I", p, at + 20)[0]
        elif kind == "dma":
            rank = p[at + 9]
            for d in range(rank):
                w *= struct.unpack_from("<I", p, at + 24 + 24 * d)[0]
        total += mult[-1] * w
    at += size
print(total)
PY
)
timed 5000 1 "compute or move $elems elements" "$cov" sim "$work/three.npu" --max-work 1
timed 5000 0 "instructions executed" "$cov" sim "$work/three.npu" --max-work "$elems"
timed 5000 1 "more than the simulator's limit of $((elems - 1))" "$cov" sim "$work/three.npu" --max-work $((elems - 1))
timed 5000 1 "more than the simulator's limit of $((elems - 1))" "$rt" "$work/three.cvx" --max-work $((elems - 1))
# within the instruction limit (66,000 x 219 = 1.4e7 < 2^24), over the work
# limit (2^34): refused at once instead of simulated for minutes
wrap 66000 "$work/heavy"
timed 1000 1 "more than the simulator's limit of 17179869184 (raise it with --max-work N)" "$cov" sim "$work/heavy.npu"
timed 1000 1 "more than the simulator's limit of 17179869184" "$rt" "$work/heavy.cvx"
# counts that overflow 64 bits saturate: nested loops of 2^32 - 1
$py - "$work/three.npu" "$work/nested.npu" <<'PY' || bad "nested"
import struct, sys
p = bytearray(open(sys.argv[1], "rb").read())
n_insns, n_tensors = struct.unpack_from("<II", p, 48)
code = 80 + 80 * n_tensors
for k in range(3):  # three more loops around the loop x3, each over everything after it
    p[code:code] = struct.pack("<BBHIII", 0x12, 0, 0, 16, 0xFFFFFFFF, n_insns + k)
struct.pack_into("<I", p, 48, n_insns + 3)
struct.pack_into("<Q", p, 72, struct.unpack_from("<Q", p, 72)[0] + 48)
open(sys.argv[2], "wb").write(p)
PY
timed 1000 1 "or more instructions" "$cov" sim "$work/nested.npu" --max-insns 18446744073709551615
exit $fail
