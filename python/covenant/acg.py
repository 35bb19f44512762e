"""ACGs (accelerator descriptions, acg/README.md) as Python dicts.

A dict here is an ACG's canonical JSON (`covenant acg fmt`): every default
spelled out, members in a fixed order. Loading validates: an invalid file
or dict raises covenant.Error located by file, line and JSON path.
"""

import ctypes
import json
import os

from . import _lib
from ._lib import check, encode, lib, take_string


def _canonical(handle):
    out = ctypes.c_void_p()
    check(lib.cov_acg_to_json(handle, ctypes.byref(out), None))
    return json.loads(take_string(out))


def _load_handle(target, name=None):
    """An opened cov_acg * for a name, a path or a dict (caller frees it)."""
    h = ctypes.c_void_p()
    if isinstance(target, dict):
        text = json.dumps(target).encode("utf-8")
        check(lib.cov_acg_load_buffer(text, len(text), encode(name or target.get("name", "<dict>")),
                                      ctypes.byref(h)))
    elif isinstance(target, (str, bytes, os.PathLike)):
        check(lib.cov_acg_load_target(encode(os.fspath(target)), ctypes.byref(h)))
    else:
        raise TypeError("covenant: an ACG is a target name, a path or a dict, not %s" % type(target).__name__)
    return h


def load_acg(target):
    """The ACG `target` (a shipped target name such as "npu-16x16", a path to
    a .json file, or a dict) validated, as its canonical dict.

    Raises covenant.Error for an invalid ACG, naming the file, line and
    JSON path of each problem (e.diagnostics lists them all)."""
    h = _load_handle(target)
    try:
        return _canonical(h)
    finally:
        lib.cov_acg_free(h)


def check_acg(target):
    """Validates an ACG (name, path or dict) as `covenant acg check` does;
    returns None, or raises covenant.Error listing every problem."""
    load_acg(target)


def _value_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "x".join(str(int(x)) for x in v)
    return str(v)


def derive(base, changes, notes=False):
    """A design derived from `base` (a name, path or dict) as an exploration
    study derives it (explore/README.md): `changes` maps sweep paths to one
    value each, e.g. {"pe_array.dims": (8, 8), "ibuf.capacity": "64KiB"};
    dims are tuples or "8x8", sizes ints or "64KiB". The derived-parameter
    rules apply (a systolic array's tile and throughput follow its dims,
    areas scale). Returns the validated canonical dict, or (dict, notes)
    with notes=True (what the rules changed, "" when nothing)."""
    doc = load_acg(base)
    text = json.dumps(doc).encode("utf-8")
    specs = ["%s=%s" % (k, _value_text(v)) for k, v in changes.items()]
    arr = (ctypes.c_char_p * max(1, len(specs)))(*[s.encode("utf-8") for s in specs])
    out, note = ctypes.c_void_p(), ctypes.c_void_p()
    check(lib.cov_explore_derive(text, len(text), encode(doc.get("name", "<acg>")), arr, len(specs),
                                 ctypes.byref(out), ctypes.byref(note)))
    acg = json.loads(take_string(out))
    n = take_string(note) or ""
    return (acg, n) if notes else acg


def acg_name(target):
    """The name an ACG (name, path or dict) declares."""
    return load_acg(target)["name"]
