"""tests/codelets/npy_util.py: helpers shared by the codelet tests that check
`covenant codelet run` against numpy: running the CLI, bf16 .npy files (a
'<u2' array whose header carries the note covenant:bf16), comparisons, and
the "N passed, N failed" summary ctest reads."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


class Checker:
    def __init__(self, cov):
        self.cov = cov
        self.tmp = tempfile.mkdtemp(prefix="cov-cdl-")
        self.passed = 0
        self.failed = 0
        self.count = 0

    # ---- files ----------------------------------------------------------
    def path(self, stem):
        self.count += 1
        return os.path.join(self.tmp, "%s_%d.npy" % (stem, self.count))

    def write(self, arr, bf16=False):
        p = self.path("in")
        if bf16:
            write_bf16(p, arr)
        else:
            np.save(p, np.ascontiguousarray(arr))
        return p

    # ---- running ---------------------------------------------------------
    def run(self, codelet, inputs, attrs=None, bf16=False, extra=()):
        """Runs one codelet; inputs is a list of (name, array). Returns the
        output arrays (by name), or None after recording a failure."""
        cmd = [self.cov, "codelet", "run", codelet]
        for name, arr in inputs:
            cmd += ["-i", "%s=%s" % (name, self.write(arr, bf16))]
        for k, v in (attrs or {}).items():
            cmd += ["-a", "%s=%s" % (k, v)]
        outdir = os.path.join(self.tmp, "out_%d" % self.count)
        cmd += ["-o", outdir + "/"]
        cmd += list(extra)
        os.makedirs(outdir, exist_ok=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            self.fail("%s %s: exit %d: %s" % (codelet, attrs or "", r.returncode, r.stderr.strip()))
            return None
        outs = {}
        for f in sorted(os.listdir(outdir)):
            outs[f[:-4]] = read_any(os.path.join(outdir, f))
        return outs

    def run_fail(self, codelet, inputs, attrs, pattern):
        """Expects `run` to be rejected with exit 1 and a message matching."""
        cmd = [self.cov, "codelet", "run", codelet]
        for name, arr in inputs:
            cmd += ["-i", "%s=%s" % (name, self.write(arr))]
        for k, v in (attrs or {}).items():
            cmd += ["-a", "%s=%s" % (k, v)]
        cmd += ["-o", os.path.join(self.tmp, "never.npy")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        label = "%s %s rejected" % (codelet, attrs)
        if r.returncode == 1 and pattern in r.stderr:
            self.ok(label)
        else:
            self.fail("%s: expected exit 1 and '%s', got %d: %s" % (label, pattern, r.returncode,
                                                                   r.stderr.strip()))

    # ---- verdicts ----------------------------------------------------------
    def ok(self, label):
        self.passed += 1
        print("ok: " + label)

    def fail(self, msg):
        self.failed += 1
        print("FAIL: " + msg)

    def close(self, label, got, want, rtol, atol, dtype=None):
        """got (from covenant) against want (float64 reference)."""
        if got is None:
            return
        want = np.asarray(want)
        if dtype is not None and got.dtype != dtype:
            self.fail("%s: dtype %s, expected %s" % (label, got.dtype, dtype))
            return
        if got.shape != want.shape:
            self.fail("%s: shape %s, expected %s" % (label, got.shape, want.shape))
            return
        g = got.astype(np.float64)
        if np.allclose(g, want, rtol=rtol, atol=atol, equal_nan=True):
            self.ok(label)
        else:
            err = np.abs(g - want)
            i = np.unravel_index(np.nanargmax(err), err.shape)
            self.fail("%s: max error %g at %s (got %r, want %r)" % (label, err[i], i, g[i], want[i]))

    def exact(self, label, got, want):
        if got is None:
            return
        if got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want):
            self.ok(label)
        else:
            self.fail("%s: got %s %s, want %s %s\n%s\n%s" % (label, got.dtype, got.shape, want.dtype,
                                                             want.shape, got, want))

    def summary(self):
        """Prints the counts ctest reads and removes the scratch files, which
        are kept only while a failure message may name them."""
        print("%d passed, %d failed" % (self.passed, self.failed))
        if not self.failed:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print("inputs and outputs kept in %s" % self.tmp)
        return 1 if self.failed else 0


# ---- bf16 ----------------------------------------------------------------

def to_bf16_bits(x):
    """float array -> bf16 bit patterns (round to nearest even), as uint16."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint32) << 16).view(np.float32)


def round_bf16(x):
    return from_bf16_bits(to_bf16_bits(x)).astype(np.float64)


def write_bf16(path, x):
    bits = to_bf16_bits(x)
    if bits.ndim == 1:
        shape = "(%d,)" % bits.shape[0]
    else:
        shape = "(" + ", ".join(str(d) for d in bits.shape) + ")"
    header = "{'descr': '<u2', 'fortran_order': False, 'shape': %s, }  # covenant:bf16" % shape
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(bits.tobytes())


def read_any(path):
    """np.load, turning covenant's bf16 files back into float32."""
    with open(path, "rb") as f:
        head = f.read(256)
    arr = np.load(path)
    if b"covenant:bf16" in head:
        return from_bf16_bits(arr)
    return arr


def main_guard(fn):
    if len(sys.argv) < 2:
        print("usage: %s COVENANT [GROUP...]" % sys.argv[0])
        sys.exit(2)
    sys.exit(fn())
