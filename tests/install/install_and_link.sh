#!/usr/bin/env bash
# install_and_link.sh BUILDDIR SRCDIR WORKDIR: `cmake --install` into a
# scratch prefix, then build examples/acg_summary.c against the installed
# headers and library through pkg-config, and run it and the installed CLI.
set -eu
build=$1 src=$2 work=$3
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" > /dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
test -f "$work/prefix/include/covenant/acg.h"
test -f "$work/prefix/share/covenant/targets/npu-16x16.json"
cc -std=c11 -Wall -Werror -o "$work/acg_summary" "$src/examples/acg_summary.c" \
   $(pkg-config --cflags --libs --static covenant)
"$work/acg_summary" "$work/prefix/share/covenant/targets/npu-16x16.json" | grep -q "ridge point"
"$work/prefix/bin/covenant" acg check "$work/prefix/share/covenant/targets/"*.json
echo "ok: installed library, headers, pkg-config file, CLI and targets work"
