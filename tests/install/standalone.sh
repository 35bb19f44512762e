#!/usr/bin/env bash
# standalone.sh SRCDIR WORKDIR: the installed tree stands alone. A copy of
# the sources is configured, built (library, shared library, CLI; without
# LLVM to keep it short) and installed into a prefix; then the source and
# build copies are deleted and the prefix is moved elsewhere, so neither the
# source tree nor the configure-time prefix exists any more. The installed
# `covenant` must still find its targets, codelets and layer suite (map,
# verify, compile, layers, targets, run), and a small C program built with
# the README's `pkg-config --cflags --libs covenant` must link against the
# shared library and find the same data relative to libcovenant.so, and the
# Python package installed under lib/python3/site-packages must load that
# library from its own place and pass tests/python/test_api.py and
# examples/python_tutorial.py.
set -eu
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
# the sources as a clone has them (no build trees, no model weights)
if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
  (cd "$src" && git ls-files -z | grep -zv '^tests/models/\|^tests/frontend/models/' |
     tar --null -T - -cf -) | (mkdir -p "$work/src" && tar xf - -C "$work/src")
else
  mkdir -p "$work/src"
  tar -C "$src" --exclude='./build*' --exclude='./tests/models' --exclude='./.git' -cf - . | tar xf - -C "$work/src"
fi
echo "standalone: building a copy of the sources (the library and the CLI) ..." >&2
cmake -S "$work/src" -B "$work/build" -G Ninja -DCOV_WITH_LLVM=OFF \
      -DCMAKE_INSTALL_PREFIX="$work/prefix" > "$work/configure.log"
# what `cmake --install` installs: the libraries and the tools (not the tests)
targets="covenant covenant_shared covenant-cli"
ninja -C "$work/build" -t targets all | grep -q '^covenant-run:' && targets="$targets covenant-run"
# shellcheck disable=SC2086
ninja -C "$work/build" $targets > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; exit 1; }
cmake --install "$work/build" > /dev/null
# what the checks below need, copied before the sources go
mkdir -p "$work/need"
cp "$src/examples/convnet.onnx" "$src/examples/convnet_input.npy" "$src/examples/convnet_output.npy" "$work/need/"
mkdir -p "$work/need/py/examples" "$work/need/py/targets" "$work/need/py/tests/python"
cp "$src/examples/convnet.onnx" "$src/examples/convnet_input.npy" "$src/examples/convnet_output.npy" \
   "$src/examples/python_tutorial.py" "$work/need/py/examples/"
cp "$src/targets/npu-16x16.json" "$work/need/py/targets/"
cp "$src/tests/python/test_api.py" "$work/need/py/tests/python/"
rm -rf "$work/src" "$work/build"
mv "$work/prefix" "$work/moved"
p=$work/moved
cd "$work/need"
fail=0
check() { # check NAME PATTERN -- COMMAND...: exit 0 and PATTERN in the output
  local name=$1 pattern=$2; shift 3
  local out
  if out=$("$@" 2>&1) && grep -q -- "$pattern" <<<"$out"; then echo "ok: $name"
  else echo "FAIL: $name: $*"; echo "$out"; fail=1; fi
}
cov=$p/bin/covenant
check "installed layers: the suite under share/covenant/suite" "^14 layers in $p/share/covenant/suite/layers.json" -- "$cov" layers
check "installed targets" "^npu-16x16 " -- "$cov" targets
check "installed map resnet50_res3_1x1" "cycles" -- "$cov" map resnet50_res3_1x1 --target npu-16x16
check "installed verify" "^2 layer(s): 2 passed, 0 failed" -- "$cov" verify convnet_layer1 resnet50_res3_1x1 -t npu-32x32-os
check "installed compile" "^wrote" -- "$cov" compile convnet_layer2 -t npu-16x16 -o "$work/out"
check "installed codelet list" "conv2d" -- "$cov" codelet list
check "installed run vs the numpy reference" "^  output max rel err .*  PASS" -- "$cov" run convnet.onnx --input convnet_input.npy
check "installed explore --suite" "" -- "$cov" explore --base npu-16x16 --suite convnet_layer1 --eval mapper -q -o "$work/study"
# a program of the library's user, built as the README says
cat > "$work/prog.c" <<'C'
/* Finds a target, the codelets and the suite by name through the shared
 * library alone (this program lives outside the prefix), maps a layer. */
#include <stdio.h>
#include <covenant/acg.h>
#include <covenant/mapper.h>
int main(void) {
  cov_acg *acg = NULL;
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  char suite[4096];
  cov_status st = cov_acg_load_target("npu-16x16", &acg);
  if (!st) st = cov_suite_find(suite, sizeof suite);
  if (!st) st = cov_layer_from_suite(NULL, "convnet_layer1", 1, &layer);
  if (!st) st = cov_map(layer, acg, NULL, &s);
  if (st) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  printf("suite %s\nconvnet_layer1 on %s: %.0f cycles predicted\n", suite, cov_acg_name(acg), cov_schedule_cycles(s));
  cov_schedule_free(s);
  cov_layer_free(layer);
  cov_acg_free(acg);
  return 0;
}
C
export PKG_CONFIG_PATH=$p/lib/pkgconfig
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Werror -o "$work/prog" "$work/prog.c" $(pkg-config --cflags --libs covenant); then
  echo "ok: cc prog.c \$(pkg-config --cflags --libs covenant)"
else
  echo "FAIL: the README's pkg-config line does not link"; fail=1
fi
readelf -d "$work/prog" | grep -q 'NEEDED.*\[libcovenant\.so\.0\]' || { echo "FAIL: prog does not use libcovenant.so"; fail=1; }
check "prog finds data beside libcovenant.so" "^suite $p/share/covenant/suite/layers.json" -- env LD_LIBRARY_PATH="$p/lib" "$work/prog"
# the Python package, installed beside the library, finds it relative to itself
python=${COV_PYTHON:-/usr/bin/python3}
pyenv=(env PYTHONPATH="$p/lib/python3/site-packages" COVENANT_SOURCE_DIR="$work/need/py")
check "python: the installed package loads the moved prefix's library" "^$p/lib/libcovenant.so.0$" -- \
  "${pyenv[@]}" "$python" -c 'import covenant, covenant._lib as l; print(l._find_library())'
check "python: tests/python/test_api.py on the installed package" "^OK" -- \
  "${pyenv[@]}" "$python" "$work/need/py/tests/python/test_api.py"
check "python: examples/python_tutorial.py on the installed package" "^tutorial: ok" -- \
  "${pyenv[@]}" "$python" "$work/need/py/examples/python_tutorial.py"
check "prog maps a suite layer" "convnet_layer1 on npu-16x16: [0-9]* cycles predicted" -- env LD_LIBRARY_PATH="$p/lib" "$work/prog"
exit $fail
