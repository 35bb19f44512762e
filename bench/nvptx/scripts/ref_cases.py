#!/usr/bin/env python3
"""bench/nvptx/scripts/ref_cases.py OUTDIR [--covenant BIN] [--seed N] [--cases N] [--b32-cases N]:
the reference interpreter's outputs for the quantized artifacts of a
compile_models.sh OUTDIR, on the inputs run_models.py will draw there.

An int8 artifact must match covenant's reference (`covenant run --target
ref`) bit for bit: its integer requantisation is what every target
computes, while onnxruntime's float32 sums and tests/models/qdq_exact.py's
float64 ones each land one output step away near a rounding boundary on
some inputs. The GPU machine has no full build to run the reference, so
here (with it) every part's quantized models get their random inputs drawn
exactly as run_models.py draws them (the same seed, case counts and
random_inputs, from the artifact's manifest and the ONNX file), run on ref,
and the outputs saved as PART/ref/NAME.bBATCH.npz (out{case}_{output}),
which travel with the part; run_models.py then requires bit equality with
them. Standard library, numpy and onnx."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "runtime"))
import artifact  # noqa: E402
import run_models  # noqa: E402


def ref_outputs(cov, onnx_file, manifest, model, cases, seed):
    """run_models.one's inputs (same generator, same order), run on ref."""
    rng = np.random.default_rng(seed)
    outs = {}
    with tempfile.TemporaryDirectory(prefix="covref_") as tmp:
        for c in range(cases):
            ins = run_models.random_inputs(manifest, model, rng)
            args = [cov, "run", onnx_file, "--target", "ref"]
            for io, x in zip(manifest["inputs"], ins):
                f = os.path.join(tmp, "in_%s.npy" % len(args))
                np.save(f, x)
                args += ["--input", "%s=%s" % (io["name"], f)]
            for k in range(len(manifest["outputs"])):
                args += ["-o", os.path.join(tmp, "out%d.npy" % k)]
            p = subprocess.run(args, capture_output=True, text=True)
            if p.returncode:
                raise SystemExit("ref_cases: %s case %d: %s" % (onnx_file, c, (p.stderr or p.stdout).strip()[-400:]))
            for k in range(len(manifest["outputs"])):
                outs["out%d_%d" % (c, k)] = np.load(os.path.join(tmp, "out%d.npy" % k))
    return outs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--covenant", default=os.path.join(ROOT, "build", "covenant"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--b32-cases", type=int, default=100)
    opt = ap.parse_args()
    import onnx
    parts = sorted(d for d in os.listdir(opt.outdir) if d.startswith("part"))
    for part in parts:
        pdir = os.path.join(opt.outdir, part)
        for line in open(os.path.join(pdir, "models.txt")):
            if not line.strip():
                continue
            name, batch, art = line.split()[:3]
            # the file compile_models.sh compiled (OUTDIR/onnx), or made as run_models.py makes it
            onnx_file = run_models.onnx_path(name, int(batch), os.path.join(opt.outdir, "onnx"))
            model = onnx.load(onnx_file)
            if not any(n.op_type in run_models.QUANT_OPS for n in model.graph.node):
                continue
            manifest, _ = artifact.read(os.path.join(opt.outdir, "all", art))
            cases = opt.cases if batch == "1" else opt.b32_cases
            outs = ref_outputs(opt.covenant, onnx_file, manifest, model, cases, opt.seed)
            os.makedirs(os.path.join(pdir, "ref"), exist_ok=True)
            dst = os.path.join(pdir, "ref", "%s.b%s.npz" % (name, batch))
            np.savez_compressed(dst + ".tmp.npz", **outs)
            os.replace(dst + ".tmp.npz", dst)
            print("ref_cases: %s batch %s: %d case(s) -> %s" % (name, batch, cases, dst))


if __name__ == "__main__":
    main()
