#!/usr/bin/env bash
# gpu_calibration.sh COVENANT SRCDIR WORKDIR: the GPU search's fitted
# constants come from the ACG's calibration section, so a GPU is calibrated
# by editing its file: the shipped nvptx-sm90 and a copy of it give the same
# plan; a copy with another overlap or ws_scale predicts other cycles; a
# copy without the section is refused, located.
set -u
cov=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
t=$src/targets/nvptx-sm90.json
cp "$t" "$work/same.json"
sed 's/"overlap": 0.05/"overlap": 0.5/' "$t" > "$work/overlap.json"
sed 's/"ws_scale": 0.54/"ws_scale": 1.08/' "$t" > "$work/ws.json"
python3 - "$t" "$work/none.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["calibration"]
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
cyc() { "$cov" map "$1" -t "$2" | sed -E 's/.*: ([0-9]+) cycles.*/\1/'; }
fail() { echo "FAIL: $*"; exit 1; }
base=$(cyc convnet_layer1 "$t") || fail "map on $t"
[ "$(cyc convnet_layer1 "$work/same.json")" = "$base" ] || fail "a copy of the target plans differently"
[ "$(cyc convnet_layer1 "$work/overlap.json")" != "$base" ] || fail "calibration.overlap changed nothing"
# the warp-specialised kernel's candidates carry ws_scale
g=gemm_4096x4096x4096
a=$("$cov" gpu candidates $g -t "$t" --top 64 | grep ':ws ' | head -1 | awk '{print $5}')
b=$("$cov" gpu candidates $g -t "$work/ws.json" --top 64 | grep ':ws ' | head -1 | awk '{print $5}')
# twice the scale: twice the predicted cycles (to the rounding of the print)
[ -n "$a" ] && [ -n "$b" ] && [ $((b - 2 * a)) -le 2 ] && [ $((2 * a - b)) -le 2 ] ||
  fail "calibration.ws_scale 0.54 -> 1.08 should double the warp-specialised kernel's cycles ($a -> $b)"
out=$("$cov" map convnet_layer1 -t "$work/none.json" 2>&1) && fail "a GPU target without calibration was accepted"
grep -q 'none.json:.*\$\.calibration: missing required field' <<<"$out" || fail "unlocated refusal: $out"
echo "ok: the GPU cost model reads its constants from the ACG's calibration"
