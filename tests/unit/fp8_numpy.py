#!/usr/bin/python3
"""tests/unit/fp8_numpy.py TEST_FP8 WORKDIR: covenant's OCP FP8 conversions
(common/fp8.c) against numpy tables built here from the format definition.

Every one of the 2 x 256 codes widens to sign * 2^(e - bias) * (1 + m / 2^M)
(e > 0) or sign * 2^(1 - bias) * (m / 2^M) (e = 0), with E4M3's S.1111.111
a NaN and E5M2's exponent 31 infinities (m = 0) and NaNs. Narrowing is
checked against the nearest finite value by exact comparison in float64,
ties to the even code, in saturation mode (beyond the largest finite
magnitude, infinities included: the largest finite value of the sign; NaN:
0x7f with its sign), on every f16 value widened, every midpoint between
neighbouring FP8 values and the f32 values either side of it, the
subnormal range, extremes and random f32 patterns."""
import os
import subprocess
import sys

import numpy as np

exe, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
failed = 0

FORMATS = {"e4m3": (4, 3, 7, False), "e5m2": (5, 2, 15, True)}


def table(name):
    ebits, mbits, bias, ieee = FORMATS[name]
    vals = np.empty(256, dtype=np.float64)
    for c in range(256):
        s = -1.0 if c & 0x80 else 1.0
        e = (c >> mbits) & ((1 << ebits) - 1)
        m = c & ((1 << mbits) - 1)
        if ieee and e == (1 << ebits) - 1:
            vals[c] = s * np.inf if m == 0 else np.nan
        elif not ieee and (c & 0x7f) == 0x7f:
            vals[c] = np.nan
        elif e == 0:
            vals[c] = s * 2.0 ** (1 - bias) * (m / 2.0 ** mbits)
        else:
            vals[c] = s * 2.0 ** (e - bias) * (1 + m / 2.0 ** mbits)
    return vals


def narrow_ref(name, x):
    """Reference encoding of each float32 in x (float64 arithmetic)."""
    vals = table(name)
    pos = [(vals[c], c) for c in range(128) if np.isfinite(vals[c])]
    pos.sort()
    mags = np.array([v for v, _ in pos])
    codes = np.array([c for _, c in pos])
    out = np.empty(len(x), dtype=np.uint8)
    xd = x.astype(np.float64)
    sign = np.where(np.signbit(xd), 0x80, 0).astype(np.uint8)
    a = np.abs(xd)
    i = np.clip(np.searchsorted(mags, a), 1, len(mags) - 1)
    lo, hi = mags[i - 1], mags[i]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (codes[i] % 2 == 0))
    c = np.where(pick_hi, codes[i], codes[i - 1])
    c = np.where(a <= mags[0], codes[0], c)
    c = np.where(a >= mags[-1], codes[-1], c)  # saturation, infinities included
    out[:] = c
    out |= sign
    nan = np.isnan(xd)
    out[nan] = 0x7f | sign[nan]
    return out


def inputs():
    xs = [np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)]
    for name in FORMATS:
        v = np.sort(np.unique(np.abs(table(name)[np.isfinite(table(name))])))
        mid = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact in f32
        up = np.nextafter(mid, np.float32(np.inf))
        down = np.nextafter(mid, np.float32(0))
        top = v[-1] + (v[-1] - v[-2]) / 2  # halfway past the largest finite value
        edge = np.array([v[-1], top, np.nextafter(np.float32(top), np.float32(0)),
                         np.nextafter(np.float32(top), np.float32(np.inf)), v[1] / 2, v[1] / 4,
                         v[1] * 0.75], dtype=np.float32)
        xs += [mid, up, down, edge, v.astype(np.float32)]
    xs.append(np.array([0.0, np.inf, np.nan, 1e-45, 1e-38, 3e38, 1e30, 65504, 1e5], dtype=np.float32))
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    xs.append(bits)
    xs.append(rng.standard_normal(200000).astype(np.float32) * 100)
    x = np.concatenate(xs).astype(np.float32)
    return np.concatenate([x, -x])


x = inputs()
x.tofile(os.path.join(work, "in.f32"))
subprocess.run([exe, os.path.join(work, "in.f32"), os.path.join(work, "out.bin")], check=True)
raw = np.fromfile(os.path.join(work, "out.bin"), dtype=np.uint8)
codes = raw[: 2 * len(x)].reshape(-1, 2)
widened = raw[2 * len(x):].view(np.float32).reshape(2, 256)

for k, name in enumerate(FORMATS):
    want = table(name)
    got = widened[k].astype(np.float64)
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    same |= np.isnan(got) & np.isnan(want)
    if not same.all():
        failed += 1
        c = int(np.flatnonzero(~same)[0])
        print("FAIL: %s code 0x%02x widens to %r, the definition gives %r" % (name, c, got[c], want[c]))
    else:
        print("ok: %s: all 256 codes widen to the definition's values" % name)
    ref = narrow_ref(name, x)
    bad = np.flatnonzero(codes[:, k] != ref)
    if len(bad):
        failed += 1
        i = int(bad[0])
        print("FAIL: %s: %d of %d narrowings differ; first %r -> 0x%02x, reference 0x%02x"
              % (name, len(bad), len(x), float(x[i]), codes[i, k], ref[i]))
    else:
        print("ok: %s: %d narrowings match the nearest-even saturating reference" % (name, len(x)))

# The rules written down in include/covenant/tensor.h, spelled out.
spot = {"e4m3": [(448.0, 0x7e), (464.0, 0x7e), (1e9, 0x7e), (np.inf, 0x7e), (-np.inf, 0xfe),
                 (2.0 ** -9, 0x01), (2.0 ** -10, 0x00), (np.nan, 0x7f)],
        "e5m2": [(57344.0, 0x7b), (61440.0, 0x7b), (np.inf, 0x7b), (2.0 ** -16, 0x01),
                 (2.0 ** -17, 0x00), (1.5 * 2.0 ** -17, 0x01), (np.nan, 0x7f)]}
for k, name in enumerate(FORMATS):
    xs = np.array([v for v, _ in spot[name]], dtype=np.float32)
    ref = narrow_ref(name, xs)
    want = np.array([c for _, c in spot[name]], dtype=np.uint8)
    if not (ref == want).all():
        failed += 1
        print("FAIL: %s: the reference disagrees with the written rules: %s" % (name, ref))
print("%d failed" % failed)
sys.exit(1 if failed else 0)
