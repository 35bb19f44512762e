#!/usr/bin/env bash
# check_layers.sh COVENANT WORKDIR: every suite layer (and a large GEMM)
# compiled to PTX for nvptx-sm90 through the shared GPU lowering:
# PTX 8.0 for sm_90a, the kernel entry, mma.sync fed by ldmatrix or (matmuls
# the tiles divide, channels-last convolutions) wgmma.mma_async on
# shared-memory descriptors, cp.async
# where the tiles are copied as whole vectors, no local memory (spills), the
# dynamic shared memory the manifest states; and byte-identical output from
# a second compilation.
set -eu
cov=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
"$cov" gpu compile all gemm_4096x4096x4096 --target nvptx-sm90 -o "$work/a" >/dev/null
"$cov" gpu compile all gemm_4096x4096x4096 --target nvptx-sm90 -o "$work/b" >/dev/null
fail=0
n=0
for f in "$work"/a/*.ptx; do
  name=$(basename "$f" .ptx)
  n=$((n + 1))
  bad() { echo "FAIL $name: $*"; fail=1; }
  grep -q '^.version 8.0' "$f" || bad "not PTX 8.0"
  grep -q '^.target sm_90a' "$f" || bad "not for sm_90a"
  grep -q "^.visible .entry covenant_$name(" "$f" || bad "no entry covenant_$name"
  cmp -s "$f" "$work/b/$name.ptx" || bad "differs between two compilations"
  if [ "$name" = resnet50_stem_pool ]; then
    # the standalone pool: a thread per output, no matrix unit, no shared memory
    if grep -q 'mma.sync\|\.shared' "$f"; then bad "pool kernel uses mma or shared memory"; fi
    grep -q 'max\.f32\|setp\.gt\.f32' "$f" || bad "pool kernel has no max"
    continue
  fi
  if grep -q 'wgmma.mma_async' "$f"; then
    # warpgroup MMA: descriptors on 128-byte-swizzled tiles, B transposed,
    # the batch fenced, committed and awaited, the copies made visible to
    # the async proxy; matmuls store column pairs as 8 bytes (channels-last
    # convolutions, whose modules hold the NHWC transform, store NCHW)
    grep -Eq 'wgmma.mma_async.sync.aligned.m64n(64|128|256)k16.f32.f16.f16 \{[^}]*\}, %rd[0-9]+, %rd[0-9]+, p, 1, 1, 0, 1;' "$f" ||
      bad "no wgmma m64nNk16 with B transposed"
    grep -q 'wgmma.fence.sync.aligned' "$f" || bad "no wgmma.fence"
    grep -q 'wgmma.commit_group.sync.aligned' "$f" || bad "no wgmma.commit_group"
    grep -q 'wgmma.wait_group.sync.aligned' "$f" || bad "no wgmma.wait_group"
    if grep -q 'cp.async.bulk.tensor' "$f"; then
      # the warp-specialised kernel: stages handed over by mbarriers
      grep -q 'mbarrier.try_wait.parity' "$f" || bad "bulk tensor copies without barrier waits"
    else
      grep -q 'fence.proxy.async.shared::cta' "$f" || bad "no async-proxy fence"
    fi
    grep -q "^.visible .entry covenant_${name}_nhwc(" "$f" || grep -q 'st.global.v2.f32' "$f" ||
      bad "no 8-byte output stores"
  else
    grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$f" || bad "no mma.sync"
    grep -q 'ldmatrix.sync.aligned.m8n8.x4.shared.b16' "$f" || bad "no ldmatrix for A"
    grep -q 'ldmatrix.sync.aligned.m8n8.x[24].trans.shared.b16' "$f" || bad "no ldmatrix.trans for B"
  fi
  grep -q 'bar.sync' "$f" || bad "no barrier"
  if grep -q '\.local' "$f"; then bad "uses local memory"; fi
done
# matmuls that 128x128 / 64x128 tiles divide take warpgroup MMAs
for name in gemm_4096x4096x4096 bert_base_qkv bert_base_ffn1 dlrm_mlp_top; do
  grep -q 'wgmma.mma_async' "$work/a/$name.ptx" || { echo "FAIL $name: no warpgroup MMA"; fail=1; }
done
# so do the ResNet-50 channels-last convolutions (3x3 and 1x1: the mapper's
# warpgroup candidates for channels-last convs, bench/nvptx/README.md)
for name in resnet50_res2_3x3 resnet50_res3_1x1 resnet50_res4_3x3 resnet50_res5_1x1; do
  grep -q 'wgmma.mma_async' "$work/a/$name.ptx" || { echo "FAIL $name: no warpgroup MMA"; fail=1; }
done
# the mapper's plans: the warp-specialised persistent kernel (bulk tensor
# copies, no per-thread copies) for the matmuls whose tiles keep the SMs
# busy; dlrm_mlp_top (16 tiles of 64x64) copies its tiles with cp.async
for name in gemm_4096x4096x4096 bert_base_qkv bert_base_ffn1; do
  grep -q 'cp.async.bulk.tensor.2d' "$work/a/$name.ptx" || { echo "FAIL $name: no bulk tensor copies"; fail=1; }
  if grep -q 'cp.async.cg' "$work/a/$name.ptx"; then echo "FAIL $name: per-thread copies"; fail=1; fi
done
grep -q 'cp.async.cg.shared.global' "$work/a/dlrm_mlp_top.ptx" || { echo "FAIL dlrm_mlp_top: no cp.async"; fail=1; }
# channels-last convolutions: zero-filling cp.async gathers (src-size
# operand), the NHWC transform entry in the same module, coalesced 16-byte
# stores from the staged epilogue
for name in resnet50_res2_3x3 resnet50_res4_3x3; do
  f=$work/a/$name.ptx
  grep -q "^.visible .entry covenant_${name}_nhwc(" "$f" || { echo "FAIL $name: no NHWC transform entry"; fail=1; }
  grep -Eq 'cp.async.cg.shared.global \[[^]]*\], \[[^]]*\], 16, %r' "$f" || { echo "FAIL $name: no zero-filling cp.async"; fail=1; }
  grep -q 'st.global.v4.f32' "$f" || { echo "FAIL $name: no 16-byte output stores"; fail=1; }
done
# the fused softmax: exponentials in the epilogue, one workgroup per row block
grep -q 'ex2.approx' "$work/a/bert_base_attn_qk.ptx" || { echo "FAIL bert_base_attn_qk: no softmax exp"; fail=1; }
python3 - "$work/a/manifest.json" <<'PY' || fail=1
import json, sys
ks = {k["name"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
bad = []
if not ks["bert_base_attn_qk"]["softmax"] or ks["bert_base_attn_qk"]["grid"][0] != 1 or ks["bert_base_attn_qk"]["unfused"]:
    bad.append("bert_base_attn_qk: softmax not fused over whole rows")
if ks["resnet50_stem_pool"]["kind"] != "maxpool" or ks["resnet50_stem_pool"]["OH"] != 56:
    bad.append("resnet50_stem_pool: not a 112 -> 56 max pool")
for n in ("resnet50_res2_3x3", "resnet50_res4_3x3"):
    k = ks[n]
    if k["layout"] != "nhwc" or k["pre"]["kernel"] != "covenant_%s_nhwc" % n:
        bad.append("%s: not channels-last with its transform" % n)
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
cmp -s "$work/a/manifest.json" "$work/b/manifest.json" || { echo "FAIL: manifests differ"; fail=1; }
# the warp-specialised persistent GEMM (plan.tma, :ws): a producer
# warpgroup's bulk tensor copies counted on the stage's "full" barrier after
# it waited for "empty", consumers waiting for "full" before their wgmma
# batch and arriving on "empty" after it, registers moved by setmaxnreg
# under a fixed launch budget, no per-thread copies, no spills; one
# workgroup per SM; deterministic
ws=gemm_4096x4096x4096:128x256x64:64x256:4:ws
"$cov" gpu compile $ws --target nvptx-sm90 -o "$work/ws" >/dev/null
"$cov" gpu compile $ws --target nvptx-sm90 -o "$work/ws2" >/dev/null
f=$work/ws/gemm_4096x4096x4096_t128x256x64w64x256s4ws.ptx
wsbad() { echo "FAIL ws: $1"; fail=1; }
[ "$(grep -c 'cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes' "$f")" -eq 5 ] ||
  wsbad "not 5 bulk tensor copies per K tile (A and four 64-column B slabs)"
[ "$(grep -c 'mbarrier.init.shared::cta.b64' "$f")" -eq 8 ] || wsbad "not 2 barriers per stage"
grep -q 'fence.mbarrier_init' "$f" || wsbad "barrier inits not fenced"
grep -q 'mbarrier.arrive.expect_tx.shared::cta.b64 st, \[%r[0-9]*\], %r[0-9]*;' "$f" || wsbad "no expect_tx"
[ "$(grep -c 'mbarrier.try_wait.parity' "$f")" -eq 2 ] || wsbad "not one wait each in producer and consumer"
grep -q 'mbarrier.arrive.shared::cta.b64' "$f" || wsbad "consumers do not release stages"
grep -q 'setmaxnreg.dec.sync.aligned.u32 40;' "$f" || wsbad "producer keeps its registers"
grep -q 'setmaxnreg.inc.sync.aligned.u32 232;' "$f" || wsbad "consumers get no registers"
grep -q '^.maxnreg 168' "$f" || wsbad "no fixed launch register budget"
grep -q '^.maxntid 384, 1, 1' "$f" || wsbad "not 3 warpgroups"
grep -Eq 'wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16' "$f" || wsbad "no wgmma m64n256k16"
if grep -q 'cp.async.cg' "$f"; then wsbad "per-thread copies"; fi
if grep -q '\.local' "$f"; then wsbad "uses local memory"; fi
# the consumer's wait comes before its batch, its release after the batch's wait
awk '/try_wait/{w=NR} /wgmma.mma_async/{if(!m)m=NR} /wgmma.wait_group/{g=NR} /mbarrier.arrive.shared/{a=NR}
     END{exit !(w<m && g<a)}' "$f" || wsbad "consumer order wait -> batch -> wait -> release broken"
python3 - "$work/ws/manifest.json" <<'PY' || fail=1
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
ok = k["grid"] == [132, 1, 1] and k["block"] == [384, 1, 1] and k["tma"] == {"a": [4096, 4096, 128, 64], "b": [4096, 4096, 64, 64], "swizzle": 128}
print("" if ok else "FAIL ws: manifest grid/block/tma %s %s %s" % (k["grid"], k["block"], k.get("tma")), end="")
sys.exit(0 if ok else 1)
PY
cmp -s "$f" "$work/ws2/$(basename "$f")" || wsbad "two compilations differ"
# flags: d keeps one batch in flight (wait_group 1 in the K loop, the last
# batch awaited after it), h writes f16 (manifest out_dtype): each quad of
# lanes transposes its four 8-column fragments by xor shuffles 1 and 2 and
# stores whole 16-byte vectors (64 of a 64x256 warpgroup tile: 16 stores,
# 4 shuffles each), no 4-byte pair stores
"$cov" gpu compile gemm_4096x4096x4096:128x256x64:64x256:4:wsdh --target nvptx-sm90 -o "$work/wsdh" >/dev/null
f=$work/wsdh/gemm_4096x4096x4096_t128x256x64w64x256s4wsdh.ptx
grep -q 'wgmma.wait_group.sync.aligned 1;' "$f" || wsbad "d: no batch left in flight"
grep -q 'wgmma.wait_group.sync.aligned 0;' "$f" || wsbad "d: the last batch is not awaited"
[ "$(grep -c 'mbarrier.arrive.shared::cta.b64' "$f")" -eq 2 ] || wsbad "d: not two stage releases (in the loop, after it)"
grep -q 'cvt.rn.f16.f32' "$f" || wsbad "h: no f16 rounding"
[ "$(grep -c 'st.global.v4.[fb]32' "$f")" -eq 16 ] || wsbad "h: not 16 16-byte stores"
[ "$(grep -c 'shfl.sync.bfly.b32.*, 1, 31, -1;' "$f")" -eq 32 ] || wsbad "h: not 2 xor-1 shuffles per store"
[ "$(grep -c 'shfl.sync.bfly.b32.*, 2, 31, -1;' "$f")" -eq 32 ] || wsbad "h: not 2 xor-2 shuffles per store"
if grep -Eq 'st.global.(b32|v2.f32|b16)' "$f"; then wsbad "h: pair or element stores"; fi
grep -q '"out_dtype": "f16"' "$work/wsdh/manifest.json" || wsbad "h: manifest does not say f16"
# LAYER:f16: the compiler's own schedule with f16 outputs (the mapper keeps
# the warp-specialised kernel, the only one that writes them); refused with
# the layer's location where the kernel cannot write f16
"$cov" gpu compile gemm_512x2304x768:f16 --target nvptx-sm90 -o "$work/f16" >/dev/null || wsbad ":f16 does not compile"
f=$work/f16/gemm_512x2304x768_f16.ptx
grep -q '"out_dtype": "f16"' "$work/f16/manifest.json" && grep -q '"tma"' "$work/f16/manifest.json" ||
  wsbad ":f16: not the warp-specialised kernel with f16 outputs"
grep -q 'st.global.v4' "$f" || wsbad ":f16: no 16-byte stores"
if "$cov" gpu compile resnet50_res2_3x3:f16 --target nvptx-sm90 -o "$work/f16bad" 2>"$work/f16bad.err"; then
  wsbad ":f16 accepted on a convolution"
fi
grep -q 'layers.json.*resnet50_res2_3x3: f16 outputs are for matmuls' "$work/f16bad.err" ||
  wsbad ":f16 refusal not located: $(cat "$work/f16bad.err")"
# p: ping-pong consumers, each warpgroup a whole 64 x bn tile on alternate
# tiles; the K loops handed over in tile order through named barriers of
# 256 threads (a wait before the K loop, an arrive after it); a stage is
# released by one warpgroup (empty barriers of 128); 384 threads
"$cov" gpu compile gemm_4096x3072x768:64x256x64:64x256:4:wshp --target nvptx-sm90 -o "$work/wsp" >/dev/null ||
  wsbad "p: does not compile"
f=$work/wsp/gemm_4096x3072x768_t64x256x64w64x256s4wshp.ptx
grep -q 'bar.sync %r[0-9]*, 256;' "$f" && grep -q 'bar.arrive %r[0-9]*, 256;' "$f" || wsbad "p: no named-barrier hand-over"
grep -q 'mov.b32.*, 128;' "$f" && grep -q '^.maxntid 384, 1, 1' "$f" || wsbad "p: not 2 x 128 consumers releasing per warpgroup"
awk '/bar.sync %r/{s=NR} /wgmma.mma_async/{if(!m)m=NR} /bar.arrive %r/{a=NR} END{exit !(s<m && m<a)}' "$f" ||
  wsbad "p: order wait -> K loop -> arrive broken"
for bad in gemm_4096x3072x768:128x256x64:64x256:4:wsp gemm_4096x3072x768:64x256x64:64x256:4:ws0p; do
  if "$cov" gpu compile $bad --target nvptx-sm90 -o "$work/wspbad" 2>/dev/null; then wsbad "p: $bad accepted"; fi
done
# setmaxnreg needs a launch that could not give every thread 232 registers
if "$cov" gpu compile gemm_1024x1024x1024:64x128x64:64x128:8:ws --target nvptx-sm90 -o "$work/wsbad" 2>"$work/wsbad.err"; then
  wsbad "setmaxnreg accepted on 256 threads"
fi
grep -q 'setmaxnreg to 232 registers' "$work/wsbad.err" || wsbad "refusal does not say why: $(cat "$work/wsbad.err")"
# f32 operands (--dtype f32; the precision plan's promoted groups): three
# tf32 products per fragment pair (3xTF32) on split operands, not the FMA
# fragment: a conv with K = 27 (a K tile's tail) and a matmul
"$cov" gpu compile resnet50_conv1 gemm_1000x1000x27 --target nvptx-sm90 --dtype f32 -o "$work/f32" >/dev/null ||
  { echo "FAIL f32: does not compile"; fail=1; }
for f in "$work"/f32/*.ptx; do
  mma=$(grep -c 'mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32' "$f" || true)
  cvt=$(grep -c 'cvt.rna.tf32.f32' "$f" || true)
  { [ "$mma" -gt 0 ] && [ $((mma % 3)) -eq 0 ]; } || { echo "FAIL f32 $f: $mma tf32 mma (not 3 per product)"; fail=1; }
  # a split is two conversions (the part and the remainder)
  { [ "$cvt" -gt 0 ] && [ $((cvt % 2)) -eq 0 ]; } || { echo "FAIL f32 $f: $cvt tf32 conversions"; fail=1; }
  if grep -Eq '\.f16|ldmatrix|\.local' "$f"; then echo "FAIL f32 $f: f16 operands or local memory"; fail=1; fi
done
[ "$n" -eq 15 ] || { echo "FAIL: expected 15 kernels (the suite's 14 layers and a GEMM), got $n"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $n PTX kernels checked, deterministic"
exit $fail
