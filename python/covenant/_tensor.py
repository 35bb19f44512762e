"""numpy arrays to and from cov_tensor (include/covenant/tensor.h).

Inputs are passed without a copy: a C-contiguous array of the model's
dtype is handed to the library as it is (converted first where it is not,
within its kind only, so float64 data becomes float32 but an integer array
is not silently read as floats). Outputs are copied out of
the library's buffers, which are then released.
"""

import ctypes

import numpy as np

from . import _lib

# cov_dtype (include/covenant/types.h) -> numpy; bf16 and the FP8 formats
# have no numpy type and travel as their bit patterns (uint16, uint8).
_DTYPES = {1: np.float32, 2: np.float16, 3: np.uint16, 4: np.int8, 5: np.uint8, 6: np.int32, 7: np.int64,
           8: np.bool_, 9: np.float64, 10: np.uint8, 11: np.uint8}


def numpy_dtype(cov_dtype):
    if cov_dtype not in _DTYPES:
        raise ValueError("covenant: no numpy dtype for cov_dtype %d" % cov_dtype)
    return np.dtype(_DTYPES[cov_dtype])


def to_tensor(array, cov_dtype, what):
    """(cov_tensor viewing `array`, the array kept alive) in the given dtype."""
    want = numpy_dtype(cov_dtype)
    a = np.asarray(array)
    if a.dtype != want:
        if a.dtype.kind != want.kind or not np.can_cast(a.dtype, want, casting="same_kind"):
            raise TypeError("covenant: %s is %s; the model takes %s" % (what, a.dtype, want))
        a = a.astype(want)
    a = np.ascontiguousarray(a)
    if a.ndim > _lib.MAX_RANK:
        raise ValueError("covenant: %s has rank %d (at most %d)" % (what, a.ndim, _lib.MAX_RANK))
    t = _lib.Tensor()
    t.dtype = cov_dtype
    t.rank = a.ndim
    for i, d in enumerate(a.shape):
        t.shape[i] = d
    t.data = a.ctypes.data if a.size else None
    return t, a


def from_tensor(t):
    """A numpy copy of a library-allocated tensor, which is released."""
    try:
        shape = tuple(t.shape[i] for i in range(t.rank))
        dt = numpy_dtype(t.dtype)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not t.data or n == 0:
            return np.zeros(shape, dtype=dt)
        raw = ctypes.string_at(t.data, n * dt.itemsize)
        return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    finally:
        _lib.lib.cov_tensor_release(ctypes.byref(t))
