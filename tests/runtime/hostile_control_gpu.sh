#!/bin/bash
# GPU artifacts with host steps and control (format version 5,
# runtime/README.md "Host steps and control"; backends/gpu/gpu_mprogram.c):
# the while loop of control_model.py (a run-time trip count), its variant
# whose condition never turns false and its for loop with a scan output,
# compiled for a GPU TARGET: byte-identical when compiled again, each
# plan's CPU emulation equal to --target ref (test_gpu_model_emulate), and
# the artifact hand-edited with every checksum valid again (artifact.py
# write), each edit refused before any device is opened, located at its
# JSON path. Where a device of the target's backend is present, the
# artifact runs as --target ref does and a loop that never ends stops at
# the iteration limit; without one covenant-run exits 4 (no driver).
# Usage: hostile_control_gpu.sh COVENANT COVENANT_RUN TEST_GPU_MODEL_EMULATE SRC WORK TARGET
set -u
cov=$1 rt=$2 emu=$3 src=$4 work=$5 target=$6
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
fail=0 device=0
bad() { echo "FAIL: $*"; fail=1; }
for v in "count" "spin --host-only" "scan --scan"; do
  set -- $v
  $py "$src/tests/runtime/control_model.py" "$work/$1.onnx" ${2:-} || exit 1
  "$cov" compile "$work/$1.onnx" --target "$target" -o "$work/$1.cvx" >/dev/null || { bad "compile $1"; continue; }
  "$cov" compile "$work/$1.onnx" --target "$target" -o "$work/$1.again.cvx" >/dev/null || bad "recompile $1"
  cmp -s "$work/$1.cvx" "$work/$1.again.cvx" || bad "$1: two compilations differ"
  COVENANT_TARGET_PATH=$src/targets "$emu" "$target" 1e-6 "$work/$1.onnx" || bad "$1: emulation is not ref"
done
art=$work/count.cvx
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

expect() {
  local rc=$1 pat=$2 a=$3
  shift 3
  out=$(timeout "${TMO:-20}" "$rt" "$a" "$@" 2>&1 </dev/null)
  got=$?
  if [ "$got" != "$rc" ] || ! grep -qF -- "$pat" <<<"$out"; then
    bad "$(basename "$a") $* (exit $got, want $rc, pattern '$pat')"
    echo "$out" | head -5
  fi
}
at() { grep -qF -- "error: $1" <<<"$out" || bad "not located at $1: $out"; }
edit() {
  $py - "$src/runtime" "$art" "$work/$1.cvx" "$2" <<'PY' || bad "edit $1"
import sys
sys.path.insert(0, sys.argv[1])
import artifact
m, d = artifact.read(sys.argv[2])
d = bytearray(d)
version = None
def s(op):
    return [i for i, x in enumerate(m["steps"]) if x["op"] == op][0]
exec(sys.argv[4])
artifact.write(sys.argv[3], m, d, version=version)
PY
}
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
at "steps[$loop].target: "
edit next_fwd 'm["steps"][s("next")]["target"] = s("next") + 1'
expect 1 "is not its" "$work/next_fwd.cvx" "${run[@]}"
edit loop_target 'm["steps"][s("loop")]["target"] = s("loop") + 1'
expect 1 "is not its next step" "$work/loop_target.cvx" "${run[@]}"
at "steps[$loop].target: "
edit loop_back 'm["steps"][s("loop")]["target"] = 0'
expect 1 "is not after it" "$work/loop_back.cvx" "${run[@]}"
at "steps[$loop]: "
edit cond_f32 'm["steps"][s("loop")]["cond"] = [i for i, b in enumerate(m["buffers"]) if b["dtype"] == "f32"][0]'
expect 1 "it must be one bool" "$work/cond_f32.cvx" "${run[@]}"
at "steps[$loop]: "
edit trip_f32 'm["steps"][s("loop")]["trip"] = [i for i, b in enumerate(m["buffers"]) if b["dtype"] == "f32"][0]'
expect 1 "trip" "$work/trip_f32.cvx" "${run[@]}"
at "steps[$loop]: "
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
[ $fail = 0 ] && echo "PASS: $target artifacts with host steps and control"
exit $fail
