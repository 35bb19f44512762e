#!/usr/bin/env python3
"""Time grows linearly with graph size: each command on a chain model of N
and of 10 N nodes (gen_chain.py), failing when the larger takes more than
BOUND times as long (a linear pass gives about 10, a quadratic one 100).

    /usr/bin/python3 test_scaling.py COVENANT WORKDIR

Sizes keep the whole test near 10 s on a 2-core machine: the reference run
at 10k/100k nodes (the node limit is 10^6), `map` at 500/5000, `compile`
for npu-16x16 at 200/2000 (compile simulates each group's candidates).
"""
import os
import shutil
import subprocess
import sys
import time

BOUND = 25.0
HERE = os.path.dirname(os.path.abspath(__file__))


def chain(work, n):
    path = os.path.join(work, "chain%d.onnx" % n)
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "gen_chain.py"), str(n), path], check=True)
    return path


def timed(args):
    t = time.perf_counter()
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()[:300]))
    return dt


def main():
    cov, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    cases = [
        ("run --target ref", 10000, lambda p, n: [cov, "run", p, "--target", "ref"]),
        ("map -t npu-16x16", 500, lambda p, n: [cov, "map", p, "-t", "npu-16x16"]),
        ("compile -t npu-16x16", 200,
         lambda p, n: [cov, "compile", p, "-t", "npu-16x16", "-o", os.path.join(work, "out%d" % n)]),
    ]
    failed = 0
    for what, n, cmd in cases:
        times = []
        for size in (n, 10 * n):
            shutil.rmtree(os.path.join(work, "out%d" % size), ignore_errors=True)
            times.append(timed(cmd(chain(work, size), size)))
        ratio = times[1] / max(times[0], 1e-3)
        ok = ratio <= BOUND
        failed += not ok
        print("%s %s: %d nodes %.2f s, %d nodes %.2f s, ratio %.1f (bound %.0f)" % (
            "ok  " if ok else "FAIL", what, n, times[0], 10 * n, times[1], ratio, BOUND))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
