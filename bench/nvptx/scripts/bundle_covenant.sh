#!/usr/bin/env bash
# bench/nvptx/scripts/bundle_covenant.sh COVENANT DIR: packs the covenant binary with
# every shared library it needs, the dynamic loader, the shipped targets,
# codelets and layer suite into DIR, so that `covenant` itself (not only the
# PTX it writes) runs on a GPU machine that has neither LLVM nor Debian's
# glibc. On that machine:
#     bash DIR/setup.sh            # unpacks, writes DIR/cov
#     DIR/cov run examples/convnet.onnx --target nvptx-sm90
# DIR/cov starts the bundled loader with --library-path, so the host's own
# libraries are not used; libcuda.so.1 is still found by dlopen in the host's
# standard paths (it belongs to the driver). The libraries are packed with xz
# (about 44 MB for LLVM 19 and its dependencies).
set -eu
cov=$1 dir=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
# Progress on stderr: the packing takes about two minutes, mostly xz.
step() { echo "bundle: $* ($SECONDS s)" >&2; }
step "copying $cov and the libraries it links into $dir"
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/share/covenant" "$dir/stage/lib"
cp "$cov" "$dir/bin/covenant"
ldd "$cov" | awk '/=> \//{print $3}' | while read -r lib; do cp -L "$lib" "$dir/stage/lib/"; done
loader=$(ldd "$cov" | awk '/ld-linux/{print $1}')
cp -L "$loader" "$dir/stage/lib/ld-linux.so"
cp -r "$root/targets" "$root/codelets" "$dir/share/covenant/"
mkdir -p "$dir/share/covenant/suite"
cp "$root/bench/suite/layers.json" "$dir/share/covenant/suite/layers.json"
step "compressing $(du -sh "$dir/stage/lib" | cut -f1) of libraries with xz (the long step)"
tar cf - -C "$dir/stage" lib | xz -T0 -6 > "$dir/lib.tar.xz"
rm -rf "$dir/stage"
cat > "$dir/setup.sh" <<'SETUP'
#!/usr/bin/env bash
# Unpacks the libraries and writes ./cov, which runs covenant with them.
set -eu
d=$(cd "$(dirname "$0")" && pwd)
tar xJf "$d/lib.tar.xz" -C "$d"
# the loader sits beside the binary: covenant finds its shipped data from the
# running program's folder (bin/../share/covenant), which is the loader's here
mv "$d/lib/ld-linux.so" "$d/bin/ld-linux.so"
cat > "$d/cov" <<COV
#!/usr/bin/env bash
export COVENANT_SUITE=\${COVENANT_SUITE:-$d/share/covenant/suite/layers.json}
exec "$d/bin/ld-linux.so" --library-path "$d/lib" "$d/bin/covenant" "\$@"
COV
chmod +x "$d/cov"
SETUP
chmod +x "$dir/setup.sh"
step "done: $(du -sh "$dir" | cut -f1) in $dir; there: bash $dir/setup.sh, then $dir/cov"
