#!/usr/bin/env python3
"""TfIdfVectorizer against a reference written here from the ONNX definition
(with onnxruntime's reading of skips: the n tokens of an n-gram are s + 1
apart for each s in 0..max_skip_count, a 1-gram counted once per position):
modes TF, IDF and TFIDF with and without weights, int32 and int64 tokens,
[C] and [N, C] inputs, n-grams of lengths 1 to 3, pools whose n-grams map
to output columns out of order, and an input with no tokens.

    /usr/bin/python3 test_tfidf.py COVENANT WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

T = {np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}


def reference(x, mode, min_n, max_n, skip, counts, indexes, pool, weights):
    grams, k = {}, 0  # n-gram tokens -> pool-order id
    for n in range(1, len(counts) + 1):
        end = counts[n] if n < len(counts) else len(pool)
        for at in range(counts[n - 1], end, n):
            grams[tuple(pool[at:at + n])] = k
            k += 1
    rows = x if x.ndim == 2 else x.reshape(1, -1)
    width = max(indexes) + 1
    out = np.zeros((rows.shape[0], width), np.float32)
    w = np.ones(len(indexes), np.float32) if weights is None else np.asarray(weights, np.float32)
    for r, row in enumerate(rows):
        cnt = np.zeros(len(indexes), np.int64)
        seen = set()
        for s in range(skip + 1):
            for i in range(len(row)):
                for n in range(min_n, max_n + 1):
                    pos = tuple(range(i, i + (n - 1) * (s + 1) + 1, s + 1))
                    if pos[-1] >= len(row) or (n == 1 and s > 0) or (pos, n) in seen:
                        continue
                    seen.add((pos, n))
                    g = tuple(int(row[p]) for p in pos)
                    if g in grams:
                        cnt[grams[g]] += 1
        for j, c in enumerate(cnt):
            out[r, indexes[j]] = c if mode == "TF" else (w[j] if c else 0) if mode == "IDF" else c * w[j]
    return out if x.ndim == 2 else out[0]


def case(cov, work, name, x, weights=None, **a):
    attrs = dict(a)
    if weights is not None:
        attrs["weights"] = weights
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", T[x.dtype], list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 8
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    np.save(os.path.join(work, name + "_x.npy"), x)
    out = os.path.join(work, name + "_out")
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([cov, "run", path, "--target", "ref", "--input", os.path.join(work, name + "_x.npy"),
                        "-o", out], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.strip()[-400:])
    got = np.load(os.path.join(out, "output_0.npy"))
    want = reference(x, a["mode"], a["min_gram_length"], a["max_gram_length"], a["max_skip_count"],
                     a["ngram_counts"], a["ngram_indexes"], a["pool_int64s"], weights)
    if got.dtype != np.float32 or got.shape != want.shape or not np.array_equal(got, want):
        return "got %s %s, expected %s %s" % (got.dtype, got.tolist(), want.dtype, want.tolist())
    return None


def main():
    cov, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261207)
    # 1-grams 4, 2-grams 3, 3-grams 2; columns permuted
    pool = [3, 1, 4, 7,  1, 4, 4, 1, 2, 2,  1, 4, 1, 2, 2, 2]
    base = dict(ngram_counts=[0, 4, 10], ngram_indexes=[8, 0, 3, 5, 1, 7, 2, 6, 4],
                pool_int64s=pool)
    wts = [0.5, 2.0, 1.5, 1.0, 0.25, 3.0, 1.0, 0.75, 2.5]
    x1 = rng.integers(0, 6, 40).astype(np.int64)
    x2 = rng.integers(0, 6, (3, 25)).astype(np.int32)
    cases = []
    for mode in ("TF", "IDF", "TFIDF"):
        for w in (None, wts):
            for skip in (0, 2):
                tag = "%s_%s_skip%d" % (mode.lower(), "w" if w else "now", skip)
                cases.append((tag + "_1d", x1, w, dict(base, mode=mode, min_gram_length=1,
                                                       max_gram_length=3, max_skip_count=skip)))
                cases.append((tag + "_2d", x2, w, dict(base, mode=mode, min_gram_length=2,
                                                       max_gram_length=3, max_skip_count=skip)))
    cases.append(("tf_empty_row", np.zeros((2, 0), np.int64), None,
                  dict(base, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=1)))
    cases.append(("tf_skip_past_row", x1[:5].copy(), None,
                  dict(base, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=50)))
    fails = 0
    for name, x, w, a in cases:
        why = case(cov, work, name, x, w, **a)
        fails += bool(why)
        print("%s %s%s" % ("FAIL" if why else "ok  ", name, ": " + why if why else ""))
    print("%d TfIdfVectorizer cases, %d failures" % (len(cases), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
