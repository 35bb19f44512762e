#!/usr/bin/env bash
# check_layers.sh COVENANT WORKDIR: every suite contraction layer (and a
# large GEMM) compiled to PTX for nvptx-sm90 through the shared GPU lowering:
# PTX 8.0 for sm_90a, the kernel entry, mma.sync fed by ldmatrix, cp.async
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
  grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$f" || bad "no mma.sync"
  grep -q 'ldmatrix.sync.aligned.m8n8.x4.shared.b16' "$f" || bad "no ldmatrix for A"
  grep -q 'ldmatrix.sync.aligned.m8n8.x[24].trans.shared.b16' "$f" || bad "no ldmatrix.trans for B"
  grep -q 'bar.sync' "$f" || bad "no barrier"
  if grep -q '\.local' "$f"; then bad "uses local memory"; fi
  cmp -s "$f" "$work/b/$name.ptx" || bad "differs between two compilations"
done
# tiles copied as whole vectors go through cp.async
for name in gemm_4096x4096x4096 bert_base_qkv dlrm_mlp_top; do
  grep -q 'cp.async.cg.shared.global' "$work/a/$name.ptx" || { echo "FAIL $name: no cp.async"; fail=1; }
done
cmp -s "$work/a/manifest.json" "$work/b/manifest.json" || { echo "FAIL: manifests differ"; fail=1; }
[ "$n" -eq 14 ] || { echo "FAIL: expected 14 kernels, got $n"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $n PTX kernels checked, deterministic"
exit $fail
