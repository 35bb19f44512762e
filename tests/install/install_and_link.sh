#!/usr/bin/env bash
# install_and_link.sh BUILDDIR SRCDIR WORKDIR: `cmake --install` into a
# scratch prefix, then build examples/acg_summary.c against the installed
# headers and the static and the shared library through pkg-config, and
# run them and the installed CLI.
set -eu
build=$1 src=$2 work=$3
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" > /dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
test -f "$work/prefix/include/covenant/acg.h"
test -f "$work/prefix/share/covenant/targets/npu-16x16.json"
# the static library (its dependencies from Libs.private/Requires.private)
cc -std=c11 -Wall -Werror -o "$work/acg_summary" "$src/examples/acg_summary.c" \
   $(pkg-config --cflags covenant) \
   $(pkg-config --libs --static covenant | sed 's/-lcovenant/-Wl,-Bstatic -lcovenant -Wl,-Bdynamic/')
"$work/acg_summary" "$work/prefix/share/covenant/targets/npu-16x16.json" | grep -q "ridge point"
# the shared library, found through its soname
readelf -d "$work/prefix/lib/libcovenant.so" | grep -q 'SONAME.*\[libcovenant\.so\.0\]'
cc -std=c11 -Wall -Werror -o "$work/acg_summary_so" "$src/examples/acg_summary.c" \
   $(pkg-config --cflags --libs covenant) -Wl,-rpath,"$work/prefix/lib"
readelf -d "$work/acg_summary_so" | grep -q 'NEEDED.*\[libcovenant\.so\.0\]'
"$work/acg_summary_so" "$work/prefix/share/covenant/targets/npu-16x16.json" | grep -q "ridge point"
"$work/prefix/bin/covenant" acg check "$work/prefix/share/covenant/targets/"*.json
echo "ok: installed static and shared library, headers, pkg-config file, CLI and targets work"
