#!/usr/bin/env bash
# Plots: `explore plot` writes the three plots as valid PNG and SVG files.
. "$(dirname "$0")/common.sh"
# matplotlib is optional: without it (in the python covenant runs, see
# explore/explore_plot.c) the test reports itself skipped (77)
py=${COVENANT_PYTHON:-}
[ -n "$py" ] || { [ -x /usr/bin/python3 ] && py=/usr/bin/python3 || py=python3; }
"$py" -c "import matplotlib" 2> /dev/null || { echo "skipped: $py has no matplotlib (Debian: python3-matplotlib)"; exit 77; }
"$cov" explore "${study_args[@]}" -q -o "$work/s" > /dev/null || fail "run"
"$cov" explore plot "$work/s" > "$work/plot.out" || fail "explore plot"
for p in cycles_vs_area cycles_vs_energy utilisation; do
  f="$work/s/plots/$p"
  [ "$(head -c 8 "$f.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$p.png is not a PNG"
  [ "$(stat -c %s "$f.png")" -gt 10000 ] || fail "$p.png is suspiciously small"
  python3 -c "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith('svg') else 1)" "$f.svg" \
    || fail "$p.svg is not SVG"
done
# The Pareto front is drawn from summary.csv's flags: its points appear.
grep -q "Pareto front" "$work/s/plots/cycles_vs_area.svg" || fail "front legend"
"$cov" explore plot "$work/nothere" 2> /dev/null && fail "plot of a missing study must fail"
"$cov" explore --base npu-16x16 --vary pe_array.dims=8x8 --suite bert_base_qkv --eval roofline \
  --suite-file "$src/bench/suite/layers.json" --plot -q -o "$work/auto" > /dev/null || fail "--plot"
[ -s "$work/auto/plots/utilisation.svg" ] || fail "--plot output"
finish
