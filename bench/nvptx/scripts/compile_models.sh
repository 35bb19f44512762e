#!/usr/bin/env bash
# bench/nvptx/scripts/compile_models.sh [--covenant BIN] [--target T] [--part-mb N] [--skip NAME:BATCH]... [--reuse]
#                               OUTDIR [MODEL...]
#
# Here (with LLVM): compiles the models for the H100 run into artifacts
# (covenant compile MODEL --target nvptx-sm90 -o ...), at batch 1 and 32,
# and packs them into parts of at most --part-mb MiB each (default 36, at
# most 38: the device tool carries 64 MiB per call, the repository's tracked
# files, about 26 MiB, included), OUTDIR/part1, part2, ... (pack_artifacts.py:
# batch-32 artifacts carried without the weights their batch-1 artifact
# holds, resnet50's 50 MiB in chunks over two parts); with OUTDIR in the
# repository under an ignored name (build-h100), each part is carried to the
# H100, in order and on the same machine, and run there from the repository
# root by
#     bash bench/nvptx/scripts/run_models.sh OUTDIR/partN
# Models: examples/convnet.onnx ("convnet"), the TransformerEncoderLayer
# with external data tests/frontend/models/encoder.onnx ("encoder"), and the real exports of
# tests/models (materialized here only to compile; the H100 script
# materializes them again from the tracked skeletons for onnxruntime and
# torch, so only artifacts travel). Batch 32: the NAME_b32 export where
# tests/models (or, for the encoder, tests/frontend/models) has one, else
# the batch-1 model with its batch dimension set to 32 (make_batch.py). A model that fails to compile is listed in
# OUTDIR/failed.txt with its error and left out; the rest go on.
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
cov=$root/build/covenant target=nvptx-sm90 part_mb=36 skip=" " reuse=0
while [ $# -gt 0 ]; do
  case $1 in
    --covenant) cov=$2; shift 2;;
    --target) target=$2; shift 2;;
    --part-mb) part_mb=$2; shift 2;;
    --skip) skip="$skip$2 "; shift 2;;  # e.g. resnet50:32 (fewer device calls)
    --reuse) reuse=1; shift;;           # keep artifacts an earlier run of the same tree wrote
    -h|--help) sed -n 2,22p "$0"; exit 0;;
    *) break;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--covenant BIN] [--target T] [--part-mb N] OUTDIR [MODEL...]"; exit 2; }
out=$1; shift
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(convnet encoder small_cnn squeezenet1_1 mobilenet_v2 shufflenet_v2_x1_0 resnet18 resnet50
                                   efficientnet_b0 yolo_tiny vit_tiny gpt2_tiny int8_qdq_cnn int8_qop_cnn)
py=/usr/bin/python3
mkdir -p "$out/onnx" "$out/all"
: > "$out/failed.txt"
: > "$out/all/models.txt"
for m in "${models[@]}"; do
  if [ $reuse = 1 ] && [ -f "$out/onnx/$m.onnx" ]; then
    :
  elif [ "$m" = convnet ]; then
    cp "$root/examples/convnet.onnx" "$out/onnx/convnet.onnx"
  elif [ "$m" = encoder ]; then
    cp "$root/tests/frontend/models/encoder.onnx" "$root/tests/frontend/models/encoder.onnx.data" "$out/onnx/"
  else
    $py "$root/tests/models/materialize.py" "$out/onnx" "$m" > "$out/onnx/$m.materialize.log" 2>&1 ||
      { echo "$m: materialize failed: $(tail -1 "$out/onnx/$m.materialize.log")" | tee -a "$out/failed.txt"; continue; }
  fi
  b32=$out/onnx/${m}_b32.onnx
  [ $reuse = 1 ] && [ -f "$b32" ] || if [ -f "$root/tests/models/${m}_b32.skel.onnx" ]; then
    $py "$root/tests/models/materialize.py" "$out/onnx" "${m}_b32" > /dev/null 2>&1 || rm -f "$b32"
  elif [ "$m" = encoder ] && [ -f "$root/tests/frontend/models/encoder_b32.onnx" ]; then
    cp "$root/tests/frontend/models/encoder_b32.onnx" "$root/tests/frontend/models/encoder_b32.onnx.data" "$out/onnx/"
  fi
  [ -f "$b32" ] || $py "$root/bench/nvptx/scripts/make_batch.py" "$out/onnx/$m.onnx" 32 "$b32" > /dev/null 2>&1 || rm -f "$b32"
  for b in 1 32; do
    src=$out/onnx/$m.onnx
    [ $b = 32 ] && src=$b32
    case $skip in *" $m:$b "*) echo "$m batch $b: skipped (--skip)" | tee -a "$out/failed.txt"; continue;; esac
    if [ ! -f "$src" ]; then
      echo "$m batch $b: no batch-$b model" | tee -a "$out/failed.txt"
      continue
    fi
    art=$out/all/$m.b$b.cvx
    if [ $reuse = 1 ] && [ -s "$art" ]; then
      echo "$m $b $(basename "$art")" >> "$out/all/models.txt"
      echo "reused $m batch $b: $(du -h "$art" | cut -f1)"
    elif "$cov" compile "$src" --target "$target" -o "$art" > "$out/all/$m.b$b.log" 2>&1; then
      echo "$m $b $(basename "$art")" >> "$out/all/models.txt"
      echo "compiled $m batch $b: $(du -h "$art" | cut -f1)"
    else
      rm -f "$art"
      echo "$m batch $b: compile failed: $(grep -m1 -i error "$out/all/$m.b$b.log" || tail -1 "$out/all/$m.b$b.log")" |
        tee -a "$out/failed.txt"
    fi
  done
done
# parts of at most part_mb MiB, carried one per device call: batch-32
# artifacts thin (their weights come from the batch-1 artifact there), files
# larger than a part in chunks over successive parts (pack_artifacts.py)
$py "$root/bench/nvptx/scripts/pack_artifacts.py" pack "$out" "$part_mb" || exit 1
# the reference interpreter's outputs for the int8 artifacts, on the inputs
# run_models.py draws there (100 per model at each batch): they must match bit for bit
$py "$root/bench/nvptx/scripts/ref_cases.py" "$out" --covenant "$cov" || exit 1
if [ -s "$out/failed.txt" ]; then
  echo "not compiled (see $out/failed.txt and $out/all/*.log):"
  cat "$out/failed.txt"
fi
