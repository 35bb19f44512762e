#!/bin/bash
# The acceptance check across accelerator families: on each TARGET given,
# `covenant run` of the example ConvNet and of the real exports resnet18_64
# (a CNN), vit_tiny (a transformer) and int8_qdq_cnn (a quantized CNN), on
# their stored inputs against their stored outputs (onnxruntime's; the
# ConvNet's from examples/), must
#   - exit 0,
#   - pass the backend's own check (every program against the reference on
#     operands rounded to the schedule's dtypes) and the output check (within
#     the tolerance, or the datapath's rounding allowance: cli/cmd_run.c),
#   - run at least 90% of the model's MACs on the accelerator (the report's
#     "MACs on the NPU" line).
# A target written NAME:int is integer-only: it must run int8_qdq_cnn as
# above and the float models with every float contraction refused for the
# one reason that it has no float mac (the report names it), their outputs
# still checked.
#   accel_acceptance.sh COVENANT SRC MODELS_DIR TARGET[:int]...
set -u
cov=$1 src=$2 models=$3
shift 3
fail=0
ms="$src/tests/models"
for spec in "$@"; do
  t=${spec%:int}
  int=0
  [ "$spec" != "$t" ] && int=1
  for m in convnet resnet18_64 vit_tiny int8_qdq_cnn; do
    if [ $m = convnet ]; then
      args=("$src/examples/convnet.onnx" --input "$src/examples/convnet_input.npy" --expect "$src/examples/convnet_output.npy")
    else
      args=("$models/$m.onnx" --input "$ms/${m}_input.npy" --expect "$ms/${m}_ort.npy")
    fi
    out=$("$cov" run "${args[@]}" --target "$t" 2>&1)
    rc=$?
    share=$(grep -oE "^MACs on the NPU: [0-9]+ of the model's [0-9]+ \([0-9.]+%\)" <<<"$out")
    pct=$(grep -oE "\([0-9.]+%\)" <<<"$share" | tr -d '()%')
    line="$(basename "$t" .json) $m: rc $rc, ${share:-no MAC share}"
    bad=""
    [ $rc -eq 0 ] || bad="$bad; exit $rc"
    grep -qE "^check of every NPU program .* <= 0.0001  PASS" <<<"$out" || bad="$bad; the program check did not pass"
    grep -qE "^  [^ ].* (PASS|above the tolerance by the datapath's rounding \(the narrowed check passed; allowed [0-9.e+-]+\))$" <<<"$out" ||
      bad="$bad; the output check did not pass"
    if [ $int -eq 1 ] && [ $m != int8_qdq_cnn ]; then
      grep -qE "^MACs on the NPU: .* on the CPU in [0-9]+ calls?, cpu: [a-z0-9_]+ needs mac\(f32,f32->f32\) or a narrower float; [^ ]+ offers mac\(i8,i8->i32\)" <<<"$out" ||
        bad="$bad; the float contractions are not refused for the missing float mac"
      grep -q "other reason" <<<"$share" && bad="$bad; more than one reason"
    else
      [ -n "$pct" ] && awk -v p="$pct" 'BEGIN { exit !(p >= 90) }' || bad="$bad; under 90% of the MACs on the accelerator"
    fi
    if [ -n "$bad" ]; then
      echo "FAIL: $line${bad}"
      grep -E "check|max rel err|differ|MACs on the NPU|error" <<<"$out" | head -8
      fail=1
    else
      echo "ok: $line"
    fi
  done
done
exit $fail
