#!/usr/bin/env python3
"""Writes the ONNX backend node test data with python3-onnx's own generator.

    /usr/bin/python3 onnx_gen.py OUTDIR

Debian's numpy 1.24 removed the np.float/np.int/np.bool/np.object aliases
that onnx 1.12's test case modules still use; they are restored (to the
builtins they always meant) before the generator is imported.
"""
import os
import sys
import warnings

import numpy as np

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # numpy warns on probing the removed names
    for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
        if not hasattr(np, alias):
            setattr(np, alias, builtin)

from onnx.backend.test import cmd_tools  # noqa: E402  (after the aliases)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: onnx_gen.py OUTDIR")
    out = sys.argv[1]
    stamp = os.path.join(out, "GENERATED")
    if os.path.exists(stamp):
        return
    sys.argv = [sys.argv[0], "generate-data", "-o", out]
    cmd_tools.main()
    with open(stamp, "w") as f:
        f.write("onnx %s\n" % __import__("onnx").__version__)


if __name__ == "__main__":
    main()
