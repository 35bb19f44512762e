#!/usr/bin/env bash
# covenant compile MODEL --precision auto|f16|f32 on a GPU target: f16
# passes NHWC f16 activations between the convolutions the channels-last
# kernels take, so it launches fewer kernels than f32 (f32 NCHW between
# every kernel); auto (the default, the same bytes as without the option)
# is f16 on a model whose estimated f16 error is within the budget, and
# says so; other values, and the option on layers, are usage errors.
set -u
cov=$1 model=$2 target=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
launches() { sed -n 's/.* \([0-9]*\) kernel launches .*/\1/p' "$1"; }
for p in default auto f16 f32; do
  opt=()
  [ $p = default ] || opt=(--precision $p)
  "$cov" compile "$model" --target "$target" "${opt[@]}" -o "$work/$p.cvx" > "$work/$p.log" 2>&1 ||
    { cat "$work/$p.log"; exit 1; }
done
cmp -s "$work/default.cvx" "$work/auto.cvx" || bad "the default is not --precision auto"
cmp -s "$work/auto.cvx" "$work/f16.cvx" || bad "auto is not f16 on a model within the budget"
grep -q "note: precision: estimated error .*every matrix kernel on f16 operands" "$work/auto.log" ||
  bad "auto does not say its estimate: $(cat "$work/auto.log")"
h=$(launches "$work/f16.log") f=$(launches "$work/f32.log")
[ -n "$h" ] && [ -n "$f" ] && [ "$h" -lt "$f" ] || bad "f16 launches $h, f32 $f: fewer expected with f16"
out=$("$cov" compile "$model" --target "$target" --precision f64 -o "$work/x.cvx" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "expected auto, f16 or f32" <<<"$out" || bad "--precision f64: exit $rc: $out"
out=$("$cov" compile conv3x3_64 --target "$target" --precision f32 -o "$work/layers" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "for models, not layers" <<<"$out" || bad "--precision on a layer: exit $rc: $out"
[ $fail = 0 ] && echo "ok: $h launches with f16 activations, $f with f32"
exit $fail
