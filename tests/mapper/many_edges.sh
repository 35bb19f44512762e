#!/bin/bash
# An ACG's edge count is bounded by the loader (4 x ACG_MAX_NODES), not by
# the cost model: the shipped NPUs with 600 edges, their real edges placed
# past index 512 and reversed, must map every layer checked here to the
# same schedule and cost (--explain output identical) as the shipped files.
# In the sanitizer build this also checks the cost model stays in bounds.
set -u
cov=$1 gen=$2 targets=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for t in npu-16x16 npu-32x32-os; do
  python3 "$gen" "$targets/$t.json" "$tmp/$t.json" 600 --reverse || { echo "FAIL: generator"; exit 1; }
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["edges"]))' "$tmp/$t.json")
  [ "$n" = 600 ] || { echo "FAIL: $t copy has $n edges, want 600"; fail=1; }
  for l in convnet_layer1 convnet_layer2 mobilenetv2_pw1x1; do
    want=$("$cov" map "$l" --target "$targets/$t.json" --explain 2>&1); rc1=$?
    got=$("$cov" map "$l" --target "$tmp/$t.json" --explain 2>&1); rc2=$?
    if [ "$rc1" != 0 ] || [ "$rc2" != 0 ] || [ "$want" != "$got" ]; then
      echo "FAIL: $l on $t: reordered edges change the mapping (rc $rc1/$rc2)"
      diff <(echo "$want") <(echo "$got") | head -10
      fail=1
    fi
  done
done
exit $fail
