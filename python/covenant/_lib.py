"""libcovenant.so through ctypes: finding the library, the C prototypes,
and cov_status chains turned into covenant.Error.

The library is found, in order, at $COVENANT_LIBRARY (a path to
libcovenant.so.0), relative to this package as the build installed it
(<prefix>/lib/python3/site-packages/covenant -> <prefix>/lib), or in the
build tree that configured this copy of the package (_config.py). Every
entry point's argument and result types are declared here, so a wrong
call fails in Python rather than in C.
"""

import ctypes
import os

from . import _config

MAX_RANK = 8
# cov_code (include/covenant/status.h), in its order
CODES = ("OK", "INVALID_ARGUMENT", "PARSE_ERROR", "INVALID_INPUT", "NOT_FOUND", "IO_ERROR", "OUT_OF_MEMORY",
         "UNSUPPORTED", "OUT_OF_RANGE", "MAPPING_FAILED", "DEVICE_ERROR", "INTERNAL")


class Error(Exception):
    """A located error from libcovenant (a cov_status chain).

    Attributes of the first diagnostic: code (the cov_code without its
    COV_ prefix, e.g. "INVALID_INPUT"), message, file (the input file as named, or None),
    line and col (1-based, None when unknown), path (a JSON path such as
    "$.compute[0].capabilities[0].tile", a graph node, or an option; None
    when there is none). `diagnostics` lists every diagnostic of the chain
    as dicts with the same keys (a checker reports all errors of a file at
    once). str(error) is the library's own "file:line:col: error: path:
    message" form of each.
    """

    def __init__(self, diagnostics):
        self.diagnostics = diagnostics
        first = diagnostics[0]
        self.code = first["code"]
        self.message = first["message"]
        self.file = first["file"]
        self.line = first["line"]
        self.col = first["col"]
        self.path = first["path"]
        super().__init__("\n".join(d["text"] for d in diagnostics))


class _Loc(ctypes.Structure):
    _fields_ = [("file", ctypes.c_char_p), ("line", ctypes.c_uint), ("col", ctypes.c_uint),
                ("path", ctypes.c_char_p)]


class Tensor(ctypes.Structure):
    """cov_tensor: dtype, rank, shape[COV_MAX_RANK], data (include/covenant/tensor.h)."""
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("shape", ctypes.c_int64 * MAX_RANK),
                ("data", ctypes.c_void_p)]


_status = ctypes.c_void_p
_str = ctypes.c_char_p
_size = ctypes.c_size_t
_ptr = ctypes.c_void_p
_out_str = ctypes.POINTER(ctypes.c_void_p)


class _MapOptions(ctypes.Structure):
    _fields_ = [("exhaustive", ctypes.c_int), ("budget", ctypes.c_int64), ("beam", ctypes.c_int)]


class _ExploreOptions(ctypes.Structure):
    _fields_ = [("base", _str), ("vary", ctypes.POINTER(_str)), ("n_vary", ctypes.c_int),
                ("suite", _str), ("suite_names", _str), ("use_suite", ctypes.c_int),
                ("models", ctypes.POINTER(_str)), ("n_models", ctypes.c_int), ("evaluator", _str),
                ("dtype", _str), ("acc_dtype", _str), ("out_dir", _str), ("jobs", ctypes.c_int),
                ("shard", ctypes.c_int), ("n_shards", ctypes.c_int), ("on_event", _ptr),
                ("event_user", _ptr), ("stop_after", ctypes.c_int)]


class _ModelOptions(ctypes.Structure):
    _fields_ = [("codelets", _ptr), ("no_fold", ctypes.c_int), ("no_fuse", ctypes.c_int),
                ("max_memory", ctypes.c_uint64), ("shapes", _ptr), ("n_shapes", _size),
                ("compute_f32", ctypes.c_int), ("recurrent_cells", ctypes.c_int), ("rebatch", ctypes.c_int64)]


# name: (restype, argtypes)
_PROTOTYPES = {
    "cov_status_code": (ctypes.c_int, [_status]),
    "cov_status_message": (_str, [_status]),
    "cov_status_loc": (_Loc, [_status]),
    "cov_status_next": (_status, [_status]),
    "cov_status_format": (None, [_status, ctypes.c_char_p, _size]),
    "cov_status_free": (None, [_status]),
    "cov_code_name": (_str, [ctypes.c_int]),
    "cov_free": (None, [_ptr]),
    "cov_acg_load_target": (_status, [_str, ctypes.POINTER(_ptr)]),
    "cov_acg_load_buffer": (_status, [_str, _size, _str, ctypes.POINTER(_ptr)]),
    "cov_acg_free": (None, [_ptr]),
    "cov_acg_name": (_str, [_ptr]),
    "cov_acg_to_json": (_status, [_ptr, _out_str, ctypes.POINTER(_size)]),
    "cov_explore_derive": (_status, [_str, _size, _str, ctypes.POINTER(_str), ctypes.c_int, _out_str,
                                     _out_str]),
    "cov_explore_run": (_status, [ctypes.POINTER(_ExploreOptions)]),
    "cov_model_load_file": (_status, [_str, ctypes.POINTER(_ModelOptions), ctypes.POINTER(_ptr)]),
    "cov_model_free": (None, [_ptr]),
    "cov_model_num_inputs": (_size, [_ptr]),
    "cov_model_num_outputs": (_size, [_ptr]),
    "cov_model_input_name": (_str, [_ptr, _size]),
    "cov_model_output_name": (_str, [_ptr, _size]),
    "cov_model_input_info": (_status, [_ptr, _size, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                       ctypes.c_int64 * MAX_RANK]),
    "cov_model_output_info": (_status, [_ptr, _size, ctypes.POINTER(ctypes.c_int),
                                        ctypes.POINTER(ctypes.c_int), ctypes.c_int64 * MAX_RANK]),
    "cov_run_model": (_status, [_str, _ptr, _str, ctypes.POINTER(Tensor), _size, ctypes.POINTER(Tensor), _size,
                                _out_str]),
    "cov_run_models": (_status, [_str, ctypes.POINTER(_ptr), ctypes.POINTER(_str), _size,
                                 ctypes.POINTER(ctypes.POINTER(Tensor)), ctypes.POINTER(_size),
                                 ctypes.POINTER(ctypes.POINTER(Tensor)), ctypes.POINTER(_size), _out_str]),
    "cov_tensor_release": (None, [ctypes.POINTER(Tensor)]),
    "cov_tensor_numel": (ctypes.c_int64, [ctypes.POINTER(Tensor)]),
    "cov_dtype_name": (_str, [ctypes.c_int]),
    "cov_dtype_size": (_size, [ctypes.c_int]),
    "cov_layer_from_suite": (_status, [_str, _str, ctypes.c_int, ctypes.POINTER(_ptr)]),
    "cov_layer_free": (None, [_ptr]),
    "cov_map": (_status, [_ptr, _ptr, ctypes.POINTER(_MapOptions), ctypes.POINTER(_ptr)]),
    "cov_schedule_free": (None, [_ptr]),
    "cov_schedule_json": (_status, [_ptr, _out_str, ctypes.POINTER(_size)]),
}


def _find_library():
    env = os.environ.get("COVENANT_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    tried = []
    if _config.LIBRARY_RELATIVE:
        p = os.path.normpath(os.path.join(here, _config.LIBRARY_RELATIVE))
        if os.path.exists(p):
            return p
        tried.append(p)
    if _config.LIBRARY_ABSOLUTE:
        if os.path.exists(_config.LIBRARY_ABSOLUTE):
            return _config.LIBRARY_ABSOLUTE
        tried.append(_config.LIBRARY_ABSOLUTE)
    raise ImportError("covenant: libcovenant.so not found (tried %s); set COVENANT_LIBRARY to its path"
                      % ", ".join(tried or ["nothing: this copy of the package was not configured"]))


def _load():
    lib = ctypes.CDLL(_find_library())
    for name, (res, args) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


lib = _load()


def _text(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _diagnostics(st):
    out = []
    buf = ctypes.create_string_buffer(4096)
    while st:
        loc = lib.cov_status_loc(st)
        lib.cov_status_format(st, buf, len(buf))
        code = lib.cov_status_code(st)
        out.append({
            "code": CODES[code] if 0 <= code < len(CODES) else str(code),
            "message": _text(lib.cov_status_message(st)),
            "file": _text(loc.file),
            "line": loc.line or None,
            "col": loc.col or None,
            "path": _text(loc.path),
            "text": _text(buf.value),
        })
        st = lib.cov_status_next(st)
    return out


def check(st):
    """Raises Error for a failed cov_status (and frees it); None passes."""
    if not st:
        return
    try:
        diags = _diagnostics(st)
    finally:
        lib.cov_status_free(st)
    raise Error(diags)


def take_string(p):
    """The text of a malloc'ed char * the library returned, released."""
    if not p.value:
        return None
    try:
        return ctypes.string_at(p.value).decode("utf-8")
    finally:
        lib.cov_free(p.value)


def encode(s):
    return None if s is None else os.fsencode(s) if not isinstance(s, bytes) else s
