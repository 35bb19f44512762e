#!/usr/bin/env bash
# conv_cl.sh COVENANT WORKDIR: convolutions on channels-last tensors
# (`NAME@cl`, as cuDNN takes them: NHWC f16 input read as given, NHWC f16
# output) compiled for nvptx-sm90 by the mapper's plan: one entry (no NCHW
# -> NHWC transform), zero-filling cp.async gathers feeding warpgroup MMAs,
# outputs rounded once to f16 and stored as 16 bytes (8 channels of a
# pixel), the manifest saying so; deterministic; and the located refusals of
# layers it does not fit. Their results against torch come from the GPU
# machine (bench/nvptx/gpu_bench.py, 10 inputs per batch-32 layer).
set -eu
cov=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL $*"; fail=1; }
layers="resnet50_res2_3x3@b32@cl resnet50_res4_3x3@b32@cl resnet50_res5_1x1@b32@cl resnet50_res3_1x1@cl"
"$cov" gpu compile $layers --target nvptx-sm90 -o "$work/a" >/dev/null
"$cov" gpu compile $layers --target nvptx-sm90 -o "$work/b" >/dev/null
for name in resnet50_res2_3x3_b32_cl resnet50_res4_3x3_b32_cl resnet50_res5_1x1_b32_cl resnet50_res3_1x1_cl; do
  f=$work/a/$name.ptx
  [ "$(grep -c '^.visible .entry' "$f")" -eq 1 ] || bad "$name: not one entry (a transform kernel beside it?)"
  grep -q 'wgmma.mma_async.sync.aligned.m64n' "$f" || bad "$name: no warpgroup MMA"
  grep -Eq 'cp.async.cg.shared.global \[[^]]*\], \[[^]]*\], 16, %r' "$f" || bad "$name: no zero-filling cp.async"
  grep -q 'cvt.rn.f16.f32' "$f" || bad "$name: no f16 rounding"
  grep -q 'st.global.v4.b32' "$f" || bad "$name: no 16-byte f16 stores"
  if grep -q 'st.global.v4.f32\|st.global.f32\|st.global.v2.f32' "$f"; then bad "$name: f32 stores"; fi
  if grep -q '\.local' "$f"; then bad "$name: uses local memory"; fi
  cmp -s "$f" "$work/b/$name.ptx" || bad "$name: two compilations differ"
done
python3 - "$work/a/manifest.json" <<'PY' || fail=1
import json, sys
bad = []
for k in json.load(open(sys.argv[1]))["kernels"]:
    if k["layout"] != "nhwc" or k.get("out_layout") != "nhwc" or k.get("out_dtype") != "f16" or "pre" in k:
        bad.append("%s: manifest layout %s out %s/%s pre %s" % (k["name"], k["layout"], k.get("out_layout"),
                                                              k.get("out_dtype"), "pre" in k))
    if "staged epilogue" not in k["plan"]:
        bad.append("%s: no staged epilogue (%s)" % (k["name"], k["plan"]))
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
# the NCHW layers keep their transform and f32 NCHW stores
"$cov" gpu compile resnet50_res4_3x3@b32 --target nvptx-sm90 -o "$work/nchw" >/dev/null
grep -q '^.visible .entry covenant_resnet50_res4_3x3_b32_nhwc(' "$work/nchw/resnet50_res4_3x3_b32.ptx" ||
  bad "resnet50_res4_3x3@b32 lost its transform"
grep -q 'st.global.v4.f32' "$work/nchw/resnet50_res4_3x3_b32.ptx" || bad "resnet50_res4_3x3@b32: no f32 NCHW stores"
# refusals, each located and saying why
refuse() {
  local spec=$1 want=$2
  if "$cov" gpu compile "$spec" --target nvptx-sm90 -o "$work/r" 2>"$work/r.err"; then
    bad "$spec compiled"
  elif ! grep -q "$want" "$work/r.err"; then
    bad "$spec: refusal does not say '$want': $(cat "$work/r.err")"
  fi
}
refuse bert_base_qkv@cl "channels-last outputs are for conv2d"
refuse convnet_layer1@cl "channels-last outputs are for conv2d layers without a fused pool"
refuse resnet50_res4_3x3@cl@b32 "expected the suffixes @bN"
refuse resnet50_res4_3x3@b32@cl@cl "optionally followed by @cl"
refuse resnet50_res4_3x3@b32@nhwc "optionally followed by @cl"
# a hand-fixed tile the channels-last kernel cannot take (C 64 is not a
# multiple of a 128-channel K tile) is refused, not compiled another way
refuse "resnet50_res2_3x3@b32@cl:128x64x128:64x64:3" "channels-last f16 outputs need the channels-last kernel"
[ $fail -eq 0 ] && echo "ok: channels-last f16 convolutions checked, deterministic"
exit $fail
