#!/usr/bin/env bash
# bench/nvptx/scripts/tune_record.sh COVENANT OUT RESULTS: here, after
# tune_on_h100.sh: step 3 of measured tuning for both parts (RESULTS/
# tuning_suite.json, tuning_model.json and their reports record_*.txt) and
# the model compiled with its tuning file (OUT/tuned.covart; the notes name
# the tuned kernels: RESULTS/tuned_notes.txt). The next device call
# (tune_on_h100.sh with OUT holding only the two .covart files) times the
# tuned model against the untuned one in the same run.
set -eu
cov=$1 out=$2 res=$3
root=$(cd "$(dirname "$0")/../../.." && pwd)
for part in suite model; do
  "$cov" tune --record "$res/times_$part.json" -o "$res/tuning_$part.json" | tee "$res/record_$part.txt"
done
model=$(cat "$out/model_name")
mkdir -p "$out/onnx"
/usr/bin/python3 "$root/tests/models/materialize.py" "$out/onnx" "$model" > /dev/null
"$cov" compile "$out/onnx/$model.onnx" --target nvptx-sm90 --tuning "$res/tuning_model.json" -o "$out/tuned.covart" \
  2> "$res/tuned_notes.txt"
rm -rf "$out/onnx"
tail -1 "$res/tuned_notes.txt"
