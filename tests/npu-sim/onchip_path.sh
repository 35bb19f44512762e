#!/bin/bash
# The mapper binds only storage paths the code generator runs
# (map_onchip_mover, one rule for both): npu-16x16 plus a scratchpad l2buf
# (dram -> l2buf -> ibuf). The NPU moves a tile between two scratchpads only
# through its SIMD unit (a VOP copy), so
#   - with no SIMD path l2buf -> simd -> ibuf, the path search leaves l2buf
#     out and the example ConvNet runs fused on the NPU (it used to stage x
#     and w through l2buf and fall back to the CPU: "no instruction moves w
#     from l2buf to ibuf");
#   - with the path but no f16 copy on the SIMD unit, the same;
#   - with the path and an f16 copy, x is staged through l2buf and the
#     program runs, right, on the NPU.
set -u
cov=$1 src=$2 tmp=$3 py=${4:-python3}
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
"$py" - "$src/targets/npu-16x16.json" "$tmp" <<'PY' || { echo "FAIL: could not write the ACGs"; exit 1; }
import json, sys
base = json.load(open(sys.argv[1]))
def write(name, simd_path, f16_copy):
    g = json.loads(json.dumps(base))
    g["name"] = name
    g["storage"].append({"name": "l2buf", "kind": "scratchpad", "capacity": "256KiB", "banks": 16,
                         "width_bits": 256, "double_buffer": True})
    g["edges"] += [{"from": "dram", "to": "l2buf", "bandwidth_bytes_per_cycle": 64, "latency_cycles": 200},
                   {"from": "l2buf", "to": "ibuf", "bandwidth_bytes_per_cycle": 64, "latency_cycles": 2}]
    if simd_path:
        g["edges"] += [{"from": "l2buf", "to": "simd", "bandwidth_bytes_per_cycle": 64, "latency_cycles": 1},
                       {"from": "simd", "to": "ibuf", "bandwidth_bytes_per_cycle": 64, "latency_cycles": 1}]
    if f16_copy:
        for c in g["compute"]:
            if c["name"] == "simd":
                c["capabilities"].append({"op": "copy", "in": "f16", "out": "f16", "throughput": 16, "latency": 2})
    json.dump(g, open(f"{sys.argv[2]}/{name}.json", "w"), indent=1)
write("npu-l2", False, False)
write("npu-l2simd", True, False)
write("npu-l2copy", True, True)
PY
for a in npu-l2 npu-l2simd npu-l2copy; do
  acg=$tmp/$a.json
  "$cov" acg check "$acg" >/dev/null || { echo "FAIL: acg check $a"; fail=1; continue; }
  sched=$("$cov" map convnet_layer1 --target "$acg" --dump=schedule 2>&1)
  staged=0
  grep -q "place x L1 l2buf" <<<"$sched" && staged=1
  want=0
  [ $a = npu-l2copy ] && want=1
  [ $staged = $want ] || { echo "FAIL: $a: x staged through l2buf: $staged, want $want"; grep place <<<"$sched"; fail=1; }
  r=$("$cov" run "$src/examples/convnet.onnx" --target "$acg" 2>&1) || { echo "FAIL: run on $a"; tail -5 <<<"$r"; fail=1; continue; }
  grep -q "2 groups fused, 0 calls one by one on the NPU, 0 calls on the CPU" <<<"$r" &&
    grep -qE "output +max rel err [0-9.e+-]+  PASS" <<<"$r" ||
    { echo "FAIL: $a: the ConvNet not fused on the NPU or not PASS"; grep -E "cpu:|call by call|FAIL" <<<"$r" | head -3; fail=1; }
done
exit $fail
