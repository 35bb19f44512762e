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
# runtime) matches ref, and one whose buffer holds no whole rows is refused.
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
[ $fail = 0 ] && echo "all checks passed"
exit $fail
