#!/bin/bash
# Artifacts with host steps and control (format version 5, runtime/README.md
# "Host steps and control"): a while loop whose trip count is a run-time
# value (control_model.py) compiled for npu-16x16 runs as --target ref does,
# for several counts, and byte-identical when compiled again; then the
# artifact hand-edited with every checksum valid again (artifact.py write),
# each edit refused at once, located at its JSON path: control steps in a
# version-4 file, a next that is not its loop's, a loop whose target is no
# next, a forward step jumping back, a condition that is no bool, a copy
# between buffers of two sizes, a host step calling a codelet the artifact
# does not carry or an operand that does not fit its buffer, host steps
# without codelets, a codelet text that does not parse; a loop that never
# ends stops at the iteration limit with an error; a loop-carried value that
# grows is not compiled; a for loop's scan output (rows stacked by the
# runtime) matches ref, and one whose buffer holds no whole rows is refused;
# a selection whose size depends on the data (NonZero) runs as a part step
# for several inputs as ref does, a run over the user's cap (--max-dynamic)
# is refused, and edited capacities, dims set at run
# time on buffers other steps name, a part step writing an input, without
# the model or naming a value it does not have, are refused; a capacity over
# the limit is refused when compiling.
set -u
cov=$1 rt=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
art=$work/count.cvx
TMO=20
. "$src/tests/runtime/artifact_edit.sh"
$py "$src/tests/runtime/control_model.py" "$work/count.onnx" || exit 1
$py "$src/tests/runtime/control_model.py" "$work/spin.onnx" --host-only || exit 1
"$cov" compile "$work/count.onnx" --target npu-16x16 -o "$art" >/dev/null || { bad "compile"; exit 1; }
"$cov" compile "$work/count.onnx" --target npu-16x16 -o "$work/again.cvx" >/dev/null || bad "recompile"
cmp -s "$art" "$work/again.cvx" || bad "two compilations differ"
$py -c "import numpy as np; np.save('$work/x.npy', np.array([0.5, -1.5, 1.0, 2.0], np.float32))"
for n in 0 1 5 40; do
  $py -c "import numpy as np; np.save('$work/n$n.npy', np.array($n, np.int64))"
  mkdir -p "$work/out$n"
  out=$("$rt" "$art" --input "$work/n$n.npy" --input "$work/x.npy" --output-dir "$work/out$n" 2>&1) ||
    bad "n=$n: covenant-run: $out"
  "$cov" run "$work/count.onnx" --target ref --input "$work/n$n.npy" --input "$work/x.npy" \
    --expect "$work/out$n/0.npy" --expect "$work/out$n/1.npy" > "$work/ref$n.log" 2>&1 ||
    bad "n=$n: not what --target ref gives: $(tail -3 "$work/ref$n.log")"
done

run=(--input "$work/n5.npy" --input "$work/x.npy")
edit v4 'version = 4; m["version"] = 4'
expect 1 "format version 5; the artifact says 4" "$work/v4.cvx" "${run[@]}"
edit next_target 'm["steps"][s("next")]["target"] = 0'
expect 1 "is not its next step" "$work/next_target.cvx" "${run[@]}"  # the loop's check sees it first
at "steps[2].target"
edit next_fwd 'm["steps"][s("next")]["target"] = s("next") + 1'
expect 1 "is not its" "$work/next_fwd.cvx" "${run[@]}"
edit loop_target 'm["steps"][s("loop")]["target"] = s("loop") + 1'
expect 1 "is not its next step" "$work/loop_target.cvx" "${run[@]}"
edit loop_back 'm["steps"][s("loop")]["target"] = 0'
expect 1 "is not after it" "$work/loop_back.cvx" "${run[@]}"
edit cond_f32 'm["steps"][s("loop")]["cond"] = [i for i, b in enumerate(m["buffers"]) if b["dtype"] == "f32"][0]'
expect 1 "it must be one bool" "$work/cond_f32.cvx" "${run[@]}"
edit copy_size 'm["steps"][s("copy")]["to"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "intermediate" and b["bytes"] != m["buffers"][m["steps"][s("copy")]["from"]]["bytes"]][0]'
expect 1 "a copy from" "$work/copy_size.cvx" "${run[@]}"
edit copy_input 'm["steps"][s("copy")]["to"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "input"][0]'
expect 1 "writes input buffer" "$work/copy_input.cvx" "${run[@]}"
edit codelet 'm["steps"][s("host")]["codelet"] = "no_such_codelet"'
expect 1 "codelet 'no_such_codelet' is not in the artifact's codelets" "$work/codelet.cvx" "${run[@]}"
edit operand 'm["steps"][s("host")]["operands"][0]["shape"] = [1, 1, 1, 2]'
expect 1 "does not fit buffer" "$work/operand.cvx" "${run[@]}"
edit no_codelets 'del m["codelets"]'
expect 1 "host steps call codelets; the artifact has no 'codelets'" "$work/no_codelets.cvx" "${run[@]}"
edit bad_text 'b = m["blobs"][m["codelets"]]; d[b["offset"]:b["offset"] + 8] = b"codelet("'
expect 1 "codelets.cdl" "$work/bad_text.cvx" "${run[@]}"
edit read_first 'm["steps"][s("host")], m["steps"][0] = m["steps"][0], m["steps"][s("host")]'
expect 1 "before any step writes it" "$work/read_first.cvx" "${run[@]}"
# a loop whose condition stays true: the iteration limit, with an error
"$cov" compile "$work/spin.onnx" --target npu-16x16 -o "$work/spin.cvx" >/dev/null || bad "compile spin"
$py -c "import numpy as np; np.save('$work/nbig.npy', np.array(10**12, np.int64))"
# (13 s under ASan: 200,000 codelet calls in the reference interpreter)
TMO=300 expect 1 "ran 100000 iterations and would run another: the limit is 100000" "$work/spin.cvx" \
  --input "$work/nbig.npy" --input "$work/x.npy"
# a loop-carried value that grows (Concat) has no fixed size: not compiled,
# saying why, even where the probe run went round once only
$py "$src/tests/runtime/control_model.py" "$work/grow.onnx" --grow || exit 1
out=$("$cov" compile "$work/grow.onnx" --target npu-16x16 -o "$work/grow.cvx" 2>&1)
[ $? = 1 ] && grep -qF "dim 0 of output 'y' is symbolic: its size depends on the data" <<<"$out" ||
  bad "grow: compile must refuse the growing output: $out"
# a for loop's scan output (a row per iteration, a constant trip count)
$py "$src/tests/runtime/control_model.py" "$work/scan.onnx" --scan || exit 1
"$cov" compile "$work/scan.onnx" --target npu-16x16 -o "$work/scan.cvx" >/dev/null || bad "compile scan"
mkdir -p "$work/scan_out"
out=$("$rt" "$work/scan.cvx" --input "$work/n5.npy" --input "$work/x.npy" --output-dir "$work/scan_out" 2>&1) ||
  bad "scan: covenant-run: $out"
"$cov" run "$work/scan.onnx" --target ref --input "$work/n5.npy" --input "$work/x.npy" \
  --expect "$work/scan_out/0.npy" --expect "$work/scan_out/1.npy" > "$work/scan_ref.log" 2>&1 ||
  bad "scan: not what --target ref gives: $(tail -3 "$work/scan_ref.log")"
art=$work/scan.cvx
edit scan_rows 'x = m["steps"][s("next")]; x["scan"][0][1] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "intermediate" and b["bytes"] % m["buffers"][x["scan"][0][0]]["bytes"]][0]'
expect 1 "cannot stack into" "$work/scan_rows.cvx" "${run[@]}"
# sizes that depend on the data (runtime/README.md, "Data-dependent sizes"):
# y = x[x > 0] runs as a part step, y and the indices at their capacities
# (4 elements), each run giving its own size, as --target ref does
$py "$src/tests/runtime/control_model.py" "$work/select.onnx" --select || exit 1
"$cov" compile "$work/select.onnx" --target npu-16x16 -o "$work/select.cvx" >/dev/null || bad "compile select"
"$cov" compile "$work/select.onnx" --target npu-16x16 -o "$work/select2.cvx" >/dev/null || bad "recompile select"
cmp -s "$work/select.cvx" "$work/select2.cvx" || bad "select: two compilations differ"
k=0
for v in "[0.5, -1.5, 1.0, 2.0]" "[-1.0, -2.0, -3.0, -4.0]" "[1.0, 2.0, 3.0, 4.0]"; do
  k=$((k + 1))
  $py -c "import numpy as np; np.save('$work/xs$k.npy', np.array($v, np.float32))"
  mkdir -p "$work/sel$k"
  out=$("$rt" "$work/select.cvx" --input "$work/n5.npy" --input "$work/xs$k.npy" --output-dir "$work/sel$k" 2>&1) ||
    bad "select $v: covenant-run: $out"
  "$cov" run "$work/select.onnx" --target ref --input "$work/n5.npy" --input "$work/xs$k.npy" \
    --expect "$work/sel$k/0.npy" --expect "$work/sel$k/1.npy" > "$work/sel_ref$k.log" 2>&1 ||
    bad "select $v: not what --target ref gives: $(tail -3 "$work/sel_ref$k.log")"
done
art=$work/select.cvx
sel=(--input "$work/n5.npy" --input "$work/xs1.npy")
part=$($py -c "import sys; sys.path.insert(0, '$src/runtime'); import artifact; m, _ = artifact.read('$art'); print([i for i, x in enumerate(m['steps']) if x['op'] == 'part'][0])")
# the user's cap below the capacity: a run that makes more is refused, naming the value
expect 1 "value 'y' holds 3 elements in this run, more than --max-dynamic 2" "$art" "${sel[@]}" --max-dynamic 2
at "steps[$part].out[0]"
"$rt" "$art" "${sel[@]}" --max-dynamic 3 --output-dir "$work/sel1" >/dev/null 2>&1 ||
  bad "--max-dynamic 3 refuses a run making 3"
# a capacity edited below what a run makes: refused when the run makes it, no write past the buffer
edit cap_small 'b = [x for x in m["buffers"] if x["name"] == "y"][0]; b["shape"] = [2]; b["bytes"] = 8; [o for o in m["outputs"] if o["name"] == "y"][0]["shape"] = [2]'
expect 1 "larger than its capacity" "$work/cap_small.cvx" "${sel[@]}"
at "steps[$part].out[0]"
edit cap_dims 'b = [x for x in m["buffers"] if x["name"] == "y"][0]; b["dynamic"] = [1]'
expect 1 "'dynamic' lists dims of the shape" "$work/cap_dims.cvx" "${sel[@]}"
edit cap_host 'b = [x for x in m["buffers"] if x["name"] == "pos"][0]; b["dynamic"] = [0]'
expect 1 "whose size is set at run time; only part steps do" "$work/cap_host.cvx" "${sel[@]}"
edit cap_input 'b = [x for x in m["buffers"] if x["kind"] == "input" and x["shape"]][0]; b["dynamic"] = [0]'
expect 1 "only outputs and intermediates have dims set at run time" "$work/cap_input.cvx" "${sel[@]}"
edit part_input 'm["steps"][s("part")]["out"][0]["buffer"] = [i for i, b in enumerate(m["buffers"]) if b["kind"] == "input"][0]'
expect 1 "writes input buffer" "$work/part_input.cvx" "${sel[@]}"
at "steps[$part].out[0]"
edit no_onnx 'del m["onnx"]'
expect 1 "part steps run the model; the artifact has no 'onnx'" "$work/no_onnx.cvx" "${sel[@]}"
edit part_value 'm["steps"][s("part")]["out"][0]["value"] = "no_such_value"'
expect 1 "value 'no_such_value' is not in the model" "$work/part_value.cvx" "${sel[@]}"
# a capacity over the limit (2^24 elements) is refused when compiling, naming the value
$py "$src/tests/runtime/control_model.py" "$work/big.onnx" --select-big || exit 1
out=$("$cov" compile "$work/big.onnx" --target npu-16x16 -o "$work/big.cvx" 2>&1)
[ $? = 1 ] && grep -qF "value 'wide' may hold f32[5000000, 4]" <<<"$out" && grep -qF "more than 16777216 elements" <<<"$out" ||
  bad "big: compile must refuse the capacity: $out"
[ $fail = 0 ] && echo "all checks passed"
exit $fail
