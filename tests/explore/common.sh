# tests/explore/common.sh: sourced by the explore_*.sh tests.
# $1 covenant binary, $2 source tree, $3 scratch folder (recreated).
set -u
cov=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# A 3x3x3 study over a few suite layers, small enough to run in a second
# with the roofline evaluator (the mechanics tests need speed, not accuracy;
# the mapper evaluator has its own checks in explore_cli.sh).
study_args=(--base "$src/targets/npu-16x16.json" --eval roofline
            --vary pe_array.dims=8x8,16x16,32x32
            --vary ibuf.capacity=32KiB,64KiB,128KiB
            --vary dram.bandwidth_bytes_per_cycle=32,64,128
            --suite resnet50_conv1,resnet50_res4_3x3,mobilenetv2_dw3x3,bert_base_qkv,bert_base_attn_qk
            --suite-file "$src/bench/suite/layers.json")
same() { # same FILE_A FILE_B WHAT
  if ! cmp -s "$1" "$2"; then fail "$3: $1 and $2 differ"; diff "$1" "$2" | head -5 >&2; fi
}
finish() {
  if [ "$fails" -ne 0 ]; then echo "$fails failure(s)" >&2; exit 1; fi
  echo "ok"
}
