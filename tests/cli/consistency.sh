#!/usr/bin/env bash
# consistency.sh COVENANT SRCDIR WITH_LLVM: one form for errors ("error:",
# never "Error:"), every compile says what it wrote (NPU, AMDGPU, NVPTX; run
# -o too), --report columns stay aligned, the README's examples write into
# a scratch folder, and the silent steps say what they do.
set -u
. "$(dirname "$0")/../cli_expect.sh"
cov=$1 src=$2 gpu=${3:-OFF}
cd "$src" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=examples/convnet.onnx

# every compile and run -o says what it wrote
expect 0 "^wrote $tmp/cn: 2 NPU program(s) for 2 layer group(s)" -- "$cov" compile $m --target npu-16x16 -o "$tmp/cn"
expect 0 "^wrote $tmp/y.npy (output 'output')" -- "$cov" run $m --target ref -o "$tmp/y.npy"
if [ "$gpu" = ON ]; then
  expect 0 "^wrote $tmp/amd.cvx: convnet.onnx for amdgpu-gfx942, 2 kernel launches" -- "$cov" compile $m --target amdgpu-gfx942 -o "$tmp/amd.cvx"
  expect 0 "^wrote 1 code object and $tmp/ptx/manifest.json: $tmp/ptx/resnet50_res3_1x1.ptx$" -- "$cov" compile resnet50_res3_1x1 --target nvptx-sm90 -o "$tmp/ptx"
  for f in "$tmp"/amd.cvx "$tmp"/ptx/*.ptx; do [ -s "$f" ] || { echo "FAIL: $f not written"; fail=1; }; done
  # --report: the plan column starts at the same place on every row, big
  # GEMM views included (a model is compiled alone, with its own report)
  out=$("$cov" gpu compile all --target nvptx-sm90 -o "$tmp/rep" --report 2>/dev/null)
  starts=$(grep -v "^wrote" <<<"$out" | awk '{ print index($0, "  tile ") + index($0, "  one output") + index($0, "  plan") }' | sort -u)
  if [ "$(wc -l <<<"$starts")" -ne 1 ] || ! grep -q "^covenant_resnet50_stem_pool " <<<"$out" ||
     ! grep -q " 200704x1x9 " <<<"$out"; then
    echo "FAIL: --report columns not aligned ($(echo $starts))"; echo "$out"; fail=1
  else
    echo "ok: --report aligned"
  fi
  # GPU failures (here: no driver) read like every other error
  for c in "gpu run convnet_layer1 -t nvptx-sm90" "gpu run convnet_layer1 -t amdgpu-gfx942" "run $m -t nvptx-sm90"; do
    # shellcheck disable=SC2086
    out=$("$cov" $c 2>&1); rc=$?
    if [ $rc -ne 0 ] && { grep -q "Error:" <<<"$out" || ! grep -q "\(^\|: \)error: " <<<"$out"; }; then
      echo "FAIL: $c: not the 'error:' form:"; echo "$out"; fail=1
    else
      echo "ok: $c (exit $rc)"
    fi
  done
fi
# no "Error:" anywhere a command can print it
if grep -rn '"Error:\|"Error ' --include=*.c cli backends common acg codelets frontend mapper explore runtime; then
  echo "FAIL: an 'Error:' message in the sources"; fail=1
fi

# the README's examples write into the scratch folder $s, never the clone
bad=$(awk '/^```sh/ { on = 1; next } /^```/ { on = 0 } on' README.md |
      grep -E "covenant|bundle_covenant" |
      grep -E "(-o|--output|--trace|>) +[^$ -]|-o +\\\$[^s]" | grep -v "^#")
[ -z "$bad" ] || { echo "FAIL: README examples that write into the clone:"; echo "$bad"; fail=1; }
grep -q '^s=$(mktemp -d)' README.md || { echo "FAIL: README defines no scratch folder"; fail=1; }
# and the NPU ones run as written, leaving their files in $s
s=$tmp/readme
mkdir -p "$s"
export s
while read -r line; do
  out=$(eval "${line/build\/covenant/\"$cov\"}" 2>&1) || { echo "FAIL: README: $line"; echo "$out"; fail=1; }
done < <(awk '/^```sh/ { on = 1; next } /^```/ { on = 0 } on' README.md | sed 's/ *#.*//' |
         grep -E '^build/covenant (compile|disasm|sim|codelet run|run examples/convnet.onnx --(target ref|trace))' | grep -v 'gpu\|amdgpu\|nvptx')
for f in out/program.npu cn trace.json run.json y.npy out.npy; do
  [ -s "$s/$f" ] || { echo "FAIL: README example did not write \$s/$f"; fail=1; }
done

# the silent steps say what they do
grep -q 'echo "main: building covenant' scripts/main.sh || { echo "FAIL: main.sh builds silently"; fail=1; }
grep -q '^step "compressing' bench/nvptx/scripts/bundle_covenant.sh || { echo "FAIL: bundle_covenant.sh packs silently"; fail=1; }
exit $fail
