"""covenant: the retargetable deep-learning accelerator compiler, from Python.

A thin layer over libcovenant.so (ctypes): numpy arrays in and out, ACGs
as dicts, reports and study results as records or pandas DataFrames, and
the library's located errors as covenant.Error.

    import covenant, numpy as np
    x = np.load("examples/convnet_input.npy")
    r = covenant.run("examples/convnet.onnx", target="npu-16x16", inputs=[x])
    r.outputs          # {name: numpy array}
    r.report           # one dict per layer group: cycles, utilisation, where it ran
    covenant.load_acg("npu-16x16")                    # a dict, every default spelled out
    covenant.derive("npu-16x16", {"pe_array.dims": (8, 8)})
    covenant.map_layer("resnet50_res3_1x1", target="npu-16x16")["schedule"]["cost"]
    covenant.explore("npu-16x16", {"pe_array.dims": ["8x8", "16x16"]}, suite=["convnet_layer1"])

See python/README.md and examples/python_tutorial.py.
"""

from ._lib import Error
from .acg import acg_name, check_acg, derive, load_acg
from .explore import explore, read_study
from .mapper import map_layer
from .model import Model, RunResult, run, run_models

__all__ = ["Error", "Model", "RunResult", "acg_name", "check_acg", "derive", "explore", "load_acg", "map_layer",
           "read_study", "run", "run_models"]
