#!/usr/bin/env bash
# cli_usage.sh COVENANT SRCDIR WORKDIR: `covenant codelet` behaves like a
# Unix tool: help exits 0, usage errors exit 2 with a hint, rejected input
# exits 1 with located messages on stderr, results go to stdout or -o.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2 work=$3
mkdir -p "$work"
cd "$src" || exit 2
expect 2 "usage: covenant codelet check" -- "$cov" codelet
expect 0 "usage: covenant codelet check" -- "$cov" codelet --help
expect 0 "usage: covenant codelet check" -- "$cov" codelet run --help
expect 0 "codelet  *check, print, list and run" -- "$cov" --help
expect 2 "unknown subcommand 'lint'" -- "$cov" codelet lint
expect 2 "check needs at least one FILE or DIR" -- "$cov" codelet check
expect 2 "print takes exactly one FILE or NAME" -- "$cov" codelet print
expect 2 "unknown option" -- "$cov" codelet print --bogus codelets/conv.cdl
expect 2 "run takes exactly one NAME or FILE" -- "$cov" codelet run
expect 2 "missing --input or --shape for 'w'" -- "$cov" codelet run conv2d -s x=1x1x3x3
expect 2 "has no input named 'z'" -- "$cov" codelet run relu -s z=4
expect 2 "expected --attr NAME=VALUE" -- "$cov" codelet run relu -s x=4 -a stride
expect 2 "bad --shape" -- "$cov" codelet run relu -s x=4xq
expect 2 "choose one with -n NAME" -- "$cov" codelet run codelets/pool.cdl -s x=1x1x2x2
expect 1 "no shipped codelet named 'conv2e' (did you mean 'conv2d'?)" -- "$cov" codelet run conv2e -s x=1
expect 1 "no such file\|cannot open" -- "$cov" codelet check does/not/exist.cdl
expect 1 "no such file\|cannot open" -- "$cov" codelet run relu -i x=does/not/exist.npy
expect 1 "cannot open for writing" -- "$cov" codelet print conv2d -o /nonexistent/dir/x.cdl
expect 1 "conv.cdl:[0-9]*:[0-9]*: error: conv2d: input channels C must equal" -- \
  "$cov" codelet run conv2d -s x=1x4x5x5 -s w=2x3x3x3
expect 0 "codelets/conv.cdl: ok (2 codelets)" -- "$cov" codelet check codelets/conv.cdl
expect 0 "codelets: ok" -- "$cov" codelet check codelets
expect 0 "skipped 1 argument that is not" -- "$cov" codelet check codelets/conv.cdl codelets/README.md
expect 0 "conv2d<T>(x: T\[N, C, H, W\], w: T\[K, CG, R, S\]) -> (y: T\[N, K, P, Q\])" -- \
  "$cov" codelet list
expect 0 "^codelet relu<T>(x: T\[L\]) -> (y: T\[L\]) {" -- "$cov" codelet print relu
expect 0 "y: f32\[1, 64, 112, 112\]" -- "$cov" codelet run conv2d --dry-run -s x=1x3x224x224 \
  -s w=64x3x7x7 -a stride_h=2 -a stride_w=2 -a pad_top=3 -a pad_left=3 -a pad_bottom=3 -a pad_right=3
# text output: relu of generated data is never negative
expect 0 "^y: f16\[6\]" -- "$cov" codelet run relu -s x=6:f16
expect 0 "^y: f32\[2, 2\]" -- "$cov" codelet run codelets/gemm.cdl -n matmul -s a=2x3 -s b=3x2 --seed 7
# several outputs go to a directory, one output to a file
expect 0 "" -- "$cov" codelet run relu -s x=8 -o "$work/relu.npy"
[ -f "$work/relu.npy" ] || { echo "FAIL: -o FILE wrote nothing"; fail=1; }
printf 'codelet two<T>(x: T[N]) -> (a: T[N], b: T[N]) {\n  for i in N {\n    a[i] = x[i]\n    b[i] = neg(x[i])\n  }\n}\n' > "$work/two.cdl"
expect 0 "" -- "$cov" codelet run "$work/two.cdl" -s x=3 -o "$work/outs"
[ -f "$work/outs/a.npy" ] && [ -f "$work/outs/b.npy" ] || { echo "FAIL: -o DIR"; fail=1; }
# generated inputs are deterministic for a seed
a=$("$cov" codelet run relu -s x=16 --seed 3) b=$("$cov" codelet run relu -s x=16 --seed 3)
[ "$a" = "$b" ] || { echo "FAIL: --seed is not deterministic"; fail=1; }
exit $fail
