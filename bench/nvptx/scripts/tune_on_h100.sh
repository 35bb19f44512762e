#!/usr/bin/env bash
# bench/nvptx/scripts/tune_on_h100.sh OUT RESULTS: on the GPU machine (gcc, cmake, the
# NVIDIA driver; no LLVM, no torch needed), from the repository root: builds
# covenant-run alone (runtime/CMakeLists.txt) and
#   - when OUT/suite and OUT/model exist (tune_prepare.sh): step 2 of measured
#     tuning, covenant-run --tune on both (RESULTS/times_suite.json,
#     RESULTS/times_model.json);
#   - when OUT/untuned.covart exists: the model's latency, and with
#     OUT/tuned.covart (tune_record.sh) the tuned model's, alternating
#     untuned/tuned 5 times (RESULTS/models.txt: covenant-run --iters 200).
set -eu
out=$1 res=$2
mkdir -p "$res"
cmake -S runtime -B "$res/build-rt" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$res/build-rt" -j 8 > /dev/null
run=$res/build-rt/covenant-run
for part in suite model; do
  if [ -d "$out/$part" ]; then
    "$run" "$out/$part" --tune --iters 20 --reps 5 -o "$res/times_$part.json" > "$res/tune_$part.log" 2>&1 || { tail -5 "$res/tune_$part.log"; exit 1; }
    tail -1 "$res/tune_$part.log"
  fi
done
if [ -f "$out/untuned.covart" ]; then
  : > "$res/models.txt"
  for i in 1 2 3 4 5; do
    for a in untuned tuned; do
      [ -f "$out/$a.covart" ] || continue
      t=$("$run" "$out/$a.covart" --iters 200 --warmup 20 | grep '^time:')
      echo "$a $i $t" | tee -a "$res/models.txt"
    done
  done
fi
