#!/usr/bin/env python3
"""tests/amdgpu/check_model.py COVENANT TARGET WORKDIR MODEL.onnx...: compile
each model whole for an AMDGPU target (`covenant gpu compile MODEL --target
T -o DIR`: every code object one file, as `covenant compile` puts them in
the artifact; tests/amdgpu/compile_route.sh checks they are the same)
and check every kernel of it statically, as no AMD GPU exists on these
machines: a valid HSA code object for the target's processor holding the
launched kernel, LDS within 64 KiB and equal to the launch's shared bytes, no
scratch (no spills), VGPR+AGPR counts that leave at least two waves per SIMD
(512 registers per lane per SIMD on gfx90a/gfx942), v_mfma in every matrix
kernel (convolutions, Gemm, MatMul) on f16 operands (not the *_matrix_f32
kernels of groups the precision plan gives f32 operands), v_dot4_i32_i8 in every integer
dot-product kernel (quantized layers); the first model is compiled again and
every file of it (code objects, weights, manifest) must be byte-identical."""
import json
import os
import re
import subprocess
import sys

cov, target, work = sys.argv[1:4]
models = sys.argv[4:]
READELF, OBJDUMP = "llvm-readelf-19", "llvm-objdump-19"
mcpu = {"amdgpu-gfx90a": "gfx90a", "amdgpu-gfx942": "gfx942"}[target]
fails = []


def compile_to(model, d):
    r = subprocess.run([cov, "gpu", "compile", model, "--target", target, "-o", d], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: covenant gpu compile %s --target %s: %s" % (model, target, r.stderr))
    return json.load(open(os.path.join(d, "manifest.json")))


def field(notes, key):
    m = re.search(r"\.%s:\s*(\d+)" % re.escape(key), notes)
    return int(m.group(1)) if m else None


total = 0
for model in models:
    name = os.path.splitext(os.path.basename(model))[0]
    a, b = os.path.join(work, target, name, "a"), os.path.join(work, target, name, "b")
    man = compile_to(model, a)
    twice = model == models[0]
    if twice:
        compile_to(model, b)
        for f in sorted(os.listdir(a)):
            if open(os.path.join(a, f), "rb").read() != open(os.path.join(b, f), "rb").read():
                fails.append("%s: %s differs between two compilations" % (name, f))
    seen, n_matrix, n_generic, worst_regs, max_lds = set(), 0, 0, 0, 0
    for s in man["steps"]:
        if s["op"] != "launch" or (s["module"], s["kernel"]) in seen:
            continue
        seen.add((s["module"], s["kernel"]))
        path = os.path.join(a, man["modules"][s["module"]]["file"])
        hdr = subprocess.run([READELF, "--file-header", path], capture_output=True, text=True).stdout
        notes = subprocess.run([READELF, "--notes", path], capture_output=True, text=True).stdout
        dis = subprocess.run([OBJDUMP, "-d", "--mcpu=" + mcpu, path], capture_output=True, text=True).stdout

        def bad(msg, k=s["kernel"]):
            fails.append("%s/%s/%s: %s" % (target, name, k, msg))
        if not re.search(r"Type:.*DYN", hdr) or not re.search(r"Machine:.*(AMD GPU|AMDGPU)", hdr):
            bad("not an AMDGPU shared object (HSACO)")
        if not re.search(r"amdhsa\.target:.*%s" % mcpu, notes):
            bad("code object is not for %s" % mcpu)
        if not re.search(r"\.name:\s*%s\b" % re.escape(s["kernel"]), notes):
            bad("kernel missing from its code object")
        lds, scratch = field(notes, "group_segment_fixed_size"), field(notes, "private_segment_fixed_size")
        vgpr, agpr = field(notes, "vgpr_count"), field(notes, "agpr_count") or 0
        if lds is None or lds > 65536 or lds != s["shared_bytes"]:
            bad("LDS %s bytes (launch %d, limit 65536)" % (lds, s["shared_bytes"]))
        if scratch != 0:
            bad("scratch (spills) of %s bytes" % scratch)
        if vgpr is None or vgpr + agpr > 256:
            bad("%s VGPRs + %s AGPRs leave fewer than two waves per SIMD" % (vgpr, agpr))
        matrix = isinstance(s.get("what"), dict) and s["what"].get("kind") in ("conv2d", "matmul")
        if matrix:
            n_matrix += 1
            # a group the precision plan gave f32 operands runs on the FMA path
            if "_matrix_f32" not in s["kernel"] and not re.search(r"\bv_mfma_", dis):
                bad("no v_mfma instruction in a matrix kernel")
        else:
            n_generic += 1
        if s.get("what") == "int8_dot" and not re.search(r"\bv_dot4c?_i32_i8", dis):
            bad("no v_dot4_i32_i8 instruction in an integer dot-product kernel")
        worst_regs = max(worst_regs, (vgpr or 0) + agpr)
        max_lds = max(max_lds, lds or 0)
    total += len(seen)
    print("ok: %s %-22s %3d kernels (%d matrix with v_mfma, %d generic), %d launches, max LDS %d B, "
          "max VGPR+AGPR %d%s" % (target, name, len(seen), n_matrix, n_generic,
                                 sum(1 for s in man["steps"] if s["op"] == "launch"), max_lds, worst_regs,
                                 ", byte-identical twice" if twice else ""))
for f in fails:
    print("FAIL:", f)
print("%s: %d kernels of %d models checked, %d failures" % (target, total, len(models), len(fails)))
sys.exit(1 if fails else 0)
