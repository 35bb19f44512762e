#!/bin/bash
# covenant compile MODEL.onnx --target npu-* -o DIR: one program per fused
# group and a manifest; byte-identical when compiled again; every program
# readable by disasm and runnable by sim with the model's weights in it; a
# group that cannot be fused is listed with the reason. Models: the example
# ConvNet and the mixed net model_run.py writes into WORK.
set -u
cov=$1 src=$2 work=$3
fail=0
py=/usr/bin/python3
mkdir -p "$work"
bad() { echo "FAIL: $*"; fail=1; }
for t in npu-16x16 npu-32x32-os; do
  d1=$work/convnet-$t-a d2=$work/convnet-$t-b
  rm -rf "$d1" "$d2"
  "$cov" compile "$src/examples/convnet.onnx" --target $t -o "$d1" >/dev/null || bad "compile $t"
  "$cov" compile "$src/examples/convnet.onnx" --target $t -o "$d2" >/dev/null || bad "recompile $t"
  diff -r "$d1" "$d2" >/dev/null || bad "$t: recompiling is not byte-identical"
  [ "$(ls "$d1")" = "$(printf 'group_0.npu\ngroup_1.npu\nmanifest.json')" ] || bad "$t: files $(ls "$d1")"
  $py - "$d1/manifest.json" "$t" <<'PY' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))
ok = (m["target"] == sys.argv[2] and m["inputs"] == [{"name": "input", "dtype": "f32", "shape": [1, 3, 32, 32]}]
      and m["outputs"] == [{"name": "output", "dtype": "f32", "shape": [1, 10, 11, 11]}]
      and [g["program"] for g in m["groups"]] == ["group_0.npu", "group_1.npu"]
      and m["groups"][0]["codelets"] == ["conv2d", "bias_add", "relu", "maxpool"]
      and [i["value"] for i in m["groups"][0]["inputs"]] == ["input", "conv1.weight", "conv1.bias"]
      and m["groups"][0]["inputs"][1]["source"] == "constant, in the program"
      and m["groups"][0]["output"]["value"] == m["groups"][1]["inputs"][0]["value"] == "pool1_out"
      and m["groups"][1]["output"] == {"tensor": "out", "value": "output", "shape": [1, 10, 11, 11],
                                       "program_shape": [1, 10, 11, 11]})
if not ok:
    print("FAIL: manifest", json.dumps(m, indent=1))
sys.exit(0 if ok else 1)
PY
  for g in 0 1; do
    out=$("$cov" disasm "$d1/group_$g.npu" 2>&1) || bad "disasm group $g on $t: $out"
    grep -q "segment 0" <<<"$out" || bad "$t group $g: no constants in the program"
    grep -q "; npu program for ACG '$t'" <<<"$out" || bad "$t group $g: header"
    out=$("$cov" sim "$d1/group_$g.npu" 2>&1) || bad "sim group $g on $t: $out"
    grep -q "^output out f32\[" <<<"$out" || bad "$t group $g: sim output"
  done
done
# A model whose first group cannot be fused: listed with the reason.
d=$work/mixed
rm -rf "$d"
"$cov" compile "$work/mixed.onnx" --target npu-16x16 -o "$d" >/dev/null || bad "compile mixed"
$py - "$d/manifest.json" <<'PY' || fail=1
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
ok = (g[0]["runs"] == "call by call" and "maxpool after conv2d" in g[0]["reason"]
      and g[1]["runs"] == "npu" and g[2]["runs"] == "npu" and g[3]["runs"] == "call by call")
if not ok:
    print("FAIL: mixed manifest", g)
sys.exit(0 if ok else 1)
PY
[ -f "$d/group_1.npu" ] && [ ! -f "$d/group_0.npu" ] || bad "mixed: program files"
# Errors: a model that does not load, a directory that cannot be made.
out=$("$cov" compile "$work/none.onnx" --target npu-16x16 -o "$work/x" 2>&1)
[ $? = 1 ] && grep -q "none.onnx" <<<"$out" || bad "missing model: $out"
out=$("$cov" compile "$src/examples/convnet.onnx" --target npu-16x16 -o /proc/nope 2>&1)
[ $? = 1 ] && grep -q "cannot create the directory" <<<"$out" || bad "bad dir: $out"
out=$("$cov" compile "$src/examples/convnet.onnx" --target npu-16x16 -o "$work/x" --scale 2 2>&1)
[ $? = 2 ] || bad "--scale with a model: $out"
[ $fail = 0 ] && echo "all checks passed"
exit $fail
