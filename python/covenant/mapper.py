"""The mapper: a suite layer scheduled on an ACG, with its cost breakdown
and the next best alternatives, as data."""

import ctypes
import json
import os

from . import _lib
from .acg import _load_handle
from ._lib import check, encode, lib, take_string


def map_layer(layer, target="npu-16x16", exhaustive=False, budget=0, scale=1, suite=None):
    """Maps the suite layer `layer` (`covenant layers` lists them) on
    `target` (a name, path or ACG dict) and returns the schedule as a dict
    (cov_schedule_json, include/covenant/mapper.h): "schedule" (compute
    node, one-line form, loops, transfers, cost with compute / epilogue /
    exposed-transfer cycles, bytes per level, utilisation), "alternatives"
    (the next best candidates, same form), "dump" (the textual scheduled
    IR), evaluations and candidates of the search.

    exhaustive: enumerate every candidate (the cost model's optimum);
    budget: most cost-model evaluations (0: none); scale divides the
    layer's sizes (reduced-size tests); suite: a suite file (None: the
    shipped one)."""
    acg = _load_handle(target)
    layer_h, sched = ctypes.c_void_p(), ctypes.c_void_p()
    try:
        check(lib.cov_layer_from_suite(encode(os.fspath(suite)) if suite else None, encode(layer), scale,
                                       ctypes.byref(layer_h)))
        opts = _lib._MapOptions(exhaustive=1 if exhaustive else 0, budget=budget, beam=0)
        check(lib.cov_map(layer_h, acg, ctypes.byref(opts), ctypes.byref(sched)))
        out = ctypes.c_void_p()
        check(lib.cov_schedule_json(sched, ctypes.byref(out), None))
        return json.loads(take_string(out))
    finally:
        lib.cov_schedule_free(sched)
        lib.cov_layer_free(layer_h)
        lib.cov_acg_free(acg)
