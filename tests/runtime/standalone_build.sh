#!/usr/bin/env bash
# The runtime builds alone, as on a GPU machine with gcc, CMake and the driver
# only: `cmake -S runtime -B DIR` configures without LLVM or Jansson, and the
# covenant-run it builds links nothing but the C library (and libdl/libm),
# reads an artifact (--info) and, without a driver here, refuses to run a GPU
# artifact with exit 4 and the driver's name. With PART_ART (a GPU artifact
# with a part step), it reads it too and refuses to run it before any
# device is opened: no reference interpreter in this build, located at the
# artifact's `onnx`.
# Usage: standalone_build.sh SRC WORK ART [PART_ART]
set -u
src=$1 work=$2 art=$3 part_art=${4:-}
rm -rf "$work" && mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cmake -S "$src/runtime" -B "$work/b" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/b" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
rt=$work/b/covenant-run
[ -x "$rt" ] || { echo "FAIL: no covenant-run"; exit 1; }
if grep -qi "llvm\|jansson" "$work/b/CMakeCache.txt"; then bad "the standalone configuration mentions LLVM or Jansson"; fi
libs=$(ldd "$rt" | awk '{print $1}' | grep -v -E '^(linux-vdso|/lib64/ld-linux|ld-linux)' | sort | tr '\n' ' ')
for l in $libs; do
  case $l in libc.so.*|libdl.so.*|libm.so.*) ;; *) bad "covenant-run links $l";; esac
done
out=$("$rt" "$art" --info 2>&1) || bad "--info: $out"
grep -q "target nvptx-sm90" <<<"$out" || bad "--info does not name the target: $out"
out=$("$rt" "$art" 2>&1); rc=$?
if [ $rc = 4 ]; then
  grep -q "no NVIDIA driver" <<<"$out" || bad "exit 4 without naming the driver: $out"
elif [ $rc != 0 ]; then
  bad "a run failed (exit $rc): $out"
fi
if [ -n "$part_art" ]; then
  out=$("$rt" "$part_art" --info 2>&1) || bad "--info of the part-step artifact: $out"
  grep -q "part of the model" <<<"$out" || bad "--info does not list the part step: $out"
  out=$("$rt" "$part_art" 2>&1); rc=$?
  [ $rc = 1 ] && grep -qF "error: onnx: part steps run the model in the reference interpreter, which this standalone \
runtime does not have" <<<"$out" || bad "a part step in the standalone runtime (exit $rc): $out"
fi
out=$("$rt" 2>&1); [ $? = 2 ] || bad "no artifact: expected usage exit 2: $out"
[ $fail = 0 ] && echo "ok: standalone runtime (links: ${libs:-libc only})"
exit $fail
