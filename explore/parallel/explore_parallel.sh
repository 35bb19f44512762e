#!/usr/bin/env bash
# explore_parallel.sh: a study split into shards run by GNU parallel, then
# merged. On one machine `covenant explore -j N` is simpler; this is the route
# for spreading shards over several hosts (parallel --sshlogin ...), and the
# pattern any other job runner follows: run every --shard I/N, then merge.
#
# usage: explore_parallel.sh [-c COVENANT] N_SHARDS OUT_DIR EXPLORE_ARGS...
# e.g.   explore_parallel.sh 4 study/ --base npu-16x16 --vary pe_array.dims=8x8,16x16 --suite
set -euo pipefail
covenant=covenant
if [ "${1:-}" = "-c" ]; then covenant=$2; shift 2; fi
[ $# -ge 3 ] || { echo "usage: $0 [-c COVENANT] N_SHARDS OUT_DIR EXPLORE_ARGS..." >&2; exit 2; }
n=$1 out=$2
shift 2
case $n in ''|*[!0-9]*|0) echo "$0: N_SHARDS must be a positive integer" >&2; exit 2 ;; esac
command -v parallel > /dev/null || { echo "$0: GNU parallel is not installed (Debian package 'parallel')" >&2; exit 1; }
mkdir -p "$out"
# -q quotes the command so arguments pass through unchanged; each shard runs
# one worker (-j 1) because parallel already runs one shard per core.
parallel --will-cite --halt now,fail=1 -j "$n" -q \
  "$covenant" explore "$@" --shard "{}/$n" -j 1 -q -o "$out/shard-{}" ::: $(seq 0 $((n - 1))) > /dev/null
shards=()
for ((i = 0; i < n; i++)); do shards+=("$out/shard-$i"); done
"$covenant" explore merge "${shards[@]}" -o "$out"
