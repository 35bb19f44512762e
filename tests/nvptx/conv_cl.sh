#!/usr/bin/env bash
# conv_cl.sh COVENANT WORKDIR: convolutions on channels-last tensors
# (`NAME@cl`, as cuDNN takes them: NHWC f16 input read as given, NHWC f16
# output) compiled for nvptx-sm90 by the mapper's plan: one entry (no NCHW
# -> NHWC transform), zero-filling cp.async gathers feeding warpgroup MMAs,
# outputs rounded once to f16 and stored as 16 bytes (8 channels of a
# pixel), the manifest saying so; deterministic; and the located refusals of
# layers it does not fit. Their results against torch come from the GPU
# machine (bench/nvptx/scripts/gpu_bench.py, 10 inputs per batch-32 layer).
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
refuse() { # SPEC WANT [compile options]
  local spec=$1 want=$2
  shift 2
  if "$cov" gpu compile "$spec" "$@" --target nvptx-sm90 -o "$work/r" 2>"$work/r.err"; then
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
# a hand-fixed tile the channels-last kernel cannot take (C 3 is not whole
# 16-byte chunks) is refused, not compiled another way
refuse "resnet50_conv1@b32@cl:128x64x64:64x64:3" "channels-last f16 outputs need the channels-last kernel"
# depthwise convs on channels-last tensors (mobilenet_v2's shapes,
# bench/nvptx/inputs/dw_layers.json) take the depthwise kernel, its pixels per
# thread the mapper's (map_gpu_dw_plan) or a hand-fixed :dwP: 16-byte NHWC
# loads of the taps and weights, f32 multiply-adds, bias and ReLU6 (clip to
# [0, 6]) fused, f16 16-byte stores, no shared memory, no spills
dws=$(dirname "$0")/../../bench/nvptx/inputs/dw_layers.json
dwl="mbv2_dw_c144_56_s1@cl mbv2_dw_c96_112_s2@cl mbv2_dw_c960_7_s1@cl mbv2_dw_c144_56_s1@cl:dw4 mbv2_dw_c96_112_s2@cl:dw2"
"$cov" gpu compile $dwl --suite "$dws" --target nvptx-sm90 -o "$work/dw" >/dev/null
"$cov" gpu compile $dwl --suite "$dws" --target nvptx-sm90 -o "$work/dw2" >/dev/null
for f in "$work"/dw/*.ptx; do
  name=$(basename "$f" .ptx)
  [ "$(grep -c '^.visible .entry' "$f")" -eq 1 ] || bad "$name: not one entry"
  grep -q 'ld.global.\(nc.\)\?v4.\(u32\|b32\|f32\)' "$f" || bad "$name: no 16-byte loads"
  grep -q 'st.global.v4.b32' "$f" || bad "$name: no 16-byte f16 stores"
  grep -q 'cvt.rn.f16.f32' "$f" || bad "$name: no f16 rounding"
  grep -q 'fma.rn.f32\|mul.rn.f32\|mul.f32' "$f" || bad "$name: no f32 multiply-adds"
  grep -q 'max.f32\|setp.gt.f32' "$f" || bad "$name: no ReLU6 clamp"
  if grep -q 'mma\|\.shared\|\.local' "$f"; then bad "$name: matrix unit, shared or local memory"; fi
  cmp -s "$f" "$work/dw2/$name.ptx" || bad "$name: two compilations differ"
done
# pw pixels per thread share their window: 3 rows x (pw - 1) * stride + 3
# columns of input loads, 9 weight loads, 2 bias loads
nld() { grep -c 'ld.global.\(nc.\)\?v4' "$1"; }
[ "$(nld "$work/dw/mbv2_dw_c144_56_s1_cl_dw4.ptx")" -eq $((3 * 6 + 9 + 2)) ] || bad "dw4: not 18 input loads for 4 pixels"
[ "$(nld "$work/dw/mbv2_dw_c96_112_s2_cl_dw2.ptx")" -eq $((3 * 5 + 9 + 2)) ] || bad "dw2 stride 2: not 15 input loads"
[ "$(grep -c 'st.global.v4.b32' "$work/dw/mbv2_dw_c144_56_s1_cl_dw4.ptx")" -eq 4 ] || bad "dw4: not 4 pixel stores"
python3 - "$work/dw/manifest.json" <<'PY' || fail=1
import json, sys
bad = []
for k in json.load(open(sys.argv[1]))["kernels"]:
    last = k["name"].rsplit("_", 1)[-1]
    pw = int(last[2:]) if last.startswith("dw") and last[2:].isdigit() else None
    runs = (k["OW"] + (pw or 1) - 1) // (pw or 1)
    units = k["N"] * k["OH"] * k["C"] // 8 * runs
    ok = (k["layout"] == "nhwc" and k.get("out_layout") == "nhwc" and k.get("out_dtype") == "f16" and
          k["plan"].startswith("depthwise, ") and k["shared_bytes"] == 0 and k["groups"] == k["C"] and
          k["act"] == "clip" and k["bias"] and k["block"] == [256, 1, 1])
    if pw is not None:
        ok = ok and k["grid"][0] == (units + 255) // 256 and k["plan"].startswith("depthwise, %d pixel" % pw)
    if not ok:
        bad.append("%s: %s" % (k["name"], {x: k.get(x) for x in ("layout", "out_layout", "plan", "grid", "shared_bytes")}))
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
refuse "mbv2_dw_c144_56_s1@cl:dw9" "a depthwise schedule is written :dwP" --suite "$dws"
refuse "resnet50_res4_3x3@b32@cl:dw2" ":dwP is the schedule of depthwise convs"
refuse "mbv2_dw_c144_56_s1@cl:128x64x64:64x64:3" "takes no :BMxBNxBK:WMxWN:STAGES schedule" --suite "$dws"
[ $fail -eq 0 ] && echo "ok: channels-last f16 convolutions and depthwise kernels checked, deterministic"
exit $fail
