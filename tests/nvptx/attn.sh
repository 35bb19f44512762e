#!/usr/bin/env bash
# attn.sh COVENANT WORKDIR: the fused attention kernel (attn_BxHxSxD[:BMxWM],
# backends/gpu/gpu_lower_attn.c) compiled to PTX for nvptx-sm90: the
# instruction mix of one flash-attention step (S = Q K^T and O += P V as
# mma.sync m16n8k16, exactly dim/16 * bn/16 * 2 per product and 16-row block;
# K read with non-transposing ldmatrix, V with ldmatrix.trans, K/V tiles by
# cp.async, row max/sum over quads by butterfly shuffles, ex2), f16 pairs
# stored, no local memory, the manifest's launch, two compilations
# byte-identical; and the refusals (shapes, dtypes, a target without the
# instructions) with their reasons. Numerical checks against torch run on
# the GPU machine (bench/nvptx/scripts/attn_bench.py).
set -u
cov=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL $*"; fail=1; }
"$cov" gpu compile attn_1x12x128x64:64x16 attn_32x12x512x64:64x16 attn_2x4x256x128:64x32 --target nvptx-sm90 -o "$work/a" >/dev/null ||
  bad "compile failed"
"$cov" gpu compile attn_1x12x128x64:64x16 attn_32x12x512x64:64x16 attn_2x4x256x128:64x32 --target nvptx-sm90 -o "$work/b" >/dev/null
# name, mma.sync count (S and PV: (dim/16) * (64/16) * 2 * (wm/16) each)
for spec in "attn_1x12x128x64_q64w16 64" "attn_32x12x512x64_q64w16 64" "attn_2x4x256x128_q64w32 256"; do
  set -- $spec
  name=$1 mma=$2 f=$work/a/$1.ptx
  [ -f "$f" ] || { bad "$name: no PTX"; continue; }
  grep -q "^.visible .entry covenant_$name(" "$f" || bad "$name: no entry"
  n=$(grep -c 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$f")
  [ "$n" -eq "$mma" ] || bad "$name: $n mma.sync, expected $mma"
  grep -q 'ldmatrix.sync.aligned.m8n8.x4.shared.b16' "$f" || bad "$name: no ldmatrix for Q and K"
  grep -q 'ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16' "$f" || bad "$name: no ldmatrix.trans for V"
  grep -q 'cp.async.cg.shared.global' "$f" || bad "$name: no cp.async"
  grep -q 'cp.async.wait_group 0' "$f" || bad "$name: copies not awaited"
  grep -q 'shfl.sync.bfly.b32' "$f" || bad "$name: no quad shuffle"
  grep -q 'ex2.approx.ftz.f32' "$f" || bad "$name: no one-instruction exp2 (ftz)"
  grep -q 'max.f32' "$f" || bad "$name: row max not by max.f32"
  grep -q 'cvt.rn.f16x2.f32' "$f" || bad "$name: P and O not rounded and packed by cvt.rn.f16x2.f32"
  if grep -q 'cvt.rn.f16.f32' "$f"; then bad "$name: single f16 conversions"; fi
  grep -q 'st.global.b32' "$f" || bad "$name: no f16 pair stores"
  grep -q 'bar.sync' "$f" || bad "$name: no barrier"
  if grep -q '\.local' "$f"; then bad "$name: uses local memory"; fi
  if grep -q 'st.global.f32\|st.global.v2.f32' "$f"; then bad "$name: f32 stores"; fi
  cmp -s "$f" "$work/b/$name.ptx" || bad "$name: two compilations differ"
done
cmp -s "$work/a/manifest.json" "$work/b/manifest.json" || bad "manifests differ"
python3 - "$work/a/manifest.json" <<'PY' || fail=1
import json, sys
ks = {k["name"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
want = {"attn_1x12x128x64_q64w16": ([2, 12, 1], [128, 1, 1], (64 + 256) * 64 * 2, 0.125),
        "attn_32x12x512x64_q64w16": ([8, 384, 1], [128, 1, 1], (64 + 256) * 64 * 2, 0.125),
        "attn_2x4x256x128_q64w32": ([4, 8, 1], [64, 1, 1], (64 + 256) * 128 * 2, 128 ** -0.5)}
bad = []
for n, (grid, block, smem, scale) in want.items():
    k = ks.get(n)
    if not k or k["kind"] != "attention" or k["grid"] != grid or k["block"] != block or k["shared_bytes"] != smem \
            or abs(k["scale"] - scale) > 1e-7 or k["out_dtype"] != "f16" or k["kernel"] != "covenant_" + n:
        bad.append("%s: manifest %s" % (n, k))
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
# the default tile: a warpgroup of 64 rows where the head dim is 64 (the
# fastest at the four BERT shapes; 128-key blocks for sequence 512 or fewer
# workgroups than SMs, pipelined where the workgroups are fewer than the
# SMs, else chained where there are 4 key blocks or more), else by
# workgroups per SM: 64x16 below one per SM, 64x32 below 8,
# 128x32 above
"$cov" gpu compile attn_1x12x512x64 attn_32x12x512x64 attn_32x12x128x64 attn_1x12x128x64 attn_1x12x128x32 \
  attn_32x12x128x32 attn_32x12x512x32 --target nvptx-sm90 -o "$work/d" >/dev/null
for n in attn_1x12x512x64_q64w64k128p attn_32x12x512x64_q64w64k128c attn_1x12x128x64_q64w64k128p attn_1x12x128x32_q64w16 \
         attn_32x12x128x32_q64w32 attn_32x12x512x32_q128w32 attn_32x12x128x64_q64w64; do
  [ -f "$work/d/$n.ptx" ] || bad "default tile: no $n"
done
# warpgroups (64 rows each): S = Q K^T as wgmma with K read K-major
# (transpose-b 0) from shared memory, O += P V with P from registers
# (V N-major, transpose-b 1), each batch fenced, committed and awaited, the
# copies fenced for the async proxy; no per-warp MMAs or ldmatrix
"$cov" gpu compile attn_32x12x512x64:128x64 --target nvptx-sm90 -o "$work/wg" >/dev/null || bad "wg: compile failed"
f=$work/wg/attn_32x12x512x64_q128w64.ptx
[ "$(grep -Ec 'wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 \{[^}]*\}, %rd[0-9]+, %rd[0-9]+, p, 1, 1, 0, 0;' "$f")" -eq 4 ] ||
  bad "wg: not 4 S = Q K^T wgmma (K-major B) per block"
[ "$(grep -Ec 'wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 \{[^}]*\}, \{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\}, %rd[0-9]+, p, 1, 1, 1;' "$f")" -eq 4 ] ||
  bad "wg: not 4 O += P V wgmma (A from registers) per block"
[ "$(grep -c 'wgmma.fence.sync.aligned' "$f")" -eq 2 ] || bad "wg: batches not fenced"
[ "$(grep -c 'wgmma.wait_group.sync.aligned 0' "$f")" -eq 2 ] || bad "wg: batches not awaited"
grep -q 'fence.proxy.async.shared::cta' "$f" || bad "wg: copies not fenced for the async proxy"
if grep -q 'mma.sync\|ldmatrix\|\.local' "$f"; then bad "wg: per-warp MMAs, ldmatrix or local memory"; fi
"$cov" gpu compile attn_32x12x512x64:64x64x128 --target nvptx-sm90 -o "$work/wgk" >/dev/null || bad "wg k128: compile failed"
f=$work/wgk/attn_32x12x512x64_q64w64k128.ptx
[ "$(grep -c 'wgmma.mma_async.sync.aligned.m64n128k16' "$f")" -eq 4 ] || bad "wg k128: not 4 S wgmma m64n128k16"
[ "$(grep -c 'wgmma.mma_async.sync.aligned.m64n64k16' "$f")" -eq 8 ] || bad "wg k128: not 8 P V wgmma m64n64k16"
grep -q '"shared_bytes": 50176' "$work/wg/manifest.json" || bad "wg: shared bytes not (128 + 256) x 64 x 2 + 1024"
# pipelined (p): S_j issued with P_{j-1} V_{j-1}, only S_j awaited (wait_group
# 1) before the softmax; 4 S and 4 P V wgmma each in the loop, S_0 before it
# and the last P V after it; P passes through the final wait (no register
# reuse while the tensor cores read it), so ptxas keeps the pipeline
# (no C7513 "wgmma serialized") where ptxas is installed
"$cov" gpu compile attn_32x12x512x64:64x64p --target nvptx-sm90 -o "$work/wgp" >/dev/null || bad "wg p: compile failed"
f=$work/wgp/attn_32x12x512x64_q64w64p.ptx
[ "$(grep -Ec 'wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 \{[^}]*\}, %rd[0-9]+, %rd[0-9]+, p, 1, 1, 0, 0;' "$f")" -eq 8 ] ||
  bad "wg p: not 8 S wgmma (prologue + loop)"
[ "$(grep -Ec 'wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 \{[^}]*\}, \{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\}, %rd[0-9]+, p, 1, 1, 1;' "$f")" -eq 8 ] ||
  bad "wg p: not 8 P V wgmma (loop + epilogue)"
[ "$(grep -c 'wgmma.wait_group.sync.aligned 1' "$f")" -eq 1 ] || bad "wg p: S not awaited alone (wait_group 1)"
grep -q 'softmax overlapped' "$work/wgp/manifest.json" || bad "wg p: plan does not say pipelined"
# chained (c): block j-1's 8 P V wgmma and block j's 4 S wgmma in one
# commit group, awaited once (wait_group 0) in the loop; S_0 before it and
# the last block's P V after it: 3 groups, 3 waits, 3 barriers in all.
# K/V copies: one shared and one global base per thread plus immediate
# offsets (8 chunks of a 128-key tile: base + 2048 * i bytes)
"$cov" gpu compile attn_32x12x512x64:64x64x128c --target nvptx-sm90 -o "$work/wgc" >/dev/null || bad "wg c: compile failed"
f=$work/wgc/attn_32x12x512x64_q64w64k128c.ptx
[ "$(grep -c 'wgmma.mma_async.sync.aligned.m64n128k16' "$f")" -eq 8 ] || bad "wg c: not 4 + 4 S wgmma"
[ "$(grep -c 'wgmma.mma_async.sync.aligned.m64n64k16' "$f")" -eq 16 ] || bad "wg c: not 8 + 8 P V wgmma"
[ "$(grep -c 'wgmma.commit_group' "$f")" -eq 3 ] || bad "wg c: P V and S not committed as one group"
[ "$(grep -c 'wgmma.wait_group.sync.aligned 0' "$f")" -eq 3 ] || bad "wg c: not one wait per block"
[ "$(grep -c 'bar.sync' "$f")" -eq 3 ] || bad "wg c: not one barrier per block"
grep -q "P V issued with the next block's S" "$work/wgc/manifest.json" || bad "wg c: plan does not say chained"
awk '/m64n64k16/{pv=NR} /m64n128k16/{if (pv && NR > pv) ok=1} END{exit !ok}' "$f" || bad "wg c: no S issued after a P V"
[ "$(grep -c 'add.s64.*, 2048;' "$f")" -ge 2 ] || bad "wg c: copies not addressed from a base plus constant offsets"
ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
if [ -n "$ptxas" ]; then
  for k in "$work/wgp/attn_32x12x512x64_q64w64p.ptx" "$work/wgk/attn_32x12x512x64_q64w64k128.ptx" "$work/wgc/attn_32x12x512x64_q64w64k128c.ptx"; do
    info=$("$ptxas" -arch=sm_90a -v "$k" -o /dev/null 2>&1) || bad "ptxas failed on $k: $info"
    if grep -q 'C7513\|serialized' <<<"$info"; then bad "ptxas serializes the wgmma of $k: $info"; fi
    if ! grep -q ' 0 bytes spill stores' <<<"$info"; then bad "$k spills: $info"; fi
  done
fi
# bf16 inputs take the bf16 mma
"$cov" gpu compile attn_1x12x128x64:64x16 --dtype bf16 --target nvptx-sm90 -o "$work/bf" >/dev/null || bad "bf16 compile failed"
grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32' "$work/bf/attn_1x12x128x64_q64w16.ptx" 2>/dev/null ||
  bad "bf16: no bf16 mma"
expect() { # expect PATTERN -- ARGS...: exit 1 and the pattern in the message
  local pat=$1
  shift 2
  local out
  out=$("$cov" "$@" 2>&1)
  local rc=$?
  if [ $rc -ne 1 ] || ! grep -q -- "$pat" <<<"$out"; then bad "covenant $* -> exit $rc, expected 1 with '$pat'; got: $out"; fi
}
expect "a sequence that is a multiple of 64" -- gpu compile attn_1x12x100x64 --target nvptx-sm90 -o "$work/x"
expect "head dim that is a power of two from 16 to 128 .*dim 80" -- gpu compile attn_1x12x128x80 --target nvptx-sm90 -o "$work/x"
expect "with 256 threads, at least 32.*dim 16" -- gpu compile attn_1x12x128x16:128x16 --target nvptx-sm90 -o "$work/x"
expect "16 or 32.*must divide" -- gpu compile attn_1x12x128x64:48x32 --target nvptx-sm90 -o "$work/x"
expect "is written attn_BxHxSxD\[:BMxWM\[xBN\]\[p|c\]\]" -- gpu compile attn_1x12x128x64:64 --target nvptx-sm90 -o "$work/x"
expect "pipelined (p) or chained (c), not both" -- gpu compile attn_1x12x128x64:64x64pc --target nvptx-sm90 -o "$work/x"
expect "only the warpgroup form .* is chained, not 32 rows per warp" -- gpu compile attn_1x12x128x64:64x32c --target nvptx-sm90 -o "$work/x"
expect "only the warpgroup form .* is pipelined, not 16 rows per warp" -- gpu compile attn_1x12x128x64:64x16p --target nvptx-sm90 -o "$work/x"
expect "head dim 64, not 128" -- gpu compile attn_1x12x128x128:64x64 --target nvptx-sm90 -o "$work/x"
expect "key blocks of 64 or 128, not 96" -- gpu compile attn_1x12x384x64:64x64x96 --target nvptx-sm90 -o "$work/x"
expect "takes f16 or bf16 inputs, not f32" -- gpu compile attn_1x12x128x64 --dtype f32 --target nvptx-sm90 -o "$work/x"
# sizes whose products overflow 64 bits (4 x 2^62 wrapped to 0 and compiled) or leave the grid
expect "sizes from 1 to 2^31-1 expected" -- gpu compile attn_4611686018427387904x4x128x64 --target nvptx-sm90 -o "$work/x"
expect "sizes out of range" -- gpu compile attn_4611686018x4x128x64:64x64 --target nvptx-sm90 -o "$work/x"
expect "sizes out of range" -- gpu compile attn_70000x1x128x64 --target nvptx-sm90 -o "$work/x"
expect "target amdgpu: fused attention needs" -- gpu compile attn_1x12x128x64 --target amdgpu-gfx942 -o "$work/x"
[ $fail -eq 0 ] && echo "ok: fused attention PTX checked, deterministic, refusals located"
exit $fail
