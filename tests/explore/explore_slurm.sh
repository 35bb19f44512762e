#!/usr/bin/env bash
# The Slurm job-array script, run as Slurm would run each array task (no
# cluster here: the script is plain bash reading SLURM_* variables), then the
# merge step submit.sh queues; equal to one run.
. "$(dirname "$0")/common.sh"
bash -n "$src/explore/slurm/submit.sh" || fail "submit.sh syntax"
"$cov" explore "${study_args[@]}" -q -o "$work/single" > /dev/null || fail "single run"
for i in 0 1 2 3 4; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=5 SLURM_CPUS_PER_TASK=1 COVENANT=$cov \
    bash "$src/explore/slurm/explore.sbatch" "$work/slurm" "${study_args[@]}" > /dev/null || fail "task $i"
done
"$cov" explore merge "$work"/slurm/shard-* -o "$work/slurm" > /dev/null || fail "merge"
same "$work/single/results.csv" "$work/slurm/results.csv" "slurm results"
same "$work/single/summary.csv" "$work/slurm/summary.csv" "slurm summary"
bash "$src/explore/slurm/explore.sbatch" "$work/x" --suite > /dev/null 2>&1 && fail "outside an array must refuse"
finish
