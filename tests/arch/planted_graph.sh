#!/usr/bin/env bash
# planted_graph.sh PYTHON ROOT WORKDIR: check_doc_graph.py on a copy of
# ARCHITECTURE.md with one dependency left out of the drawing must fail and
# name it, so the check on the real file can fail.
set -u
py=$1 root=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work/cmake"
cp "$root/cmake/modules.txt" "$work/cmake/"
sed 's/^registry ► amdgpu, nvptx, /registry ► amdgpu, /' "$root/ARCHITECTURE.md" > "$work/ARCHITECTURE.md"
out=$("$py" "$here/check_doc_graph.py" "$work")
rc=$?
if [ $rc -ne 1 ] || ! grep -q "registry is drawn with .*modules.txt says .*nvptx" <<<"$out"; then
  echo "FAIL: the left-out dependency was not reported (exit $rc): $out"; exit 1
fi
echo "ok: a dependency left out of the drawing is reported"
