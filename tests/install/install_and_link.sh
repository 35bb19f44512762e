#!/usr/bin/env bash
# install_and_link.sh BUILDDIR SRCDIR WORKDIR: `cmake --install` into a
# scratch prefix, then build examples/acg_summary.c against the installed
# headers and the static and the shared library with the very command
# lines its header comment gives (through pkg-config), and run them and
# the installed CLI. The static build must not need libcovenant.so, and
# the shared one must run without LD_LIBRARY_PATH (the .pc file's rpath).
set -eu
build=$1 src=$2 work=$3
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" > /dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
unset LD_LIBRARY_PATH
test -f "$work/prefix/include/covenant/acg.h"
test -f "$work/prefix/share/covenant/targets/npu-16x16.json"
npu=$work/prefix/share/covenant/targets/npu-16x16.json
# the example's own build lines ("cc acg_summary.c ..."), run as written
lines=$(grep -o 'cc acg_summary\.c .*' "$src/examples/acg_summary.c")
[ "$(wc -l <<<"$lines")" -eq 2 ] || { echo "FAIL: expected 2 build lines in acg_summary.c"; exit 1; }
shared_line=$(grep -v -- '--static' <<<"$lines")
static_line=$(grep -- '--static' <<<"$lines")
cp "$src/examples/acg_summary.c" "$work/"
mkdir -p "$work/shared" "$work/static"
(cd "$work" && eval "${shared_line% -o *} -o shared/acg_summary")
(cd "$work" && eval "${static_line% -o *} -o static/acg_summary")
# the static one needs no libcovenant.so
if readelf -d "$work/static/acg_summary" | grep -q 'NEEDED.*libcovenant'; then
  echo "FAIL: '$static_line' links libcovenant.so:"; readelf -d "$work/static/acg_summary" | grep NEEDED; exit 1
fi
"$work/static/acg_summary" "$npu" | grep -q "ridge point"
# the shared one, found through its soname, without LD_LIBRARY_PATH
readelf -d "$work/prefix/lib/libcovenant.so" | grep -q 'SONAME.*\[libcovenant\.so\.0\]'
readelf -d "$work/shared/acg_summary" | grep -q 'NEEDED.*\[libcovenant\.so\.0\]'
"$work/shared/acg_summary" "$npu" | grep -q "ridge point" ||
  { echo "FAIL: '$shared_line' does not run without LD_LIBRARY_PATH"; exit 1; }
"$work/prefix/bin/covenant" acg check "$work/prefix/share/covenant/targets/"*.json
# the installed tools carry the prefix-relative run path
readelf -d "$work/prefix/bin/covenant" | grep -q 'R.*PATH.*\$ORIGIN/\.\./lib' ||
  { echo "FAIL: bin/covenant has no \$ORIGIN/../lib run path"; exit 1; }
# the Python package beside the library, finding it relative to itself
test -f "$work/prefix/lib/python3/site-packages/covenant/__init__.py"
PYTHONPATH="$work/prefix/lib/python3/site-packages" "${COV_PYTHON:-/usr/bin/python3}" -c \
  'import covenant, covenant._lib as l, sys; print(l._find_library()); sys.exit(covenant.load_acg("npu-16x16")["name"] != "npu-16x16")' |
  grep -q "^$work/prefix/lib/libcovenant.so.0$" || { echo "FAIL: the installed Python package"; exit 1; }
echo "ok: installed static and shared library, headers, pkg-config files, CLI, targets and Python package work"
