#!/usr/bin/env bash
# bench/nvptx/scripts/run_models.sh PART [run_models.py options]: on the GPU machine
# (gcc, cmake, python3 with numpy, onnx, onnxruntime and torch; no LLVM),
# from the repository root:
#   1. builds the runtime alone (cmake -S runtime -B build-rt): covenant-run,
#      libc + the dlopen'ed CUDA driver only;
#   2. runs every artifact of PART (a folder compile_models.sh wrote here)
#      on random inputs against onnxruntime and times it next to torch eager
#      replayed from a CUDA graph (bench/nvptx/scripts/run_models.py says how).
# A model that fails is reported on its row; the run goes on to the next.
set -u
cd "$(dirname "$0")/../../.." || exit 1
[ $# -ge 1 ] || { echo "usage: bash bench/nvptx/scripts/run_models.sh PART [--cases N] [--b32-cases N] [--iters N] [--json F]"; exit 2; }
part=$1; shift
carried=$part  # ref/ (ref_cases.py) stays here when the artifacts are rebuilt in the stash
[ -f "$part/models.txt" ] || { echo "run_models: $part/models.txt not found (compile_models.sh writes it)"; exit 2; }
# artifacts carried in pieces (pack_artifacts.py) are rebuilt in a stash
# outside the repository, which keeps the chunks of earlier parts
if [ -f "$part/pieces.json" ]; then
  stash=${COVENANT_STASH:-/tmp/covenant-artifacts}
  python3 bench/nvptx/scripts/pack_artifacts.py unpack "$part" "$stash" || exit 1
  part=$stash/$(basename "$part")
fi
echo "== building the runtime without LLVM (build-rt)"
if ! { cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > build-rt.log 2>&1 &&
       cmake --build build-rt -j 8 >> build-rt.log 2>&1; }; then
  tail -30 build-rt.log
  echo "run_models: the runtime did not build (build-rt.log)"
  exit 1
fi
ldd build-rt/covenant-run | sed 's/^/   /'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/   GPU: /'
python3 -c "import torch, onnxruntime, onnx; print('   torch', torch.__version__, '| onnxruntime', onnxruntime.__version__, '| onnx', onnx.__version__)"
echo "== running $(wc -l < "$part/models.txt") artifact(s) from $part"
exec python3 bench/nvptx/scripts/run_models.py "$part" --runtime build-rt/covenant-run --refs "$carried" "$@"
