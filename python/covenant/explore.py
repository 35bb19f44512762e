"""Exploration studies (explore/README.md): designs derived from a base ACG
by sweeping parameters, each evaluated on a set of layers."""

import csv
import ctypes
import os
import tempfile

from . import _lib
from ._lib import check, encode, lib


def _values(v):
    if isinstance(v, (str, bytes)):
        return str(v)
    out = []
    for x in v:
        if isinstance(x, (list, tuple)):
            out.append("x".join(str(int(d)) for d in x))
        elif isinstance(x, bool):
            out.append("true" if x else "false")
        else:
            out.append(str(x))
    return ",".join(out)


def _number(cell):
    if cell == "":
        return None
    for conv in (int, float):
        try:
            return conv(cell)
        except ValueError:
            pass
    return cell


def read_study(out_dir, table="results"):
    """A study folder's results.csv (one row per design x layer) or
    summary.csv (table="summary", one row per design) as a pandas
    DataFrame, or as a list of dicts (numbers converted, empty cells None)
    where pandas is not installed."""
    path = os.path.join(os.fspath(out_dir), table + ".csv")
    try:
        import pandas
    except ImportError:
        with open(path, newline="") as f:
            return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return pandas.read_csv(path)


def explore(base, vary, suite=None, models=(), evaluator=None, out_dir=None, jobs=1, dtype=None,
            table="results"):
    """Runs (or resumes) a study and returns its table (read_study).

    base: a target name or ACG path; vary: {path: values}, e.g.
    {"pe_array.dims": ["8x8", (16, 16)], "ibuf.capacity": ["32KiB", "64KiB"]}
    (the first key changes slowest); suite: a list of suite layer names
    (or True for the whole suite); models: ONNX files whose compute layer
    groups are evaluated; evaluator: "npusim", "mapper" or "roofline"
    (None: the best that takes every layer); out_dir: the study folder
    (None: a temporary one, removed afterwards); jobs: worker processes."""
    specs = [("%s=%s" % (k, _values(v))).encode("utf-8") for k, v in vary.items()]
    model_paths = [os.fsencode(os.fspath(m)) for m in models]
    vary_arr = (ctypes.c_char_p * max(1, len(specs)))(*specs)
    model_arr = (ctypes.c_char_p * max(1, len(model_paths)))(*model_paths)
    names = None if suite in (None, True) else ",".join(suite).encode("utf-8")

    def run_in(d):
        o = _lib._ExploreOptions(base=encode(os.fspath(base)), vary=vary_arr, n_vary=len(specs),
                                 suite_names=names, use_suite=1 if suite else 0, models=model_arr,
                                 n_models=len(model_paths), evaluator=encode(evaluator), dtype=encode(dtype),
                                 out_dir=encode(d), jobs=jobs)
        check(lib.cov_explore_run(ctypes.byref(o)))
        return read_study(d, table)

    if out_dir is not None:
        return run_in(os.fspath(out_dir))
    with tempfile.TemporaryDirectory(prefix="covenant-study-") as d:
        return run_in(d)
