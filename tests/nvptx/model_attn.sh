#!/usr/bin/env bash
# model_attn.sh COVENANT PYTHON MAKE_ATTENTION WORKDIR [run]: attention inside a
# compiled model (backends/gpu/gpu_mattn.c) for nvptx-sm90. Made-up
# self-attention models (tests/gpu/make_attention.py): a causal one of head
# dim 64 and 100 tokens (the warpgroup kernel, padded to 128 keys) and an
# additively masked one of head dim 24 and 48 tokens (m16n8k16 fragments,
# padded to 64 x 32). Each is one copy of Q, K, V into one f16 buffer, one
# attention launch reading it three times and writing the f32 result, one
# copy out; the kernel's PTX has its products (wgmma or mma.sync), f32 pair
# stores of O, no local memory; two compilations are byte-identical; ptxas
# (where installed) assembles it without spills. For amdgpu-gfx942 the same
# model compiles without the attention kernel (the target has no warp
# shuffle in its ops table). With `run`: `covenant gpu run` of both models,
# a no-mask one (head dim 64, 128 tokens: unpadded) and one whose mask is
# an input (random values; head dim 32, 72 tokens) on the device,
# within 1e-2 of the reference (77, skipped, without an NVIDIA driver).
set -u
cov=$1 py=$2 make=$3 work=$4 mode=${5:-}
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL $*"; fail=1; }
"$py" "$make" "$work/c64.onnx" 100 2 64 causal || bad "export c64"
"$py" "$make" "$work/a24.onnx" 48 3 24 add || bad "export a24"
if [ "$mode" = run ]; then
  "$py" "$make" "$work/n64.onnx" 128 2 64 none || bad "export n64"
  "$py" "$make" "$work/i32.onnx" 72 2 32 input || bad "export i32"
  for m in c64 a24 n64 i32; do
    out=$("$cov" gpu run "$work/$m.onnx" --target nvptx-sm90 --tolerance 1e-2 2>&1)
    rc=$?
    echo "$out"
    if [ $rc -ne 0 ] && grep -q "cannot run .*on nvptx-sm90: .*\(no NVIDIA driver\|initialisation\)" <<<"$out"; then
      exit 77
    fi
    [ $rc -eq 0 ] || bad "$m: covenant gpu run exit $rc"
  done
  exit $fail
fi
for m in c64 a24; do
  "$cov" gpu compile "$work/$m.onnx" --target nvptx-sm90 -o "$work/$m" >/dev/null || { bad "$m: compile"; continue; }
  "$cov" gpu compile "$work/$m.onnx" --target nvptx-sm90 -o "$work/$m.again" >/dev/null
  for f in "$work/$m"/*; do cmp -s "$f" "$work/$m.again/$(basename "$f")" || bad "$m: $(basename "$f") differs"; done
  "$py" - "$work/$m/manifest.json" "$m" <<'PY' || fail=1
import json, sys
man, name = json.load(open(sys.argv[1])), sys.argv[2]
launches = [s for s in man["steps"] if s["op"] == "launch"]
attn = [s for s in launches if s["what"].startswith("attention")]
want = {"c64": "attention 2x128x64 (100 keys, causal, 64x64 tile)", "a24": "attention 3x64x32 (48 keys, causal, 64x16 tile)"}
errs = []
if len(launches) != 3 or len(attn) != 1 or attn[0]["what"] != want[name]:
    errs.append("launches %s" % [s["what"] for s in launches])
else:
    a, bufs = attn[0]["args"], man["buffers"]
    if not (a[0] == a[1] == a[2]) or bufs[a[0]]["dtype"] != "f16" or bufs[a[3]]["dtype"] != "f32":
        errs.append("attention arguments %s" % a)
for e in errs:
    print("FAIL %s: %s" % (name, e))
sys.exit(1 if errs else 0)
PY
  f=$(ls "$work/$m"/*_attn.ptx 2>/dev/null | head -1)
  [ -n "$f" ] || { bad "$m: no attention PTX"; continue; }
  if [ "$m" = c64 ]; then grep -q 'wgmma.mma_async' "$f" || bad "$m: no wgmma"; fi
  if [ "$m" = a24 ]; then grep -q 'mma.sync.aligned.m16n8k16' "$f" || bad "$m: no mma.sync"; fi
  grep -q 'st.global.v2.f32' "$f" || bad "$m: O not stored as f32 pairs"
  if grep -q '\.local' "$f"; then bad "$m: uses local memory"; fi
  if command -v ptxas >/dev/null; then
    out=$(ptxas -arch=sm_90a -v "$f" -o "$work/$m.cubin" 2>&1) || bad "$m: ptxas: $out"
    if echo "$out" | grep -q '[1-9][0-9]* bytes spill'; then bad "$m: spills: $out"; fi
  fi
done
"$cov" gpu compile "$work/c64.onnx" --target amdgpu-gfx942 -o "$work/amd" >/dev/null || bad "amdgpu: compile"
if grep -q '"attention' "$work/amd/manifest.json"; then bad "amdgpu: an attention launch"; fi
[ $fail = 0 ] && echo "PASS model attention for nvptx-sm90 (and none for amdgpu-gfx942)"
exit $fail
