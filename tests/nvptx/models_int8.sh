#!/usr/bin/env bash
# tests/nvptx/models_int8.sh COVENANT MODELS_DIR WORKDIR [run]: the int8
# exports (tests/models: int8_qdq_cnn, int8_qop_cnn, int8_qdq_resnet)
# compiled whole for nvptx-sm90. Checked without a GPU: every integer
# dot-product kernel's PTX holds dp4a.s32.s32 and no f32 FMA of a float
# conv, the quantized values between kernels are i8 buffers in the
# manifest, the artifact (`covenant compile`) is byte-identical twice.
# With `run`: `covenant gpu run MODEL --target nvptx-sm90 --tolerance 0`
# on the device, bit-exact with the reference (77, skipped, without an
# NVIDIA driver).
set -u
cov=$1 models=$2 work=$3 mode=${4:-}
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
for m in int8_qdq_cnn int8_qop_cnn int8_qdq_resnet; do
  onnx=$models/$m.onnx
  if [ "$mode" = run ]; then
    out=$("$cov" gpu run "$onnx" --target nvptx-sm90 --tolerance 0 2>&1)
    rc=$?
    echo "$out"
    if [ $rc -ne 0 ] && grep -q "cannot run .*on nvptx-sm90: .*\(no NVIDIA driver\|initialisation\)" <<<"$out"; then
      exit 77
    fi
    [ $rc -eq 0 ] || bad "$m: covenant gpu run exit $rc"
    continue
  fi
  d=$work/$m
  "$cov" gpu compile "$onnx" --target nvptx-sm90 -o "$d" >/dev/null || { bad "$m: gpu compile"; continue; }
  n_dot=0
  for f in "$d"/*int8_dot*.ptx; do
    [ -e "$f" ] || continue
    n_dot=$((n_dot + 1))
    grep -q 'dp4a.s32.s32' "$f" || bad "$m: $(basename "$f") has no dp4a.s32.s32"
    grep -q 'fma.rn.f32' "$f" && bad "$m: $(basename "$f") sums in f32"
  done
  [ $n_dot -ge 2 ] || bad "$m: $n_dot integer dot-product kernels (every conv and matmul expected)"
  grep -q '"dtype": "i8"' "$d/manifest.json" || bad "$m: no i8 buffer in the manifest"
  "$cov" compile "$onnx" --target nvptx-sm90 -o "$work/$m.a.covart" >/dev/null &&
    "$cov" compile "$onnx" --target nvptx-sm90 -o "$work/$m.b.covart" >/dev/null || bad "$m: covenant compile"
  cmp -s "$work/$m.a.covart" "$work/$m.b.covart" || bad "$m: two compilations differ"
  echo "ok: $m: $n_dot dp4a kernels, i8 buffers, deterministic artifact"
done
exit $fail
