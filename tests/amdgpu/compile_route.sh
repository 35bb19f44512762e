#!/usr/bin/env bash
# `covenant compile MODEL --target <AMD GPU>` writes one artifact whose code
# objects are those `covenant gpu compile` writes one file each, and `run` on a
# GPU target without a GPU fails with a message naming the runtime, never a
# fake result.
set -euo pipefail
cov=$1 model=$2 work=$3
# optional tools: without them the test reports itself skipped (77)
for tool in llvm-readelf-19 llvm-objdump-19; do
  command -v $tool > /dev/null || { echo "skipped: $tool not found (Debian: llvm-19)"; exit 77; }
done
[ -n "${COVENANT_LD_LLD:-}" ] || command -v ld.lld-19 > /dev/null || command -v ld.lld > /dev/null ||
  { echo "skipped: ld.lld not found (Debian: lld-19), which links HSACO"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
for t in amdgpu-gfx90a amdgpu-gfx942; do
  "$cov" compile "$model" --target "$t" -o "$work/$t.cvx" > "$work/$t.log"
  "$cov" gpu compile "$model" --target "$t" -o "$work/$t-gpu" > /dev/null
  # the artifact's modules, one file each
  mkdir -p "$work/$t"
  /usr/bin/python3 - "$(dirname "$0")/../../runtime" "$work/$t.cvx" "$work/$t" "$t" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, data = artifact.read(sys.argv[2])
assert m["target"] == sys.argv[4] and m["backend"] == "amdgpu", (m["target"], m["backend"])
for mod in m["modules"]:
    assert mod["format"] == "hsaco"
    b = m["blobs"][mod["blob"]]
    open("%s/%s.hsaco" % (sys.argv[3], mod["name"]), "wb").write(data[b["offset"]:b["offset"] + b["bytes"]])
PY
  n=$(ls "$work/$t"/*.hsaco | wc -l)
  # convnet.onnx: two conv kernels (relu + 2x2 pool fused into the first), each
  # rounding its f32 input to f16 as it loads it (no operand copies)
  [ "$n" -eq 2 ] || { echo "FAIL: $t: expected 2 code objects, got $n"; exit 1; }
  for f in "$work/$t"/*.hsaco; do
    cmp "$f" "$work/$t-gpu/$(basename "$f")" || { echo "FAIL: $f differs from gpu compile"; exit 1; }
    llvm-readelf-19 --notes "$f" | grep -q "amdhsa.kernels" || { echo "FAIL: $f: no HSA metadata"; exit 1; }
  done
done
if "$cov" run "$model" --target amdgpu-gfx942 > "$work/run.out" 2> "$work/run.err"; then
  if ! grep -qi "hip\|amd" "$work/run.out"; then echo "FAIL: run succeeded without saying where"; exit 1; fi
else
  grep -qi "hip" "$work/run.err" || { echo "FAIL: run error does not name HIP:"; cat "$work/run.err"; exit 1; }
fi
echo "ok: compile routes to the GPU backend on both AMD targets"
