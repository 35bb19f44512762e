#!/usr/bin/env bash
# A model compiled for a GPU target (covenant compile MODEL --target T -o ART)
# is one artifact, byte-identical when compiled again; covenant-run reads it
# (--info: its launches) and runs it where the target's driver and GPU exist,
# its outputs within 1e-2 of --target ref on the same input, as `covenant run
# MODEL --target T` (the same artifact, in memory) must be. Without the
# driver both say so (covenant-run exit 4) and the test reports itself
# skipped (77): never a fake run.
set -u
cov=$1 rt=$2 target=$3 model=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
py=/usr/bin/python3
"$cov" compile "$model" --target "$target" -o "$work/a.cvx" > "$work/compile.log" 2>&1 || { cat "$work/compile.log"; exit 1; }
"$cov" compile "$model" --target "$target" -o "$work/b.cvx" > /dev/null 2>&1 || bad "recompile"
cmp -s "$work/a.cvx" "$work/b.cvx" || bad "two compilations differ"
info=$("$rt" "$work/a.cvx" --info 2>&1) || bad "--info: $info"
grep -q "target $target" <<<"$info" && grep -q "launch covenant_" <<<"$info" || bad "--info: $info"
# the launch count and activation bytes: the same in --info and covenant compile's line
launches=$(grep -c "^step [0-9]*: launch " <<<"$info")
grep -q "per inference: $launches kernel launches" <<<"$info" || bad "--info: launches per inference: $info"
moved=$(sed -n 's/^per inference: .* \([0-9]*\) bytes of activations moved.*/\1/p' <<<"$info")
grep -q "$launches kernel launches .* $moved bytes of activations moved between kernels per inference" \
  "$work/compile.log" || bad "covenant compile's line disagrees with --info ($launches, $moved): $(cat "$work/compile.log")"
$py - "$(dirname "$0")/../../runtime" "$work/a.cvx" "$model" "$work/x.npy" <<'PY' || exit 1
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import artifact
m, _ = artifact.read(sys.argv[2])
assert m["missing"] == [], m["missing"]
assert all(s["op"] in ("launch", "fill") for s in m["steps"]), "GPU artifacts launch kernels"
shape = m["inputs"][0]["shape"]
np.save(sys.argv[4], np.random.default_rng(3).uniform(-1, 1, shape).astype(np.float32))
PY
out=$("$rt" "$work/a.cvx" --input "$work/x.npy" -o "$work/y.npy" 2>&1); rc=$?
if [ $rc = 4 ]; then
  grep -q "no NVIDIA driver\|HIP" <<<"$out" || bad "exit 4 without naming the driver: $out"
  run=$("$cov" run "$model" --target "$target" 2>&1) && bad "covenant run without a device succeeded: $run"
  grep -q "cannot run .*on $target" <<<"$run" || bad "covenant run without a device: $run"
  [ $fail = 0 ] && { echo "skipped: no driver for $target here ($(head -1 <<<"$out"))"; exit 77; }
  exit $fail
fi
[ $rc = 0 ] || bad "covenant-run: exit $rc: $out"
"$cov" run "$model" --target ref --input "$work/x.npy" --expect "$work/y.npy" > "$work/ref.log" 2>&1 ||
  bad "covenant-run's output is not within 1e-2 of ref: $(tail -3 "$work/ref.log")"
"$cov" run "$model" --target "$target" > "$work/run.log" 2>&1 || bad "covenant run --target $target: $(tail -3 "$work/run.log")"
grep -q "PASS" "$work/run.log" || bad "covenant run: no PASS"
[ $fail = 0 ] && echo "ok: $model on $target through the artifact"
exit $fail
