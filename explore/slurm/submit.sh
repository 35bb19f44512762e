#!/usr/bin/env bash
# submit.sh: queue a study as a Slurm job array of N shards plus a merge job
# that runs when every shard has succeeded.
# usage: submit.sh N_SHARDS OUT_DIR EXPLORE_ARGS...
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 N_SHARDS OUT_DIR EXPLORE_ARGS..." >&2; exit 2; }
n=$1 out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
jid=$(sbatch --parsable --array=0-$((n - 1)) "$here/explore.sbatch" "$out" "$@")
shards=$(for ((i = 0; i < n; i++)); do printf '%q ' "$out/shard-$i"; done)
sbatch --dependency=afterok:"$jid" --job-name=covenant-explore-merge \
  --wrap "${COVENANT:-covenant} explore merge $shards -o $(printf '%q' "$out")"
