#!/bin/bash
# covenant compile MODEL.onnx --target npu-* -o OUT: one artifact
# (runtime/README.md) holding one program per fused group with the model's
# weights in it; byte-identical when compiled again; every program readable
# by disasm and runnable by sim; covenant-run runs the artifact in the
# simulator with outputs bit-identical to `covenant run` on the same NPU
# (the same programs) and within 1e-2 of --target ref; a group that cannot
# be fused runs on the host as its codelet calls; layout work (a Transpose)
# runs as a part step in the reference interpreter, as ref does.
# Models: the example ConvNet, the mixed net model_run.py writes into WORK,
# and a Transpose written here.
set -u
cov=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$2 work=$3
rt=$(dirname "$cov")/covenant-run
fail=0
py=/usr/bin/python3
mkdir -p "$work"
bad() { echo "FAIL: $*"; fail=1; }
x=$work/convnet_x.npy
$py -c "import numpy as np; np.save('$x', np.random.default_rng(7).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32))"
for t in npu-16x16 npu-32x32-os; do
  a1=$work/convnet-$t-a.cvx a2=$work/convnet-$t-b.cvx
  rm -rf "$a1" "$a2"
  "$cov" compile "$src/examples/convnet.onnx" --target $t -o "$a1" >/dev/null || bad "compile $t"
  (cd "$work" && "$cov" compile "$src/examples/convnet.onnx" --target $t -o "$a2" >/dev/null) || bad "recompile $t"
  cmp -s "$a1" "$a2" || bad "$t: recompiling is not byte-identical"
  $py - "$src/runtime" "$a1" "$t" "$work" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, data = artifact.read(sys.argv[2])
t, work = sys.argv[3], sys.argv[4]
bufs = m["buffers"]
steps = m["steps"]
ok = (m["target"] == t and m["backend"] == "npu-sim" and m["arch"] == t and m["model"] == "convnet.onnx"
      and m["missing"] == []
      and [(i["name"], i["dtype"], i["shape"]) for i in m["inputs"]] == [("input", "f32", [1, 3, 32, 32])]
      and [(o["name"], o["dtype"], o["shape"]) for o in m["outputs"]] == [("output", "f32", [1, 10, 11, 11])]
      and [s["op"] for s in steps] == ["npu", "npu"]
      and [s["label"] for s in steps] == ["conv1", "conv2"]
      # the ACG the programs were compiled for, embedded (runtime/README.md)
      and [b["name"] for b in m["blobs"]] == ["group_0.npu", "group_1.npu", "acg.json"] and m["acg"] == 2
      and m["version"] == 3
      and [b["tensor"] for b in steps[0]["binds"]] == ["in0", "out"]
      # conv1's result is conv2's input: one intermediate between the programs
      and steps[0]["binds"][1]["buffer"] == steps[1]["binds"][0]["buffer"]
      and bufs[steps[0]["binds"][1]["buffer"]]["kind"] == "intermediate"
      and bufs[steps[0]["binds"][1]["buffer"]]["shape"] == [1, 10, 15, 15]
      and bufs[steps[1]["binds"][1]["buffer"]]["kind"] == "output"
      and bufs[steps[0]["binds"][0]["buffer"]]["kind"] == "input")
if not ok:
    print("FAIL: manifest", m)
for i, b in enumerate(m["blobs"]):
    open("%s/%s-g%d.npu" % (work, t, i), "wb").write(data[b["offset"]:b["offset"] + b["bytes"]])
sys.exit(0 if ok else 1)
PY
  for g in 0 1; do
    out=$("$cov" disasm "$work/$t-g$g.npu" 2>&1) || bad "disasm group $g on $t: $out"
    grep -q "segment 0" <<<"$out" || bad "$t group $g: no constants in the program"
    grep -q "; npu program for ACG '$t'" <<<"$out" || bad "$t group $g: header"
    out=$("$cov" sim "$work/$t-g$g.npu" 2>&1) || bad "sim group $g on $t: $out"
    grep -q "^output out f32\[" <<<"$out" || bad "$t group $g: sim output"
  done
  # the artifact in the simulator: the same bits as covenant run on this NPU, and close to ref
  out=$("$rt" "$a1" --input "$x" -o "$work/art-$t.npy" 2>&1) || bad "covenant-run $t: $out"
  grep -q "device: npu-sim simulator of $t" <<<"$out" || bad "covenant-run $t: device line: $out"
  "$cov" run "$src/examples/convnet.onnx" --target $t --input "$x" -o "$work/run-$t.npy" >/dev/null 2>&1 ||
    bad "covenant run $t"
  out=$($py -c "
import numpy as np
a, r = np.load('$work/art-$t.npy'), np.load('$work/run-$t.npy')
print('identical' if a.shape == r.shape and np.array_equal(a, r) else 'differ %s %s' % (a.shape, np.abs(a - r).max()))")
  [ "$out" = identical ] || bad "$t: the artifact's output and covenant run's $out"
  out=$("$cov" run "$src/examples/convnet.onnx" --target ref --input "$x" --expect "$work/art-$t.npy" 2>&1) ||
    bad "$t: the artifact's output is not within 1e-2 of ref: $out"
  # inputs of the wrong shape are refused, named
  $py -c "import numpy as np; np.save('$work/bad_x.npy', np.zeros((1, 3, 16, 16), np.float32))"
  out=$("$rt" "$a1" --input "$work/bad_x.npy" 2>&1)
  [ $? = 1 ] && grep -q "input 'input' must be f32\[1, 3, 32, 32\], not f32\[1, 3, 16, 16\]" <<<"$out" || bad "bad input: $out"
  out=$("$rt" "$a1" --target nvptx-sm90 2>&1)
  [ $? = 1 ] && grep -q "for target $t, not nvptx-sm90" <<<"$out" || bad "wrong target: $out"
done
# A model whose first group cannot be fused: that group runs on the host as
# its codelet calls (host steps, the codelets carried in the artifact), the
# others as programs; covenant-run runs it within 1e-2 of ref.
a=$work/mixed.cvx
rm -rf "$a"
"$cov" compile "$work/mixed.onnx" --target npu-16x16 -o "$a" >/dev/null || bad "compile mixed"
$py - "$src/runtime" "$a" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, _ = artifact.read(sys.argv[2])
ops = [(s["op"], s["group"]) for s in m["steps"]]
ok = (m["missing"] == [] and m["version"] == 5 and "codelets" in m
      and all(op == "host" for op, g in ops if g == 0) and ("host", 0) in ops
      and [g for op, g in ops if op == "npu"] == [1, 2, 3]
      and [b["name"] for b in m["blobs"] if b["name"].endswith(".npu")] == ["group_0.npu", "group_1.npu", "group_2.npu"])
if not ok:
    print("FAIL: mixed artifact", m["missing"], ops)
sys.exit(0 if ok else 1)
PY
$py -c "import numpy as np; np.save('$work/mixed_x.npy', np.random.default_rng(5).uniform(-1, 1, (1, 4, 16, 16)).astype(np.float32))"
out=$("$rt" "$a" --input "$work/mixed_x.npy" -o "$work/mixed_y.npy" 2>&1) || bad "mixed: covenant-run: $out"
out=$("$cov" run "$work/mixed.onnx" --target ref --input "$work/mixed_x.npy" --expect "$work/mixed_y.npy" 2>&1) ||
  bad "mixed: the artifact's output is not within 1e-2 of ref: $out"
# Layout work (a Transpose) runs as a part step (the reference interpreter
# on the host, runtime/README.md "Data-dependent sizes"): the artifact is
# whole and runs as ref does.
$py - "$work/transpose.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
g = helper.make_graph([helper.make_node("Transpose", ["x"], ["t"], name="tr", perm=[1, 0]),
                       helper.make_node("Relu", ["t"], ["y"], name="relu")], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 4])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
a=$work/transpose.cvx
"$cov" compile "$work/transpose.onnx" --target npu-16x16 -o "$a" >/dev/null || bad "compile transpose"
$py - "$src/runtime" "$a" <<'PY' || bad "transpose: not one part step and nothing missing"
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, _ = artifact.read(sys.argv[2])
parts = [x for x in m["steps"] if x["op"] == "part"]
sys.exit(0 if not m["missing"] and len(parts) == 1 and parts[0]["label"] == "tr" and "onnx" in m else 1)
PY
$py -c "import numpy as np; np.save('$work/tr_x.npy', np.random.default_rng(6).uniform(-1, 1, (4, 8)).astype(np.float32))"
out=$("$rt" "$a" --input "$work/tr_x.npy" -o "$work/tr_y.npy" 2>&1) || bad "transpose: covenant-run: $out"
out=$("$cov" run "$work/transpose.onnx" --target ref --input "$work/tr_x.npy" --expect "$work/tr_y.npy" 2>&1) ||
  bad "transpose: the artifact's output is not what ref gives: $out"
# Errors: a model that does not load, a file that cannot be written.
out=$("$cov" compile "$work/none.onnx" --target npu-16x16 -o "$work/x.cvx" 2>&1)
[ $? = 1 ] && grep -q "none.onnx" <<<"$out" || bad "missing model: $out"
out=$("$cov" compile "$src/examples/convnet.onnx" --target npu-16x16 -o /proc/nope/x.cvx 2>&1)
[ $? = 1 ] && grep -q "/proc/nope/x.cvx.*cannot open for writing" <<<"$out" || bad "bad output path: $out"
out=$("$cov" compile "$src/examples/convnet.onnx" --target npu-16x16 -o "$work/x" --scale 2 2>&1)
[ $? = 2 ] || bad "--scale with a model: $out"
[ $fail = 0 ] && echo "all checks passed"
exit $fail
