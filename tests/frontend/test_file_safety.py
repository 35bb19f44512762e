#!/usr/bin/env python3
"""Hostile ONNX inputs: external data, memory limits, messages.

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


def limited(cmd, mem_bytes=1 << 30):
    """cmd under an address-space limit, so that a regression fails fast
    instead of taking gigabytes from the machine."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    # AddressSanitizer reserves terabytes of shadow address space: no cap
    # there (scripts/test.sh sets ASAN_OPTIONS for the sanitizer build)
    asan = "ASAN_OPTIONS" in os.environ
    return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=None if asan else cap,
                          timeout=120)


def cos_model(name, n, node="big_fill"):
    from onnx import numpy_helper
    shape = numpy_helper.from_array(np.array([n], dtype=np.int64), "shape")
    nd = helper.make_node("ConstantOfShape", ["shape"], ["y"], name=node,
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5]))
    g = helper.make_graph([nd], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = os.path.join(WORK, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def memory_limit_constant_of_shape():
    """A ~120-byte model asking for 4.2 GB: refused before allocating,
    naming the node and the limit; a small one still runs."""
    path = cos_model("cos_big", 1050000000)
    assert os.path.getsize(path) < 200
    for cmd in ("run", "inspect"):
        args = [COV, cmd, path] + (["--target", "ref"] if cmd == "run" else [])
        r = limited(args)
        assert r.returncode == 1, (cmd, r.returncode, r.stderr)
        assert "node 'big_fill' (ConstantOfShape): output 'y' would need 4200000000 bytes, " \
               "more than the memory limit of 2147483648 bytes (--max-memory" in r.stderr, r.stderr
    small = cos_model("cos_small", 300000)
    out = os.path.join(WORK, "cos.npy")
    r = limited([COV, "run", small, "--target", "ref", "-o", out])
    assert r.returncode == 0, r.stderr
    y = np.load(out)
    assert y.shape == (300000,) and np.all(y == np.float32(2.5)), y
    r = limited([COV, "run", small, "--target", "ref", "--max-memory", "1MiB"])
    assert r.returncode == 1 and "more than the memory limit of 1048576 bytes" in r.stderr, r.stderr
    r = limited([COV, "run", small, "--target", "ref", "--max-memory", "lots"])
    assert r.returncode == 2 and "--max-memory: 'lots' is not a size" in r.stderr, r.stderr


def sparse_ext_model(name, n_tensors, rows, cols):
    """A model of a few hundred bytes whose n_tensors initializers (f32
    rows x cols each, summed) all read one sparse external file."""
    d = fresh(name)
    nbytes = rows * cols * 4
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.truncate(nbytes)
    inits, nodes, prev = [], [], "x"
    for i in range(n_tensors):
        t = TensorProto(name="w%d" % i, data_type=TensorProto.FLOAT, dims=[rows, cols])
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", "w.bin"
        inits.append(t)
        nodes.append(helper.make_node("Add", [prev, t.name], ["s%d" % i]))
        prev = "s%d" % i
    g = helper.make_graph(nodes, "sparse",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def memory_limit_external_data():
    """A ~300-byte model with a 3.2 GB sparse external file: --max-memory
    bounds each initializer before it is read, and all of them together
    may not declare more than a model file may hold (2 GiB)."""
    path = sparse_ext_model("sparse_one", 1, 20000, 40000)
    assert os.path.getsize(path) < 400
    r = limited([COV, "inspect", path, "--max-memory", "1MiB"])
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "initializer 'w0': holds 3200000000 bytes, more than the memory limit of 1048576 " \
           "bytes (--max-memory; nothing was read)" in r.stderr, r.stderr
    # two of 1.2 GB each: each under the default 2 GiB limit, 2.4 GB in all
    path = sparse_ext_model("sparse_two", 2, 10000, 30000)
    r = limited([COV, "inspect", path])
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "the model's initializers declare more than 2147483648 bytes in all" in r.stderr, r.stderr


def memory_limit_codelet_run():
    """codelet run gemm -s a=20000x20000 -s b=20000x20000: 3.2 GB of inputs
    refused before any is made."""
    r = limited([COV, "codelet", "run", "gemm", "-s", "a=20000x20000", "-s", "b=20000x20000"])
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "gemm: the inputs need 3200000000 bytes (the largest, 'a', 1600000000), more than " \
           "the memory limit of 2147483648 bytes (--max-memory); nothing was allocated" in r.stderr, r.stderr
    # the output counts too: 3.2 MB of inputs, a 1.6 GB output, a 1 GiB limit
    r = limited([COV, "codelet", "run", "gemm", "-s", "a=20000x20", "-s", "b=20x20000",
                 "--max-memory", "1GiB"])
    assert r.returncode == 1 and "the inputs and outputs need" in r.stderr, r.stderr
    r = limited([COV, "codelet", "run", "gemm", "-s", "a=2x3", "-s", "b=3x4", "--max-memory", "1KiB"])
    assert r.returncode == 0, r.stderr


def ext_messages():
    """Messages about external data say what is wrong."""
    d = fresh("ext_msgs")
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(np.zeros((3, 4), np.float32).tobytes())
    x = np.ones((2, 3), np.float32)
    cases = [
        # location "." is the folder itself, not something outside it
        (dict(location="."), "external data location '.' names the model's folder itself, not a file in it"),
        (dict(location="./"), "names the model's folder itself"),
        # 2^64-1 is a valid integer, just past the file's end; 2^64 is too large
        (dict(location="w.bin", length=str(2**64 - 1)),
         "external data range 0+18446744073709551615 runs past the end of"),
        (dict(location="w.bin", offset=str(2**64)),
         "external data offset '18446744073709551616' is too large (more than 2^64-1)"),
        (dict(location="w.bin", length="12x"), "external data length '12x' is not a non-negative integer"),
        # a NUL inside the location: refused, not cut to "w.bin"
        (dict(location="w.bin\x00../../etc/passwd"),
         "the string field 'value' of StringStringEntryProto"),
    ]
    for kw, want in cases:
        path = ext_model(d, kw["location"], offset=kw.get("offset"), length=kw.get("length"))
        rc, err, y = run_ref(path, x)
        assert rc == 1 and want in err, (kw, rc, err)
        assert "outside the model's folder" not in err, (kw, err)
    rc, err, y = run_ref(ext_model(d, "w.bin"), x)
    assert rc == 0 and y is not None and np.all(y == 0), err


def names_escaped():
    """Control bytes in a name read from an input are escaped in messages
    (an ACG's name: ESC sequences would clear or retitle the terminal)."""
    acg = os.path.join(WORK, "ctl.json")
    with open(acg, "w") as f:
        f.write('{"acg_version": 1, "name": "a\\u001b[2Jb\\u0007", "clock_mhz": 1000}')
    r = subprocess.run([COV, "acg", "check", acg], capture_output=True, timeout=60)
    assert r.returncode == 1, r
    assert b"\x1b" not in r.stderr and b"\x07" not in r.stderr, r.stderr
    assert b"invalid name 'a\\x1b[2Jb\\x07'" in r.stderr, r.stderr
    # a 100,000-deep document: the message keeps its reason, the path is cut
    deep = os.path.join(WORK, "deep.json")
    with open(deep, "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    r = subprocess.run([COV, "acg", "check", deep], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r
    assert "bytes left out)..." in r.stderr and r.stderr.rstrip().endswith(
        "invalid JSON: maximum parsing depth reached near '[' (arrays and objects nest at most "
        "2048 deep)"), r.stderr[-300:]
    assert len(r.stderr) < 1024, len(r.stderr)


def main():
    global COV, WORK, PRELOAD
    COV, WORK = sys.argv[1], sys.argv[2]
    PRELOAD = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(WORK, exist_ok=True)
    for fn in (ext_link_refused, ext_swapped_at_open, ext_swap_race,
               memory_limit_constant_of_shape, memory_limit_external_data, memory_limit_codelet_run,
               ext_messages,
               names_escaped):
        check(fn)
    if FAILED:
        print("failed: " + ", ".join(FAILED))
        sys.exit(1)


if __name__ == "__main__":
    main()
