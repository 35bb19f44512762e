#!/usr/bin/env bash
# scripts/same_artifacts.sh COVENANT_A COVENANT_B WORK MODEL... : the same
# artifact bytes from two builds of covenant (scripts/test.sh: gcc and
# clang-19). Determinism holds across compilers only if the code emitting
# instructions never depends on unspecified behaviour of C, such as the
# order in which a call's arguments are evaluated (two builder calls as
# arguments of a third emit their instructions in either order). Each
# MODEL is compiled for nvptx-sm90 and amdgpu-gfx942 by both and compared.
set -u
a=$1 b=$2 work=$3; shift 3
mkdir -p "$work"
fail=0
for m in "$@"; do
  for t in nvptx-sm90 amdgpu-gfx942; do
    n=$(basename "$m" .onnx).$t
    "$a" compile "$m" --target "$t" -o "$work/$n.a.cvx" > "$work/$n.a.log" 2>&1 || { cat "$work/$n.a.log"; fail=1; continue; }
    "$b" compile "$m" --target "$t" -o "$work/$n.b.cvx" > "$work/$n.b.log" 2>&1 || { cat "$work/$n.b.log"; fail=1; continue; }
    if cmp -s "$work/$n.a.cvx" "$work/$n.b.cvx"; then
      echo "same bytes: $n"
    else
      echo "FAIL: $n differs between $a and $b (cmp: $(cmp "$work/$n.a.cvx" "$work/$n.b.cvx" 2>&1 | head -1))"
      fail=1
    fi
  done
done
exit $fail
