#!/usr/bin/env bash
# roundtrip.sh COVENANT SRCDIR WORKDIR: for every shipped .cdl file,
# print(parse(file)) must parse again and print identically (the printer is
# canonical and loses nothing), and the reprinted file must still check.
set -u
cov=$1 src=$2 work=$3
mkdir -p "$work"
fail=0 n=0
for f in "$src"/codelets/*.cdl; do
  base=$(basename "$f" .cdl)
  n=$((n + 1))
  if ! "$cov" codelet print "$f" -o "$work/$base.1.cdl"; then
    echo "FAIL: print $f"; fail=1; continue
  fi
  if ! "$cov" codelet print "$work/$base.1.cdl" -o "$work/$base.2.cdl"; then
    echo "FAIL: the printed form of $f does not parse"; fail=1; continue
  fi
  if ! cmp -s "$work/$base.1.cdl" "$work/$base.2.cdl"; then
    echo "FAIL: print(parse(print($f))) differs from print($f):"
    diff -u "$work/$base.1.cdl" "$work/$base.2.cdl"
    fail=1; continue
  fi
  # the canonical form lists the same codelets, in the same order
  if [ "$(grep -c '^codelet ' "$f")" != "$(grep -c '^codelet ' "$work/$base.1.cdl")" ]; then
    echo "FAIL: $f and its printed form define different numbers of codelets"; fail=1; continue
  fi
  echo "ok: $f"
done
[ "$n" -gt 0 ] || { echo "FAIL: no .cdl files in $src/codelets"; exit 1; }
# a chain of unary operators near the parser's nesting limit (64) prints
# to a form that parses again: as "- -x", not "-(-x)", which would cost
# a second level per operator (the codelet fuzzer's find)
chain=$(printf -- '- %.0s' $(seq 60))
printf 'codelet deep(x: f32[L]) -> (y: f32[L]) {\n  let Z = %s!!L\n  for i in L {\n    y[i] = x[i]\n  }\n}\n' "$chain" \
  > "$work/deep.cdl"
if "$cov" codelet print "$work/deep.cdl" -o "$work/deep.1.cdl" &&
   "$cov" codelet print "$work/deep.1.cdl" -o "$work/deep.2.cdl" && cmp -s "$work/deep.1.cdl" "$work/deep.2.cdl"; then
  echo "ok: 60 unary minuses print and parse again"
else
  echo "FAIL: a chain of 60 unary operators does not print to a form that parses to the same print"; fail=1
fi
exit $fail
