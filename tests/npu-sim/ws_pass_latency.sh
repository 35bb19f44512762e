#!/bin/bash
# The cost model charges a weight-stationary array one gemm latency in all,
# not one per pass (mapper/map_cost.c): the simulator shows a gemm's results
# to the array after its occupancy, so a pass's latency hides behind the
# next pass's gemms. With a latency per pass the model over-predicted the
# 1x1 convolutions on npu-16x16 by about 3% (mobilenetv2_pw1x1 50,928
# predicted for 49,498 simulated, resnet50_res3_1x1 103,344 for 101,944)
# and put larger tiles ahead of smaller ones the simulator runs as fast.
# Here the prediction of each must be within 1% of the simulated cycles.
set -u
cov=$1 tmp=$2
mkdir -p "$tmp"
fail=0
for l in mobilenetv2_pw1x1 resnet50_res3_1x1; do
  pred=$("$cov" map "$l" --target npu-16x16 --explain 2>&1 | awk '$1 == "cost:" {print $2}')
  "$cov" compile "$l" -t npu-16x16 -o "$tmp/$l" >/dev/null 2>&1 || { echo "FAIL: compile $l"; fail=1; continue; }
  sim=$("$cov" sim "$tmp/$l/program.npu" -t npu-16x16 2>&1 | awk '$1 == "cycles" {print $2}')
  echo "$l on npu-16x16: predicted $pred, simulated $sim cycles"
  [ -n "$pred" ] && [ -n "$sim" ] && [ $((100 * (pred > sim ? pred - sim : sim - pred))) -le "$sim" ] ||
    { echo "FAIL: $l predicted more than 1% off the simulator"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
