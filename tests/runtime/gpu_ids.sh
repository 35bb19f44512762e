#!/usr/bin/env bash
# A GPU artifact of a model with i64 token ids records the values each id
# input may take (the rows of the table it indexes), as an NPU artifact
# does, so covenant-run's random inputs are valid ids; and --cases takes
# every case's inputs from its folder, inventing none (without a driver it
# reaches the device check, exit 4, instead of refusing the ids).
set -u
cov=$1 rt=$2 target=$3 model=$4 work=$5
rm -rf "$work" && mkdir -p "$work/cases/0"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$cov" compile "$model" --target "$target" -o "$work/a.cvx" > "$work/compile.log" 2>&1 || { cat "$work/compile.log"; exit 1; }
info=$("$rt" "$work/a.cvx" --info 2>&1) || bad "--info: $info"
grep -q "^input 0 '.*': i64\[1, 32\] (buffer i64); values in \[0, 511\]" <<<"$info" || bad "no id range in --info: $info"
/usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.arange(32, dtype=np.int64).reshape(1, 32))" \
  "$work/cases/0/in0.npy" || exit 1
out=$("$rt" "$work/a.cvx" --cases "$work/cases" 2>&1); rc=$?
case $rc in
  0) grep -q "ran 1 case" <<<"$out" && [ -f "$work/cases/0/out0.npy" ] || bad "--cases: $out" ;;
  4) grep -q "no NVIDIA driver\|HIP" <<<"$out" || bad "--cases exit 4 without naming the driver: $out" ;;
  *) bad "--cases: exit $rc: $out" ;;
esac
[ $fail = 0 ] && echo "ok: $model's ids on $target"
exit $fail
