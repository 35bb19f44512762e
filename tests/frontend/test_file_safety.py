#!/usr/bin/env python3
"""Hostile ONNX inputs (issue 18): external data, memory limits, messages.

    /usr/bin/python3 test_file_safety.py COVENANT WORKDIR [SWAP_PRELOAD.so]

Each check builds a small model with onnx.helper and runs `covenant`:
- external data is read from the file checked inside the model's folder and
  nowhere else: a symbolic link to a file outside (at the file, at a folder on
  the way) is refused; a file swapped for such a link just before it is
  opened (SWAP_PRELOAD.so, an LD_PRELOAD shim, makes that moment exact) is
  refused; and a swap loop racing many runs never leaks the outside bytes;
- location '.', a NUL inside a location, a length of 2^64-1 get their own
  clear errors;
- a ConstantOfShape asking for more than the memory limit is refused before
  anything is allocated, naming the node and the limit (--max-memory).
Outputs are compared with numpy. Every check runs; exit status 1 if any failed.
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from onnx import TensorProto, helper

COV = WORK = PRELOAD = None
FAILED = []
RNG = np.random.default_rng(18)


def check(fn):
    try:
        fn()
        print("ok   %s" % fn.__name__)
    except AssertionError as e:
        FAILED.append(fn.__name__)
        print("FAIL %s: %s" % (fn.__name__, e))


def ext_model(folder, location, shape=(3, 4), offset=None, length=None, extra=()):
    """A MatMul x @ w with w stored externally at `location`."""
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(shape))
    t.data_location = TensorProto.EXTERNAL
    kv = [("location", location)]
    if offset is not None:
        kv.append(("offset", offset))
    if length is not None:
        kv.append(("length", length))
    kv += list(extra)
    for k, v in kv:
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, shape[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def run_ref(path, x, env=None, extra=()):
    """(returncode, stderr, output or None) of covenant run --target ref."""
    xin = os.path.join(WORK, "x.npy")
    np.save(xin, x)
    out = os.path.join(WORK, "y.npy")
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([COV, "run", path, "--target", "ref", "-i", xin, "-o", out, *extra],
                       capture_output=True, text=True, env=env, timeout=60)
    y = np.load(out) if r.returncode == 0 and os.path.exists(out) else None
    return r.returncode, r.stderr, y


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def inside_and_secret(d):
    """data.bin inside d, secret.bin outside it: different matrices."""
    w_in = RNG.standard_normal((3, 4)).astype(np.float32)
    w_out = RNG.standard_normal((3, 4)).astype(np.float32) + 100.0
    with open(os.path.join(d, "data.bin"), "wb") as f:
        f.write(w_in.tobytes())
    secret = os.path.join(WORK, d.rstrip("/").split("/")[-1] + "_secret.bin")
    with open(secret, "wb") as f:
        f.write(w_out.tobytes())
    return w_in, w_out, secret


def ext_link_refused():
    d = fresh("link")
    w_in, w_out, secret = inside_and_secret(d)
    path = ext_model(d, "data.bin")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    rc, err, y = run_ref(path, x)
    assert rc == 0 and y is not None and np.allclose(y, x @ w_in, rtol=1e-5), err
    # the file itself a link to a file outside
    os.remove(os.path.join(d, "data.bin"))
    os.symlink(secret, os.path.join(d, "data.bin"))
    rc, err, y = run_ref(path, x)
    assert rc == 1 and y is None, (rc, err)
    assert "outside the model's folder" in err and "symbolic link" in err, err
    # a folder on the way a link to a folder outside
    sub_out = os.path.join(WORK, "link_subdir_outside")
    shutil.rmtree(sub_out, ignore_errors=True)
    os.makedirs(sub_out)
    shutil.copy(secret, os.path.join(sub_out, "data.bin"))
    os.symlink(sub_out, os.path.join(d, "sub"))
    path = ext_model(d, "sub/data.bin")
    rc, err, y = run_ref(path, x)
    assert rc == 1 and y is None and "symbolic link" in err, (rc, err)
    # a FIFO is not a regular file, and opening it must not block
    os.mkfifo(os.path.join(d, "fifo.bin"))
    path = ext_model(d, "fifo.bin")
    rc, err, y = run_ref(path, x)
    assert rc == 1 and "is not a regular file" in err, (rc, err)


def ext_swapped_at_open():
    """data.bin becomes a link to a file outside at the moment it is opened."""
    if not PRELOAD:
        raise AssertionError("no preload shim given")
    d = fresh("swap_at_open")
    w_in, w_out, secret = inside_and_secret(d)
    path = ext_model(d, "data.bin")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    env = dict(os.environ, LD_PRELOAD=PRELOAD, COV_SWAP_FILE=os.path.join(d, "data.bin"),
               COV_SWAP_LINK_TO=secret)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    rc, err, y = run_ref(path, x, env=env)
    assert os.path.islink(os.path.join(d, "data.bin")), "the shim did not swap the file"
    assert y is None or not np.allclose(y, x @ w_out, rtol=1e-4), \
        "the bytes of the file outside the folder reached the output"
    assert rc == 1 and "symbolic link" in err, (rc, err)


def ext_swap_race():
    """A loop swaps data.bin between a file and a link outside while
    covenant runs: no run may compute with the outside bytes."""
    d = fresh("swap_race")
    w_in, w_out, secret = inside_and_secret(d)
    keep = os.path.join(WORK, "swap_race_inside.bin")
    shutil.copy(os.path.join(d, "data.bin"), keep)
    path = ext_model(d, "data.bin")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    swapper = subprocess.Popen([sys.executable, "-c", """
import os, sys
d, keep, secret = sys.argv[1:4]
dst = os.path.join(d, "data.bin")
t = os.path.join(d, ".t")
def fresh():
    try:
        os.remove(t)
    except FileNotFoundError:
        pass
while True:
    fresh(); os.link(keep, t); os.replace(t, dst)  # (a no-op if dst is already that file)
    fresh(); os.symlink(secret, t); os.replace(t, dst)
""", d, keep, secret])
    leaks = ok = refused = 0
    try:
        deadline = time.time() + 8
        runs = 0
        while runs < 150 and time.time() < deadline:
            runs += 1
            rc, err, y = run_ref(path, x)
            if y is not None and np.allclose(y, x @ w_out, rtol=1e-4):
                leaks += 1
            elif y is not None:
                ok += 1
            else:
                refused += 1
    finally:
        alive = swapper.poll() is None
        swapper.kill()
        swapper.wait()
    print("     swap race: %d runs read the folder's file, %d refused, %d leaked" % (ok, refused, leaks))
    assert alive, "the swap loop stopped early"
    assert leaks == 0, "%d runs computed with the file outside the folder" % leaks


def main():
    global COV, WORK, PRELOAD
    COV, WORK = sys.argv[1], sys.argv[2]
    PRELOAD = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(WORK, exist_ok=True)
    for fn in (ext_link_refused, ext_swapped_at_open, ext_swap_race):
        check(fn)
    if FAILED:
        print("failed: " + ", ".join(FAILED))
        sys.exit(1)


if __name__ == "__main__":
    main()
