#!/usr/bin/env python3
"""tests/amdgpu/check_layers.py COVENANT MCPU_TARGET WORKDIR: compile every
layer of the suite (the contractions, the standalone max pool, the attention
matmul with its fused softmax) (fp16, plus an f32 GEMM on the FMA path) for an
AMDGPU target and check each code object statically, as no AMD GPU exists on
these machines: a valid HSA code object for the target's processor with the
expected kernel, LDS within 64 KiB and equal to the plan's, no scratch (no
spills), VGPR+AGPR counts that leave at least two waves per SIMD (512 registers
per lane per SIMD on gfx90a/gfx942), v_mfma in every matrix layer and none on
the FMA path; then compiles again and requires byte-identical code objects."""
import json
import os
import re
import shutil
import subprocess
import sys

cov, target, work = sys.argv[1:4]
READELF, OBJDUMP = "llvm-readelf-19", "llvm-objdump-19"
# optional tools: without them the test reports itself skipped (77)
for tool in (READELF, OBJDUMP):
    if not shutil.which(tool):
        print("skipped: %s not found (Debian: llvm-19)" % tool)
        sys.exit(77)
if not (os.environ.get("COVENANT_LD_LLD") or shutil.which("ld.lld-19") or shutil.which("ld.lld")):
    print("skipped: ld.lld not found (Debian: lld-19), which links HSACO")
    sys.exit(77)
fails = []


def compile_to(d, *extra):
    r = subprocess.run([cov, "gpu", "compile", *extra, "--target", target, "-o", d], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: covenant gpu compile %s: %s" % (" ".join(extra), r.stderr))
    return json.load(open(os.path.join(d, "manifest.json")))


def field(notes, key):
    m = re.search(r"\.%s:\s*(\d+)" % re.escape(key), notes)
    return int(m.group(1)) if m else None


def check(d, k, mcpu, matrix):
    path = os.path.join(d, k["file"])
    hdr = subprocess.run([READELF, "--file-header", path], capture_output=True, text=True).stdout
    notes = subprocess.run([READELF, "--notes", path], capture_output=True, text=True).stdout
    dis = subprocess.run([OBJDUMP, "-d", "--mcpu=" + mcpu, path], capture_output=True, text=True).stdout
    name = k["name"]
    def bad(msg):
        fails.append("%s/%s: %s" % (target, name, msg))
    if not re.search(r"Type:.*DYN", hdr) or not re.search(r"Machine:.*(AMD GPU|AMDGPU)", hdr):
        bad("not an AMDGPU shared object (HSACO)")
    if not re.search(r"amdhsa\.target:.*%s" % mcpu, notes):
        bad("code object is not for %s" % mcpu)
    if not re.search(r"\.name:\s*%s\b" % re.escape(k["kernel"]), notes):
        bad("kernel %s missing" % k["kernel"])
    lds = field(notes, "group_segment_fixed_size")
    scratch = field(notes, "private_segment_fixed_size")
    vgpr, agpr = field(notes, "vgpr_count"), field(notes, "agpr_count") or 0
    if lds is None or lds > 65536 or lds != k["shared_bytes"]:
        bad("LDS %s bytes (plan %d, limit 65536)" % (lds, k["shared_bytes"]))
    if scratch != 0:
        bad("scratch (spills) of %s bytes" % scratch)
    if vgpr is None or vgpr + agpr > 256:
        bad("%s VGPRs + %s AGPRs leave fewer than two waves per SIMD" % (vgpr, agpr))
    n_mfma = len(re.findall(r"\bv_mfma_", dis))
    if k["kind"] == "maxpool":
        # the standalone pool: a thread per output, no LDS, no matrix unit
        if n_mfma or lds != 0:
            bad("pool kernel uses v_mfma or LDS")
        if not re.search(r"\bv_(max|cmp)\w*_f32", dis):
            bad("pool kernel has no f32 max/compare")
        print("ok: %-8s %-28s pool, VGPR %3d" % (target, name, vgpr or 0))
        return
    if k.get("softmax") and not re.search(r"\bv_exp_f32", dis):
        bad("softmax epilogue without v_exp_f32")
    if matrix and n_mfma == 0:
        bad("no v_mfma instruction in a matrix layer")
    if not matrix and n_mfma:
        bad("v_mfma on the FMA path")
    if "s_barrier" not in dis:
        bad("no s_barrier (the LDS pipeline needs one)")
    if not re.search(r"\bds_(read|load)", dis) or not re.search(r"\bds_(write|store)", dis):
        bad("no LDS reads/writes")
    print("ok: %-8s %-28s LDS %6d B  VGPR %3d AGPR %3d  v_mfma x%d" % (target, name, lds or 0, vgpr or 0, agpr, n_mfma))


mcpu = {"amdgpu-gfx90a": "gfx90a", "amdgpu-gfx942": "gfx942"}[target]
a = os.path.join(work, target, "a")
man = compile_to(a, "all")
for k in man["kernels"]:
    check(a, k, mcpu, True)
f32 = os.path.join(work, target, "f32")
for k in compile_to(f32, "--dtype", "f32", "gemm_256x512x1024", "convnet_layer1")["kernels"]:
    check(f32, k, mcpu, False)
# determinism: a second compilation is byte-identical
b = os.path.join(work, target, "b")
compile_to(b, "all")
for k in man["kernels"] + [{"file": "manifest.json"}]:
    if open(os.path.join(a, k["file"]), "rb").read() != open(os.path.join(b, k["file"]), "rb").read():
        fails.append("%s: %s differs between two compilations" % (target, k["file"]))
if len(man["kernels"]) != 14:
    fails.append("expected the 14 layers of the suite, got %d" % len(man["kernels"]))
if not any(k.get("softmax") and k["grid"][0] == 1 for k in man["kernels"]):
    fails.append("no layer with a softmax fused over whole rows")
for f in fails:
    print("FAIL:", f)
print("%s: %d kernels checked, %d failures" % (target, len(man["kernels"]) + 2, len(fails)))
sys.exit(1 if fails else 0)
