#!/usr/bin/env python3
"""ONNX backend conformance: every node test case whose operators covenant
supports is run through `covenant run --target ref` and compared with the
expected outputs the ONNX package ships.

    /usr/bin/python3 conformance.py COVENANT DATADIR SKIPLIST [--update] [-j N]

DATADIR is where onnx_gen.py wrote the data (it is generated if missing).
SKIPLIST names, one per line ("case reason"), every case that is expected
not to pass: an operator covenant does not support, a feature of a supported
one that it refuses (with the reason it gives), or a bug in the test data.
The test fails when a case outside the list does not pass (a regression) and
when a listed case passes (the list is stale). --update rewrites the list
from this run: it adds what was not run, keeps listed failures and test data
bugs with their reasons, and never adds a new failure.

A reason that starts with "test data bug:" is checked: DATA_FIXES below
corrects what the reason says is wrong (an input that contradicts the
model's declaration, an expected output computed the wrong way), and the
case must pass on the corrected data.
Comparison: same dtype and shape, values within rtol 1e-3 / atol 1e-7 (the
onnx backend test's defaults), NaNs matching.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, HERE)
import onnx_gen  # noqa: E402  (restores numpy aliases before onnx's test modules)
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

RTOL, ATOL = 1e-3, 1e-7


def supported_ops(cov):
    out = subprocess.run([cov, "inspect", "--ops"], check=True, capture_output=True, text=True)
    return {line.split("\t")[0] for line in out.stdout.splitlines() if line}


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def expected_array(t):
    a = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16:
        # covenant writes bf16 as its uint16 bit patterns; compare as floats.
        a = np.asarray(a)
    return a


def as_float_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def compare(got, t):
    want = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16:
        got = as_float_bf16(got.view(np.uint16)) if got.dtype == np.uint16 else got
        want = as_float_bf16(np.frombuffer(t.raw_data, dtype=np.uint16).reshape(t.dims)) \
            if t.raw_data else as_float_bf16(np.array(t.int32_data, dtype=np.uint16).reshape(t.dims))
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        bad = np.count_nonzero(got != want)
        return None if bad == 0 else "%d of %d elements differ" % (bad, want.size)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaNs differ"
    ok = np.isclose(g, w, rtol=RTOL, atol=ATOL) | (np.isnan(g) & np.isnan(w))
    if ok.all():
        return None
    err = np.abs(g - w)[~ok]
    return "%d of %d elements off (max abs error %.3g)" % (err.size, w.size, err.max())


# Operators an inference compiler leaves out, by class: the cases they are
# in are the skips the conformance goal excuses, with test data bugs.
OP_CLASSES = {
    "training op": {"Adagrad", "Adam", "Momentum", "Gradient"},
    "string op": {"StringNormalizer", "StringConcat", "StringSplit",
                  "RegexFullMatch", "LabelEncoder"},
    "random-number op": {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike",
                         "RandomUniform", "RandomUniformLike"},
}


def op_class(op):
    return next((k for k, v in OP_CLASSES.items() if op in v), None)


def skip_class(reason):
    """The excused class of a skip's reason, or "other"."""
    if reason.startswith(DATA_BUG):
        return "test data bug"
    if reason.startswith("unsupported operator: "):
        ops = reason[len("unsupported operator: "):].split(" (")[0].split(", ")
        kinds = {op_class(op) for op in ops}
        return kinds.pop() if len(kinds) == 1 and None not in kinds else "other"
    if "type STRING" in reason:
        return "string op"
    if "random draw" in reason:
        return "random-number op"
    return "other"


def run_case(cov, case_dir, ops, data=None):
    """Returns (status, detail): pass, fail, or skip. data: the test data
    folder (default: the case's test_data_set_0)."""
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    unsupported = sorted({n.op_type for n in model.graph.node
                          if n.op_type not in ops or n.domain not in ("", "ai.onnx")})
    if unsupported:
        kinds = sorted({op_class(op) for op in unsupported} - {None})
        return "skip", "unsupported operator: " + ", ".join(unsupported) + \
            ("" if not kinds else " (%s)" % ", ".join(kinds))
    data = data or os.path.join(case_dir, "test_data_set_0")
    inputs = sorted(f for f in os.listdir(data) if f.startswith("input_"))
    outputs = sorted(f for f in os.listdir(data) if f.startswith("output_"))
    inputs.sort(key=lambda f: int(f[6:-3]))
    outputs.sort(key=lambda f: int(f[7:-3]))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [cov, "run", os.path.join(case_dir, "model.onnx"), "--target", "ref"]
        for f in inputs:
            cmd += ["--input", os.path.join(data, f)]
        cmd += ["-o", tmp]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "fail", "timed out"
        if r.returncode != 0:
            # "path: error: node 'x' (Op): why" -> "node 'x' (Op): why"
            lines = [ln.split("error: ", 1)[-1] for ln in r.stderr.strip().splitlines()]
            msg = "; ".join(lines[:3])
            # A refusal with a reason (exit 1, no sanitizer report) is a skip
            # candidate; anything else is a failure.
            if r.returncode == 1 and "Sanitizer" not in r.stderr and msg:
                return "refused", msg
            return "fail", "exit %d: %s" % (r.returncode, msg)
        for i, f in enumerate(outputs):
            kind = model.graph.output[i].type.WhichOneof("value")
            if kind in ("sequence_type", "optional_type"):
                why = compare_sequence(os.path.join(tmp, "output_%d" % i), os.path.join(data, f),
                                       kind == "optional_type")
            else:
                path = os.path.join(tmp, "output_%d.npy" % i)
                if not os.path.exists(path):
                    return "fail", "output %d was not written" % i
                why = compare(np.load(path), read_pb(os.path.join(data, f)))
            if why:
                return "fail", "output %d: %s" % (i, why)
    return "pass", ""


def compare_sequence(folder, pb, optional):
    """A sequence (optional) output, written as folder/0.npy, 1.npy, ...,
    against the SequenceProto (OptionalProto) the test data holds."""
    if not os.path.isdir(folder):
        return "was not written (expected a folder of .npy files)"
    p = onnx.OptionalProto() if optional else onnx.SequenceProto()
    with open(pb, "rb") as f:
        p.ParseFromString(f.read())
    none = os.path.exists(os.path.join(folder, "NONE"))  # an optional sequence holding none
    if optional and p.HasField("sequence_value"):  # an optional of a sequence
        if none:
            return "holds none, expected a sequence"
        want = list(p.sequence_value.tensor_values)
    elif optional:
        want = [p.tensor_value] if p.HasField("tensor_value") else []
    else:
        want = list(p.tensor_values)
    if none and not (optional and p.elem_type == onnx.OptionalProto.SEQUENCE
                     and not p.HasField("sequence_value")):
        return "holds none, expected %s" % ("a value" if optional else "a sequence")
    got = sorted((f for f in os.listdir(folder) if f.endswith(".npy")), key=lambda f: int(f[:-4]))
    if len(got) != len(want):
        return "%d elements, expected %d" % (len(got), len(want))
    for k, (g, w) in enumerate(zip(got, want)):
        why = compare(np.load(os.path.join(folder, g)), w)
        if why:
            return "element %d: %s" % (k, why)
    return None


DATA_BUG = "test data bug:"


def bf16_rne(f32):
    """float32 -> bfloat16 bits, rounded to nearest even (NaN stays quiet)."""
    b = np.asarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f32)
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def fix_declared(model, inputs, outputs):
    """Inputs as the model declares them: the data's bits retyped where the
    element sizes agree (UINT16 data for a BFLOAT16 input) and broadcast to
    the declared shape (for an input only whose dtype matters, as CastLike's
    'like')."""
    for i, decl in enumerate(model.graph.input):
        tt = decl.type.tensor_type
        t = inputs[i]
        size = 2 if t.data_type == onnx.TensorProto.BFLOAT16 else \
            onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type].itemsize
        raw = t.raw_data or numpy_helper.to_array(t).tobytes()
        if t.data_type != tt.elem_type:
            t.data_type = tt.elem_type
        dims = [d.dim_value for d in tt.shape.dim]
        if list(t.dims) != dims:
            a = np.frombuffer(raw, dtype=np.dtype("V%d" % size)).reshape(t.dims)
            t.raw_data = np.ascontiguousarray(np.broadcast_to(a, dims)).tobytes()
            del t.dims[:]
            t.dims.extend(dims)


def fix_bf16_rne(model, inputs, outputs):
    """The expected bfloat16 output rounded to nearest even from the float32
    input, instead of truncated."""
    x = numpy_helper.to_array(inputs[0]).astype(np.float32)
    y = outputs[0]
    y.data_type = onnx.TensorProto.BFLOAT16
    y.raw_data = bf16_rne(x).tobytes()


# What each "test data bug:" reason says is wrong, corrected.
DATA_FIXES = {
    "test_cast_FLOAT_to_BFLOAT16": [fix_bf16_rne],
    "test_castlike_FLOAT_to_BFLOAT16": [fix_declared, fix_bf16_rne],
    "test_castlike_FLOAT_to_BFLOAT16_expanded": [fix_declared, fix_bf16_rne],
    "test_castlike_BFLOAT16_to_FLOAT": [fix_declared],
    "test_castlike_BFLOAT16_to_FLOAT_expanded": [fix_declared],
}


def check_data_bug(cov, case_dir, ops):
    """None when the case passes on its data corrected by DATA_FIXES, else
    why not."""
    case = os.path.basename(case_dir)
    if case not in DATA_FIXES:
        return "listed as a test data bug, but DATA_FIXES has no correction for it"
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    data = os.path.join(case_dir, "test_data_set_0")
    names = sorted(os.listdir(data))
    ins = sorted((f for f in names if f.startswith("input_")), key=lambda f: int(f[6:-3]))
    outs = sorted((f for f in names if f.startswith("output_")), key=lambda f: int(f[7:-3]))
    inputs = [read_pb(os.path.join(data, f)) for f in ins]
    outputs = [read_pb(os.path.join(data, f)) for f in outs]
    for fix in DATA_FIXES[case]:
        fix(model, inputs, outputs)
    with tempfile.TemporaryDirectory() as tmp:
        for f, t in list(zip(ins, inputs)) + list(zip(outs, outputs)):
            with open(os.path.join(tmp, f), "wb") as out:
                out.write(t.SerializeToString())
        status, detail = run_case(cov, case_dir, ops, tmp)
    return None if status == "pass" else "with its data corrected: %s %s" % (status, detail)


def load_skips(path):
    skips = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#"):
                    continue
                name, _, reason = line.partition(" ")
                skips[name] = reason.strip()
    return skips


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("covenant")
    ap.add_argument("datadir")
    ap.add_argument("skiplist")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-v", action="store_true", help="print every case")
    a = ap.parse_args()
    os.makedirs(a.datadir, exist_ok=True)
    if not os.path.exists(os.path.join(a.datadir, "GENERATED")):
        subprocess.run([sys.executable, os.path.join(HERE, "onnx_gen.py"), a.datadir], check=True)
    node_dir = os.path.join(a.datadir, "node")
    cases = sorted(os.listdir(node_dir))
    ops = supported_ops(a.covenant)
    skips = load_skips(a.skiplist)
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as pool:
        results = list(pool.map(lambda c: run_case(a.covenant, os.path.join(node_dir, c), ops),
                                cases))
    counts = {"pass": 0, "fail": 0, "skip": 0}
    problems, new_skips = [], {}
    for case, (status, detail) in zip(cases, results):
        listed = case in skips
        data_bug = listed and skips[case].startswith(DATA_BUG)
        if status == "pass":
            counts["pass"] += 1
            if listed:
                problems.append("%s: passes but is in the skip list (remove it)" % case)
        elif data_bug:
            new_skips[case] = skips[case]
            why = check_data_bug(a.covenant, os.path.join(node_dir, case), ops)
            if why:
                counts["fail"] += 1
                problems.append("%s: FAIL: %s" % (case, why))
            else:
                counts["skip"] += 1
        elif status in ("skip", "refused"):
            counts["skip"] += 1
            new_skips[case] = detail
            if not listed:
                problems.append("%s: not run (%s) but not in the skip list" % (case, detail))
        elif listed:
            counts["skip"] += 1  # a known, explained difference
            new_skips[case] = skips[case]
        else:
            counts["fail"] += 1
            problems.append("%s: FAIL: %s" % (case, detail))
        if a.v:
            print("%-60s %s %s" % (case, status, detail))
    for case in sorted(set(skips) - set(cases)):
        problems.append("%s: in the skip list but not generated by this onnx" % case)
    if a.update:
        with open(a.skiplist, "w") as f:
            f.write("# ONNX backend node cases covenant does not run, with the reason.\n"
                    "# Generated by tests/frontend/conformance.py --update; a case that\n"
                    "# starts passing must be removed, one that stops must not be added\n"
                    "# without a reason.\n")
            for case in sorted(new_skips):
                f.write("%s %s\n" % (case, new_skips[case]))
    for p in problems:
        print(p)
    classes = {}
    for case in new_skips:
        classes.setdefault(skip_class(new_skips[case]), []).append(case)
    for case in sorted(classes.get("other", [])):
        print("skipped outside the excused classes: %s: %s" % (case, new_skips[case]))
    print("conformance: %d cases: %d passed, %d failed, %d skipped (%s; each test data bug "
          "passes on its corrected data)" %
          (len(cases), counts["pass"], counts["fail"], counts["skip"],
           ", ".join("%d %s" % (len(v), k) for k, v in sorted(classes.items()))))
    if not a.update and problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
