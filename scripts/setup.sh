#!/usr/bin/env bash
# scripts/setup.sh: install, from Debian 12 packages, whatever covenant needs
# that this machine lacks. Idempotent, non-interactive, silent when all is there.
set -euo pipefail

PACKAGES=(
  cmake ninja-build pkg-config gcc make   # build
  clang-19 libclang-rt-19-dev             # sanitizer build and libFuzzer (runtimes)
  llvm-19-dev lld-19                      # GPU backends: LLVM C API, ld.lld links HSACO
  libjansson-dev                          # ACG and suite JSON
  libprotobuf-c-dev protobuf-c-compiler   # ONNX reader (bindings generated at build time)
  python3 python3-numpy python3-onnx      # independent references in tests
  python3-pandas                          # the Python package's study tables (records without it)
  graphviz                                # renders `covenant acg dot`
  python3-matplotlib parallel             # explore: study plots, GNU parallel shard route
  libamdhip64-5                           # HIP runtime (dlopen'ed; reports "no device" here)
  locales                                 # a decimal-comma locale for the locale tests
)

# de_DE.UTF-8 (decimal comma): tests check that library output and parsing
# do not follow the caller's LC_NUMERIC. Generating one locale takes seconds.
need_locale() { ! locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; }
make_locale() {
  local s=""
  [ "$(id -u)" -ne 0 ] && s="sudo"
  $s localedef -i de_DE -f UTF-8 de_DE.UTF-8 || echo "setup: could not generate de_DE.UTF-8 (locale tests skip)" >&2
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  if need_locale; then make_locale; fi
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo > /dev/null || { echo "setup: need root or sudo to install packages" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
if need_locale; then make_locale; fi
