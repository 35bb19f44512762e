#!/usr/bin/env bash
# check_hsaco.sh PROBE MCPU VERSION WORKDIR: build the MFMA probe's HSACO and
# check it statically, as no AMD GPU is available: an AMDGPU shared ELF for
# the right processor and code object version, the kernel's descriptor, LDS
# use, no scratch, register counts, and v_mfma and LDS instructions.
set -eu
probe=$1 mcpu=$2 ver=$3 work=$4
# optional tools: without them the test reports itself skipped (77)
for tool in llvm-readelf-19 llvm-objdump-19; do
  command -v $tool > /dev/null || { echo "skipped: $tool not found (Debian: llvm-19)"; exit 77; }
done
[ -n "${COVENANT_LD_LLD:-}" ] || command -v ld.lld-19 > /dev/null || command -v ld.lld > /dev/null ||
  { echo "skipped: ld.lld not found (Debian: lld-19), which links HSACO"; exit 77; }
mkdir -p "$work"
out="$work/probe-$mcpu-v$ver.hsaco"
"$probe" "$mcpu" "$ver" "$out"
readelf=llvm-readelf-19 objdump=llvm-objdump-19
fail() { echo "FAIL ($mcpu v$ver): $*"; exit 1; }
hdr=$($readelf --file-header "$out")
grep -q "Type:.*DYN" <<<"$hdr" || fail "not a shared object"
grep -q "Machine:.*AMD GPU\|Machine:.*EM_AMDGPU" <<<"$hdr" || fail "not an AMDGPU ELF"
notes=$($readelf --notes "$out")
grep -q "amdhsa.target:.*$mcpu" <<<"$notes" || fail "target is not $mcpu"
grep -q "amdhsa.version:" <<<"$notes" || fail "no code object metadata"
# code object v4 carries metadata version 1.1, v5 carries 1.2
case $ver in 4) want="1.1" ;; 5) want="1.2" ;; esac
got=$(awk '/amdhsa.version:/ {n = 2; next} n > 0 {gsub(/[ -]/, ""); v = v (v == "" ? "" : ".") $0; n--}
           END {print v}' <<<"$notes")
[ "$got" = "$want" ] || fail "code object metadata version $got, expected $want (v$ver)"
grep -q "\.name: *covenant_mfma_probe" <<<"$notes" || fail "kernel missing"
lds=$(grep -o "\.group_segment_fixed_size: *[0-9]*" <<<"$notes" | grep -o "[0-9]*$")
[ "$lds" -eq 512 ] || fail "LDS use $lds bytes, expected the 512-byte tile"
scratch=$(grep -o "\.private_segment_fixed_size: *[0-9]*" <<<"$notes" | grep -o "[0-9]*$")
[ "$scratch" -eq 0 ] || fail "scratch (spills) of $scratch bytes"
vgpr=$(grep -o "\.vgpr_count: *[0-9]*" <<<"$notes" | grep -o "[0-9]*$")
[ "$vgpr" -gt 0 ] && [ "$vgpr" -le 128 ] || fail "VGPR count $vgpr"
dis=$($objdump -d --mcpu="$mcpu" "$out")
grep -q "v_mfma_f32_16x16x16" <<<"$dis" || fail "no v_mfma instruction"
# (no s_barrier check: LLVM rightly drops the barrier of a one-wave workgroup)
grep -q "ds_write\|ds_store" <<<"$dis" || fail "no LDS store"
grep -q "ds_read\|ds_load" <<<"$dis" || fail "no LDS load"
echo "ok: $mcpu code object v$ver: LDS $lds B, VGPRs $vgpr, no scratch, v_mfma present"
