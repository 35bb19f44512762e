#!/bin/bash
# Co-scheduled models (README "Co-scheduled models") from the command line:
#   - squeezenet1_1_64 and shufflenet_v2_x1_0_64 on npu-4core: `covenant
#     run A B` exits 0 (each model's programs and outputs checked against
#     the reference there), the cores are divided among them, and the
#     concurrent run takes fewer cycles than the two one after the other on
#     all four cores (its throughput ratio above 1);
#   - squeezenet1_1_64 pipelined (--pipeline 8): 4 stages, checked against
#     the reference, fewer cycles for 8 inputs than 8 layer by layer;
#   - convnet pipelined for one input: the cycles of the model on one core;
#   - refusals: two models on a single-core NPU, on the reference target,
#     --input with two models, --pipeline with two models or one core.
set -u
cov=$1 models=$2 tmp=$3 src=$4
rm -rf "$tmp"
mkdir -p "$tmp"
fail=0
a=$models/squeezenet1_1_64.onnx b=$models/shufflenet_v2_x1_0_64.onnx
"$cov" run "$a" "$b" --target npu-4core > "$tmp/run.txt" 2>&1 || { echo "FAIL: covenant run A B"; tail -20 "$tmp/run.txt"; fail=1; }
[ "$(grep -c '^  output max rel err .*PASS' "$tmp/run.txt")" = 2 ] || { echo "FAIL: outputs against ref"; fail=1; }
[ "$(grep -c '^check of every NPU program .*PASS' "$tmp/run.txt")" = 2 ] || { echo "FAIL: programs' check"; fail=1; }
awk '
  /^  .*\.onnx / { n++; cores += $2 }
  /^concurrent: / { co = $2 + 0 }
  /^one after the other, each on all 4 cores: / { seq = $10 + 0 }
  END {
    printf "cores %d in %d models; concurrent %d cycles, one after the other %d (%.3fx)\n", cores, n, co, seq, seq / co
    if (n != 2 || cores != 4) { print "FAIL: the cores are not divided between the two models"; exit 1 }
    if (!(co > 0) || !(co < seq)) { print "FAIL: the concurrent run is no faster than one after the other"; exit 1 }
  }' "$tmp/run.txt" || { grep -A12 '^co-scheduled' "$tmp/run.txt"; fail=1; }
# Layer pipelining: squeezenet1_1_64's programs in 4 stages of one core for
# a stream of 8 inputs, checked against the reference, faster per input
# than layer by layer on all 4 cores.
"$cov" run "$a" --pipeline 8 --target npu-4core > "$tmp/pipe.txt" 2>&1 || { echo "FAIL: --pipeline 8"; tail -20 "$tmp/pipe.txt"; fail=1; }
[ "$(grep -c '^  output max rel err .*PASS' "$tmp/pipe.txt")" = 1 ] || { echo "FAIL: pipelined outputs against ref"; fail=1; }
awk '
  /^      [0-9]+ / { n++ }
  /^pipelined: / { pipe = $5 + 0 }
  /^layer by layer, / { one = $10 + 0 }
  END {
    printf "%d stages; 8 inputs pipelined in %d cycles, layer by layer %d per input (%.3fx)\n", n, pipe, one, 8 * one / pipe
    if (n != 4) { print "FAIL: not 4 stages"; exit 1 }
    if (!(pipe > 0) || !(pipe < 8 * one)) { print "FAIL: pipelining is no faster than layer by layer"; exit 1 }
  }' "$tmp/pipe.txt" || { grep -A12 '^pipelined on' "$tmp/pipe.txt"; fail=1; }
# One input through the stages runs them one after the other: the same
# cycles as the model on one core (the stages' sum), nothing overlapped.
"$cov" run "$src/examples/convnet.onnx" --pipeline 1 --target npu-4core > "$tmp/pipe1.txt" 2>&1 ||
  { echo "FAIL: --pipeline 1"; tail -5 "$tmp/pipe1.txt"; fail=1; }
awk '/cycles in all\)/ { for (i = 1; i <= NF; i++) if ($i == "cycles" && $(i + 1) == "in") all = $(i - 1) + 0 }
     /^pipelined: / { pipe = $5 + 0 }
     END { printf "convnet, one input pipelined: %d cycles, on one core %d\n", pipe, all
           if (!(pipe > 0) || pipe != all) { print "FAIL: one input pipelined is not the run on one core"; exit 1 } }' \
  "$tmp/pipe1.txt" || fail=1
refuse() { # expected message, then the arguments
  local want=$1
  shift
  if "$cov" run "$@" > "$tmp/refuse.txt" 2>&1; then echo "FAIL: accepted: $*"; fail=1; return; fi
  grep -q "$want" "$tmp/refuse.txt" || { echo "FAIL: $*: no '$want'"; cat "$tmp/refuse.txt"; fail=1; }
}
refuse "2 models on 1 core:" "$a" "$b" --target npu-16x16
refuse "run_models\|several models\|co-schedul" "$a" "$b" --target ref
refuse "take one model" "$a" "$b" --input x.npy
refuse "pipeline takes one model" "$a" "$b" --pipeline 2
refuse "several cores" "$a" --pipeline 2 --target npu-16x16
[ $fail = 0 ] && echo PASS
exit $fail
