#!/usr/bin/env bash
# lib_errors.sh COVENANT SRCDIR WITH_LLVM: a codelet library that does not
# load (a broken .cdl on $COVENANT_CODELET_PATH, or the source tree's
# codelets newer than the program, found through COV_SOURCEDIR) is a located
# error and exit status 1 for the commands that build suite layers. It was a
# SIGSEGV with no output: cov_layer_from_suite handed back an indeterminate
# layer pointer when map_layer_new failed, and the caller freed it.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'codelet broken(\n' > "$tmp/broken.cdl"
export COVENANT_CODELET_PATH=$tmp
pat="broken.cdl:2:1: error: .*expected an input name"
expect 1 "$pat" -- "$cov" verify convnet_layer2 -n 1
expect 1 "$pat" -- "$cov" verify all -t npu-32x32-os -n 1
expect 1 "$pat" -- "$cov" compile convnet_layer2 -t npu-16x16 -o "$tmp/out"
expect 1 "$pat" -- "$cov" map convnet_layer2 -t npu-16x16
exit $fail
