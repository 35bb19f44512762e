#!/bin/bash
# GPU artifacts with host steps and control (format version 5,
# runtime/README.md "Host steps and control"; backends/gpu/gpu_mprogram.c):
# the while loop of control_model.py (a run-time trip count), its variant
# whose condition never turns false and its for loop with a scan output,
# compiled for a GPU TARGET: byte-identical when compiled again, each
# plan's CPU emulation equal to --target ref (test_gpu_model_emulate), and
# the artifact hand-edited with every checksum valid again (artifact.py
# write, through artifact_edit.sh), each edit refused before any device is
# opened, located at its JSON path. Where a device of the target's backend
# is present, the artifact runs as --target ref does and a loop that never
# ends stops at the iteration limit; without one covenant-run exits 4 (no
# driver). Then a model whose outputs' sizes depend on the data (a part
# step, outputs at their capacities): the same checks, and edits of its
# capacities and part step refused at their JSON paths (a capacity below
# what a run makes, and --max-dynamic, where a device runs it).
# Usage: hostile_control_gpu.sh COVENANT COVENANT_RUN TEST_GPU_MODEL_EMULATE SRC WORK TARGET
set -u
cov=$1 rt=$2 emu=$3 src=$4 work=$5 target=$6
rm -rf "$work"
mkdir -p "$work"
art=$work/count.cvx
TMO=20
. "$src/tests/runtime/artifact_edit.sh"
device=0
for v in "count" "spin --host-only" "scan --scan"; do
  set -- $v
  $py "$src/tests/runtime/control_model.py" "$work/$1.onnx" ${2:-} || exit 1
  "$cov" compile "$work/$1.onnx" --target "$target" -o "$work/$1.cvx" >/dev/null || { bad "compile $1"; continue; }
  "$cov" compile "$work/$1.onnx" --target "$target" -o "$work/$1.again.cvx" >/dev/null || bad "recompile $1"
  cmp -s "$work/$1.cvx" "$work/$1.again.cvx" || bad "$1: two compilations differ"
  COVENANT_TARGET_PATH=$src/targets "$emu" "$target" 1e-6 "$work/$1.onnx" || bad "$1: emulation is not ref"
done
$py -c "import numpy as np; np.save('$work/x.npy', np.array([0.5, -1.5, 1.0, 2.0], np.float32))"
$py -c "import numpy as np; np.save('$work/n5.npy', np.array(5, np.int64))"
run=(--input "$work/n5.npy" --input "$work/x.npy")
mkdir -p "$work/out"
out=$("$rt" "$art" "${run[@]}" --output-dir "$work/out" 2>&1)
rc=$?
if [ $rc = 0 ]; then
  device=1
  "$cov" run "$work/count.onnx" --target ref "${run[@]}" --expect "$work/out/0.npy" --expect "$work/out/1.npy" \
    > "$work/ref.log" 2>&1 || bad "count on $target: not what --target ref gives: $(tail -3 "$work/ref.log")"
elif [ $rc = 4 ]; then
  device=0
  echo "no device for $target: the artifacts are checked without running them"
else
  bad "count: covenant-run exit $rc: $out"
fi

loop=$($py - "$src/runtime" "$art" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, _ = artifact.read(sys.argv[2])
print([i for i, x in enumerate(m["steps"]) if x["op"] == "loop"][0])
PY
)
edit v4 'version = 4; m["version"] = 4'
expect 1 "format version 5; the artifact says 4" "$work/v4.cvx" "${run[@]}"
edit next_target 'm["steps"][s("next")]["target"] = 0'
expect 1 "is not its next step" "$work/next_target.cvx" "${run[@]}"
at "steps[$loop].target"
edit next_fwd 'm["steps"][s("next")]["target"] = s("next") + 1'
expect 1 "is not its" "$work/next_fwd.cvx" "${run[@]}"
edit loop_target 'm["steps"][s("loop")]["target"] = s("loop") + 1'
expect 1 "is not its next step" "$work/loop_target.cvx" "${run[@]}"
at "steps[$loop].target"
edit loop_back 'm["steps"][s("loop")]["target"] = 0'
expect 1 "is not after it" "$work/loop_back.cvx" "${run[@]}"
at "steps[$loop]"
edit cond_f32 'm["steps"][s("loop")]["cond"] = [i for i, b in enumerate(m["buffers"]) if b["dtype"] == "f32"][0]'
expect 1 "it must be one bool" "$work/cond_f32.cvx" "${run[@]}"
at "steps[$loop]"
edit trip_f32 'm["steps"][s("loop")]["trip"] = [i for i, b in enumerate(m["buffers"]) if b["dtype"] == "f32"][0]'
expect 1 "trip" "$work/trip_f32.cvx" "${run[@]}"
at "steps[$loop]"
edit copy_size 'm["steps"][s("copy")]["to"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "intermediate" and b["bytes"] != m["buffers"][m["steps"][s("copy")]["from"]]["bytes"]][0]'
expect 1 "a copy from" "$work/copy_size.cvx" "${run[@]}"
edit copy_input 'm["steps"][s("copy")]["to"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "input"][0]'
expect 1 "writes input buffer" "$work/copy_input.cvx" "${run[@]}"
edit copy_weight 'm["steps"][s("copy")]["to"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "weight" and b["bytes"] == m["buffers"][m["steps"][s("copy")]["from"]]["bytes"]][0]'
expect 1 "writes weight buffer" "$work/copy_weight.cvx" "${run[@]}"
edit copy_range 'm["steps"][s("copy")]["from"] = len(m["buffers"])'
expect 1 "steps[" "$work/copy_range.cvx" "${run[@]}"
if [ $device = 1 ]; then
  # a loop whose condition stays true: the iteration limit, with an error
  $py -c "import numpy as np; np.save('$work/nbig.npy', np.array(10**12, np.int64))"
  TMO=300 expect 1 "ran 100000 iterations and would run another: the limit is 100000" "$work/spin.cvx" \
    --input "$work/nbig.npy" --input "$work/x.npy"
fi
# sizes that depend on the data (runtime/README.md, "Data-dependent sizes"):
# y = x[x > 0] and its positions, a part step after the launch computing
# x > 0, y and idx at their capacities; compiled twice byte-identical, the
# plan's emulation (the part in the reference interpreter) equal to ref
$py "$src/tests/runtime/control_model.py" "$work/select.onnx" --select || exit 1
"$cov" compile "$work/select.onnx" --target "$target" -o "$work/select.cvx" >/dev/null || bad "compile select"
"$cov" compile "$work/select.onnx" --target "$target" -o "$work/select2.cvx" >/dev/null || bad "recompile select"
cmp -s "$work/select.cvx" "$work/select2.cvx" || bad "select: two compilations differ"
COVENANT_TARGET_PATH=$src/targets "$emu" "$target" 1e-6 "$work/select.onnx" >/dev/null || bad "select: emulation is not ref"
art=$work/select.cvx
$py -c "import numpy as np; np.save('$work/xs.npy', np.array([0.5, -1.5, 1.0, 2.0], np.float32))"
sel=(--input "$work/n5.npy" --input "$work/xs.npy")
part=$($py -c "import sys; sys.path.insert(0, '$src/runtime'); import artifact; m, _ = artifact.read('$art'); print([i for i, x in enumerate(m['steps']) if x['op'] == 'part'][0])")
yb=$($py -c "import sys; sys.path.insert(0, '$src/runtime'); import artifact; m, _ = artifact.read('$art'); print([i for i, b in enumerate(m['buffers']) if b['name'] == 'y'][0])")
# edits refused when the artifact is read, before any device is opened
edit cap_dims 'b = [x for x in m["buffers"] if x["name"] == "y"][0]; b["dynamic"] = [1]'
expect 1 "'dynamic' lists dims of the shape" "$work/cap_dims.cvx" "${sel[@]}"
at "buffers[$yb]"
edit cap_launch 'b = [x for x in m["buffers"] if x["name"] == "pos"][0]; b["dynamic"] = [0]'
expect 1 "whose size is set at run time; only part steps do" "$work/cap_launch.cvx" "${sel[@]}"
at "steps[0]"
edit cap_input 'b = [x for x in m["buffers"] if x["kind"] == "input" and x["shape"]][0]; b["dynamic"] = [0]'
expect 1 "only outputs and intermediates have dims set at run time" "$work/cap_input.cvx" "${sel[@]}"
edit part_input 'm["steps"][s("part")]["out"][0]["buffer"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "input"][0]'
expect 1 "writes input buffer" "$work/part_input.cvx" "${sel[@]}"
at "steps[$part].out[0]"
edit no_onnx 'del m["onnx"]'
expect 1 "part steps run the model; the artifact has no 'onnx'" "$work/no_onnx.cvx" "${sel[@]}"
if [ $device = 1 ]; then
  # y = [0.5, 1, 2] against ref; a capacity edited below what the run makes,
  # and a cap below the capacity, refused at the part step's output
  mkdir -p "$work/sel"
  out=$("$rt" "$art" "${sel[@]}" --output-dir "$work/sel" 2>&1) || bad "select: covenant-run: $out"
  "$cov" run "$work/select.onnx" --target ref "${sel[@]}" --expect "$work/sel/0.npy" --expect "$work/sel/1.npy" \
    > "$work/sel_ref.log" 2>&1 || bad "select on $target: not what --target ref gives: $(tail -3 "$work/sel_ref.log")"
  edit cap_small 'b = [x for x in m["buffers"] if x["name"] == "y"][0]; b["shape"] = [2]; b["bytes"] = 8; [o for o in m["outputs"] if o["name"] == "y"][0]["shape"] = [2]'
  expect 1 "larger than its capacity" "$work/cap_small.cvx" "${sel[@]}"
  at "steps[$part].out[0]"
  expect 1 "value 'y' holds 3 elements in this run, more than --max-dynamic 2" "$art" "${sel[@]}" --max-dynamic 2
  at "steps[$part].out[0]"
fi
[ $fail = 0 ] && echo "PASS: $target artifacts with host steps and control"
exit $fail
