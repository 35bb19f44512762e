#!/bin/bash
# Contractions on every kind of compute unit the ACG describes
# (acg_mac_form_of, the one check the mapper's binding and the code
# generator share; ISA.md "Units that run gemm"):
#   - the vector DSP (dsp-hvx, dsp-f32-512: no array, vector MACs on the
#     SIMD unit) and the matrix engines (npu-matrix, matrix-8x8x8: M x N x K
#     tiles from a register file) run the example ConvNet fused, every
#     program checked against the reference (covenant run's checks), its
#     MACs on the unit; the DSP's convolutions run as gemms on its SIMD unit;
#   - an int8-only array whose SIMD unit has an f32 mac (npu-32x32-os less
#     its f16 mac) runs the float ConvNet's convolutions on the SIMD unit
#     (the mapper bound them there and the code generator refused it:
#     "a mac statement with 2 inputs bound to vec is not lowered");
#   - an int8-only design with no float mac at all (npu-i8-only) runs the
#     float convolutions on the CPU, each with the mapper's one reason;
#   - where an array and a SIMD unit with a mac can both take a layer, the
#     cost model's cheaper binding (a tiny matmul on npu-16x16's SIMD unit);
#   - a scalar unit (dsp-hvx less its vector mac, plus a scalar ALU with a
#     mac) runs them one MAC per issue;
#   - a matrix unit whose mac gives no [M, N, K] tile is not bound, and the
#     reason says why.
set -u
cov=$1 src=$2 tmp=$3 py=${4:-python3}
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
run() { # name acg expected-regex...
  local name=$1 acg=$2
  shift 2
  local out
  out=$("$cov" run "$src/examples/convnet.onnx" -t "$acg" --input "$src/examples/convnet_input.npy" 2>&1)
  local rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: $name: covenant run exited $rc"; echo "$out"; fail=1; return; }
  for pat in "$@"; do
    echo "$out" | grep -Eq "$pat" || { echo "FAIL: $name: no match for '$pat'"; echo "$out"; fail=1; return; }
  done
  echo "ok: $name"
}
fused="output +max rel err [0-9.e+-]+  PASS"
all="2 rows: 2 groups fused, 0 calls one by one on the NPU, 0 calls on the CPU"
run dsp-hvx dsp-hvx "$fused" "$all"
run npu-matrix npu-matrix "$fused" "$all"
run dsp-f32-512 "$src/tests/npu-sim/dsp-f32-512.json" "$fused" "$all"
run matrix-8x8x8 "$src/tests/npu-sim/matrix-8x8x8.json" "$fused" "$all"
# the programs' gemms run on the DSP's vector unit and the matrix unit
"$cov" compile convnet_layer1 -t dsp-hvx -o "$tmp/hvx" >/dev/null 2>&1 &&
  "$cov" disasm "$tmp/hvx/program.npu" 2>&1 | grep -q "gemm.*hvx" ||
  { echo "FAIL: dsp-hvx: no gemm on hvx"; fail=1; }
"$cov" compile convnet_layer1 -t npu-matrix -o "$tmp/mx" >/dev/null 2>&1 &&
  "$cov" disasm "$tmp/mx/program.npu" 2>&1 | grep -q "gemm.*cube" ||
  { echo "FAIL: npu-matrix: no gemm on cube"; fail=1; }
"$py" - "$src/targets/npu-32x32-os.json" "$src/targets/npu-matrix.json" "$tmp" "$src/targets/dsp-hvx.json" <<'PY' || { echo "FAIL: could not write the ACGs"; exit 1; }
import json, sys
g = json.load(open(sys.argv[1]))
g["name"] = "i8-array-simd-mac"
g["compute"][0]["capabilities"] = [c for c in g["compute"][0]["capabilities"] if c["in"][0] == "i8"]
json.dump(g, open(sys.argv[3] + "/i8-array-simd-mac.json", "w"))
h = json.load(open(sys.argv[4]))
h["name"] = "scalar-alu"
h["compute"][0]["capabilities"] = [c for c in h["compute"][0]["capabilities"] if c["op"] != "mac"]
h["compute"].append({"name": "alu", "kind": "scalar", "capabilities": [
    {"op": "mac", "in": ["f32", "f32"], "out": "f32", "throughput": 2, "latency": 3}]})
h["edges"].append({"from": "vtcm", "to": "alu", "bandwidth_bytes_per_cycle": 16, "latency_cycles": 1,
                   "bidirectional": True})
json.dump(h, open(sys.argv[3] + "/scalar-alu.json", "w"))
m = json.load(open(sys.argv[2]))
m["name"] = "matrix-no-tile"
for c in m["compute"][0]["capabilities"]:
    del c["tile"]
json.dump(m, open(sys.argv[3] + "/matrix-no-tile.json", "w"))
PY
# a scalar unit's mac (dsp-hvx less its vector mac, plus a 2-MAC/cycle ALU)
run scalar-alu "$tmp/scalar-alu.json" "$fused" "$all"
"$cov" compile convnet_layer1 -t "$tmp/scalar-alu.json" -o "$tmp/alu" >/dev/null 2>&1 &&
  "$cov" disasm "$tmp/alu/program.npu" -t "$tmp/scalar-alu.json" 2>&1 | grep -q "gemm.*alu" ||
  { echo "FAIL: scalar-alu: no gemm on alu"; fail=1; }
run i8-array-simd-mac "$tmp/i8-array-simd-mac.json" "$fused" "$all"
run npu-i8-only "$src/tests/npu-sim/npu-i8-only.json" "$fused" \
  "cpu: conv2d needs mac\(f32,f32->f32\) or a narrower float; npu-i8-only offers mac\(i8,i8->i32\) on pe_array"
# where an array and a SIMD unit with a mac both can take a layer, the
# cheaper binding by the cost model: a 4 x 8 x 4 matmul on npu-16x16's SIMD
# unit (439 predicted cycles against the array's 442), a 3x3 convolution
# on its array
out=$("$cov" map --codelet matmul --shape 4x8 --shape 8x4 -t npu-16x16 --explain 2>&1)
echo "$out" | grep -q "compute simd cap .* mac(f32,f32->f32)" && echo "ok: a tiny matmul on npu-16x16's SIMD unit" ||
  { echo "FAIL: tiny matmul not on the SIMD unit: $out"; fail=1; }
out=$("$cov" map resnet50_res2_3x3 -t npu-16x16 --explain 2>&1)
echo "$out" | grep -q "compute pe_array cap" && echo "ok: res2_3x3 on npu-16x16's array" ||
  { echo "FAIL: res2_3x3 not on the array: $out"; fail=1; }
out=$("$cov" map convnet_layer1 -t "$tmp/matrix-no-tile.json" 2>&1)
if echo "$out" | grep -q "the mac of matrix unit 'cube' needs a tile \[M, N, K\]"; then
  echo "ok: matrix-no-tile refused with its reason"
else
  echo "FAIL: matrix-no-tile: $out"; fail=1
fi
exit $fail
