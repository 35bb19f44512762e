#!/usr/bin/env bash
# one_writer.sh COVENANT MODEL TARGET WORKDIR: a GPU model has one artifact
# writer: `covenant compile MODEL -o A` and the model.covart that `covenant
# gpu compile MODEL -o DIR` writes beside the modules are the same bytes
# (same model name, buffers, I/O dtypes, modules), and the same again when
# compiled twice.
set -u
cov=$1 model=$2 target=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
"$cov" compile "$model" -t "$target" -o "$work/a.cvx" > /dev/null || { echo "FAIL: compile"; exit 1; }
"$cov" compile "$model" -t "$target" -o "$work/b.cvx" > /dev/null || { echo "FAIL: compile again"; exit 1; }
"$cov" gpu compile "$model" -t "$target" -o "$work/dir" > /dev/null 2>&1 || { echo "FAIL: gpu compile"; exit 1; }
cmp "$work/a.cvx" "$work/b.cvx" || { echo "FAIL: two compiles differ"; exit 1; }
if ! cmp "$work/a.cvx" "$work/dir/model.covart"; then
  echo "FAIL: covenant compile and covenant gpu compile write different artifacts of $model"; exit 1
fi
echo "ok: one artifact writer for $model on $target"
