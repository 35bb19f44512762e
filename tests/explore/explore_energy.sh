#!/usr/bin/env bash
# Simulated energy in a study: the npusim evaluator's energy_pj cells hold
# the simulator's energy (as `covenant sim` prints it for the same derived
# design and layer), summary.csv's energy is their sum per design, its
# pareto_cycles_energy flags are exactly the designs no other design beats
# on both total cycles and energy (recomputed here), and `explore plot`
# draws the cycles-vs-energy (energy-delay) front.
. "$(dirname "$0")/common.sh"
py=${COVENANT_PYTHON:-}
[ -n "$py" ] || { [ -x /usr/bin/python3 ] && py=/usr/bin/python3 || py=python3; }
"$cov" explore --base "$src/targets/npu-16x16.json" --vary pe_array.dims=8x8,16x16 \
  --vary ibuf.capacity=16KiB,64KiB --vary dram.energy_pj_per_byte.read=80,160 \
  --suite convnet_layer1,convnet_layer2 --suite-file "$src/bench/suite/layers.json" \
  --eval npusim -q -o "$work/s" > /dev/null || fail "npusim study"
"$py" - "$work/s" <<'PY' || fail "energy columns or front"
import csv, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/results.csv")))
assert len(rows) == 16, len(rows)
for r in rows:
    assert r["evaluator"] == "npusim" and float(r["energy_pj"]) > 0, r
summ = list(csv.DictReader(open(f"{d}/summary.csv")))
assert len(summ) == 8
pts = {}
for s in summ:
    e = sum(float(r["energy_pj"]) for r in rows if r["design"] == s["design"])
    assert abs(float(s["energy_pj"]) - e) <= 1e-6 * e, (s["energy_pj"], e)
    pts[s["design"]] = (float(s["total_cycles"]), float(s["energy_pj"]))
for s in summ:
    c, e = pts[s["design"]]
    beaten = any(c2 <= c and e2 <= e and (c2 < c or e2 < e) for c2, e2 in pts.values())
    assert (s["pareto_cycles_energy"] == "1") == (not beaten), (s["design"], s["pareto_cycles_energy"], beaten)
assert sum(s["pareto_cycles_energy"] == "1" for s in summ) >= 1
# the DRAM read energy varied alone changes energy, not cycles
PY
# one cell against covenant compile + sim of the same derived design
rm -rf "$work/prog"
"$cov" compile convnet_layer2 --target "$work/s/designs/d001.json" --suite "$src/bench/suite/layers.json" \
  -o "$work/prog" > /dev/null || fail "compile d001"
want=$("$cov" sim "$work/prog/program.npu" --target "$work/s/designs/d001.json" | sed -n 's/^energy \([0-9.]*\) uJ.*/\1/p')
got=$("$py" -c "import csv,sys; print(next(float(r['energy_pj']) for r in csv.DictReader(open(sys.argv[1])) if r['design']=='d001' and r['layer']=='convnet_layer2')/1e6)" "$work/s/results.csv")
"$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 5e-4 else 1)" "${want:-nan}" "$got" ||
  fail "d001 convnet_layer2: explore says $got uJ, covenant sim '$want'"
if "$py" -c "import matplotlib" 2> /dev/null; then
  "$cov" explore plot "$work/s" > /dev/null || fail "explore plot"
  [ -s "$work/s/plots/cycles_vs_energy.svg" ] && [ -s "$work/s/plots/cycles_vs_energy.png" ] ||
    fail "no cycles_vs_energy plot"
  grep -q "Pareto front" "$work/s/plots/cycles_vs_energy.svg" || fail "no front in the energy plot"
else
  echo "note: no matplotlib, the plot is not checked"
fi
finish
