#!/usr/bin/env bash
# targets_roundtrip.sh COVENANT SRCDIR WORKDIR
# Every shipped target is valid, prints, draws, and round-trips: the canonical
# form (acg fmt) is itself valid and formats to the same bytes, so loading
# loses nothing that the writer knows.
set -eu
cov=$1 src=$2 work=$3
mkdir -p "$work"
cd "$src"
"$cov" acg check targets/*.json
for t in targets/*.json; do
  name=$(basename "$t" .json)
  "$cov" acg fmt "$t" -o "$work/$name.a.json"
  "$cov" acg check "$work/$name.a.json" > /dev/null
  "$cov" acg fmt "$work/$name.a.json" > "$work/$name.b.json"
  cmp "$work/$name.a.json" "$work/$name.b.json"
  # by name as well as by path, and the two agree
  "$cov" acg show "$name" > "$work/$name.show.txt"
  grep -q "peak MACs/cycle" "$work/$name.show.txt"
  grep -q "ridge point" "$work/$name.show.txt"
  "$cov" acg dot "$t" > "$work/$name.dot"
  if command -v dot > /dev/null; then
    dot -Tsvg "$work/$name.dot" > "$work/$name.svg"
    grep -q "<svg" "$work/$name.svg"
  else
    echo "graphviz 'dot' not installed: DOT not rendered" >&2
    exit 1
  fi
  echo "ok: $name"
done
