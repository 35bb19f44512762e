#!/usr/bin/python3
"""tests/unit/npy_numpy.py TEST_TENSOR WORKDIR: .npy files covenant writes
load in numpy with the right dtype, shape and values (bf16 as '<u2' bit
patterns, thanks to the header note numpy ignores), and files numpy writes
(every supported dtype, rank 0 to 3, format versions 1.0 and 2.0) read back
in covenant with the same values."""
import os
import subprocess
import sys

import numpy as np
from numpy.lib import format as npformat

exe, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
passed = failed = 0


def verdict(ok, label):
    global passed, failed
    if ok:
        passed += 1
        print("ok: " + label)
    else:
        failed += 1
        print("FAIL: " + label)


# covenant -> numpy
subprocess.run([exe, "--write", work], check=True)
vals = np.arange(6).reshape(2, 3)
expect = {
    "f32": (np.float32, vals - 2.5), "f16": (np.float16, vals - 2.5),
    "i8": (np.int8, vals - 3), "u8": (np.uint8, vals * 50),
    "i32": (np.int32, (vals - 3) * 100000), "i64": (np.int64, (vals - 3) * (1 << 40)),
    "bool": (np.bool_, vals & 1),
}
for name, (dt, want) in expect.items():
    a = np.load(os.path.join(work, name + ".npy"))
    verdict(a.dtype == dt and a.shape == (2, 3) and np.array_equal(a, want.astype(dt)),
            "numpy reads covenant's %s file" % name)
bf = np.load(os.path.join(work, "bf16.npy"))
as_f32 = (bf.astype(np.uint32) << 16).view(np.float32)
verdict(bf.dtype == np.uint16 and np.array_equal(as_f32, (vals - 2.5).astype(np.float32)),
        "numpy reads covenant's bf16 file as uint16 bit patterns")

# numpy -> covenant
rng = np.random.default_rng(5)
cases = []
for dt in (np.float32, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_):
    for shape in ((), (5,), (2, 3), (2, 0, 3), (2, 3, 4)):
        a = (rng.uniform(-100, 100, size=shape)).astype(dt)
        cases.append((a, (1, 0)))
a = rng.uniform(-1, 1, size=(3, 4)).astype(np.float32)
cases.append((a, (2, 0)))
cases.append((np.asfortranarray(rng.uniform(-1, 1, size=(7,)).astype(np.float32)), (1, 0)))
names = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int8): "i8",
         np.dtype(np.uint8): "u8", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
         np.dtype(np.bool_): "bool"}
for i, (a, version) in enumerate(cases):
    path = os.path.join(work, "np_%d.npy" % i)
    with open(path, "wb") as f:
        npformat.write_array(f, a, version=version)
    r = subprocess.run([exe, "--read", path], capture_output=True, text=True)
    label = "covenant reads numpy's %s %s v%d.%d" % (a.dtype, a.shape, *version)
    if r.returncode != 0:
        verdict(False, label + ": " + r.stderr.strip())
        continue
    lines = r.stdout.split("\n")
    head = lines[0].split()
    got = np.array([float(x) for x in lines[1:] if x], dtype=np.float64)
    ok = head[0] == names[a.dtype] and tuple(int(d) for d in head[1:]) == a.shape \
        and np.array_equal(got, a.astype(np.float64).ravel())
    verdict(ok, label)

# a Fortran-ordered matrix is refused rather than read transposed
path = os.path.join(work, "fortran.npy")
np.save(path, np.asfortranarray(np.ones((2, 3), np.float32)))
r = subprocess.run([exe, "--read", path], capture_output=True, text=True)
verdict(r.returncode != 0 and "Fortran" in r.stderr, "Fortran-ordered 2-D array refused")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
