"""ONNX models: load, inspect, run on any target with numpy in and out."""

import ctypes
import json
import os

from . import _lib, _tensor
from ._lib import check, encode, lib, take_string


class RunResult:
    """What covenant.run returns.

    outputs: {output name: numpy array}, in the model's output order.
    report: the per-group report as a list of dicts, one per program run
        or call left to the CPU (kind "group" / "call" / "cpu", group, node,
        codelets, cycles, mapper_estimate, estimate_error_pct,
        array_utilization, simd_utilization, macs, dram_bytes, onchip_bytes,
        narrowed_error, energy_pj, energy_estimate_pj, where); [] where the
        target keeps none (ref, GPUs).
    cycles: simulated cycles of the whole run (None without a report).
    """

    def __init__(self, outputs, report):
        self.outputs = outputs
        self.report = report.get("rows", []) if report else []
        self.cycles = report.get("cycles") if report else None
        self.summary = {k: v for k, v in report.items() if k != "rows"} if report else {}

    def report_table(self):
        """The report as a pandas DataFrame (records when pandas is absent)."""
        try:
            import pandas
        except ImportError:
            return list(self.report)
        return pandas.DataFrame.from_records(self.report)

    def __repr__(self):
        return "RunResult(outputs=%s, cycles=%s)" % ({k: v.shape for k, v in self.outputs.items()}, self.cycles)


class Model:
    """An ONNX model read, shape-inferred and fused into layer groups by
    covenant's frontend. Immutable: several threads may run it at once.

    inputs / outputs: lists of (name, numpy dtype, shape), shapes as the
    model declares them (-1 for a symbolic dim; an output's shape is None
    where inference left it unknown)."""

    def __init__(self, path, max_memory=0):
        self._h = ctypes.c_void_p()
        self.path = os.fspath(path)
        opts = _lib._ModelOptions(max_memory=max_memory)
        check(lib.cov_model_load_file(encode(self.path), ctypes.byref(opts), ctypes.byref(self._h)))
        ins = [self._info(lib.cov_model_input_name, lib.cov_model_input_info, i)
               for i in range(lib.cov_model_num_inputs(self._h))]
        outs = [self._info(lib.cov_model_output_name, lib.cov_model_output_info, i)
                for i in range(lib.cov_model_num_outputs(self._h))]
        self._in_dtypes = [dt for _, dt, _ in ins]
        self.inputs = [(n, _tensor.numpy_dtype(dt) if dt else None, s) for n, dt, s in ins]
        self.outputs = [(n, _tensor.numpy_dtype(dt) if dt else None, s) for n, dt, s in outs]

    def _info(self, name_fn, info_fn, i):
        dt, rank, shape = ctypes.c_int(), ctypes.c_int(), (ctypes.c_int64 * _lib.MAX_RANK)()
        check(info_fn(self._h, i, ctypes.byref(dt), ctypes.byref(rank), shape))
        dims = tuple(shape[k] for k in range(rank.value)) if rank.value >= 0 else None
        return (_lib._text(name_fn(self._h, i)), dt.value, dims)

    def close(self):
        if self._h:
            lib.cov_model_free(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the module's globals may be gone
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _bind_inputs(self, inputs):
        names = [n for n, _, _ in self.inputs]
        if isinstance(inputs, dict):
            unknown = sorted(set(inputs) - set(names))
            if unknown:
                raise KeyError("covenant: %s: no input named %s (inputs: %s)"
                               % (self.path, ", ".join(unknown), ", ".join(names)))
            missing = [n for n in names if n not in inputs]
            if missing:
                raise KeyError("covenant: %s: input %s not given" % (self.path, ", ".join(missing)))
            arrays = [inputs[n] for n in names]
        else:
            arrays = list(inputs)
            if len(arrays) != len(names):
                raise ValueError("covenant: %s takes %d inputs (%s), got %d"
                                 % (self.path, len(names), ", ".join(names), len(arrays)))
        tensors = (_lib.Tensor * max(1, len(arrays)))()
        keep = []
        for i, (a, (name, _, _), cov_dt) in enumerate(zip(arrays, self.inputs, self._in_dtypes)):
            tensors[i], arr = _tensor.to_tensor(a, cov_dt, "input '%s'" % name)
            keep.append(arr)
        return tensors, keep

    def run(self, target="npu-16x16", inputs=()):
        """Runs the model on `target` (a shipped target name, an ACG path, or
        "ref" for the CPU reference interpreter) and returns a RunResult.

        `inputs` is {name: array} or a list in the model's input order;
        arrays are converted to the model's dtypes where numpy can do so
        safely. On an NPU target every compute layer group is mapped,
        compiled and simulated (the report says where each ran); on a GPU
        target the model is compiled whole and run on the device (an
        Error with code DEVICE_ERROR where there is none)."""
        tensors, keep = self._bind_inputs(inputs)
        n_out = len(self.outputs)
        outs = (_lib.Tensor * max(1, n_out))()
        report = ctypes.c_void_p()
        check(lib.cov_run_model(encode(os.fspath(target)), self._h, encode(self.path), tensors, len(keep), outs,
                                n_out, ctypes.byref(report)))
        del keep
        text = take_string(report)
        arrays = {}
        for i, (name, _, _) in enumerate(self.outputs):
            arrays[name] = _tensor.from_tensor(outs[i])
        return RunResult(arrays, json.loads(text) if text else None)


def run(model_path, target="npu-16x16", inputs=()):
    """Loads the ONNX model at `model_path` and runs it on `target`:
    covenant.run("examples/convnet.onnx", target="npu-16x16",
    inputs={"input": x}).outputs["output"]. See Model.run."""
    with Model(model_path) as m:
        return m.run(target, inputs)


def run_models(models, target="npu-4core", inputs=None):
    """Co-schedules several models on one multi-core NPU (each on cores of
    its own, all at once sharing DRAM; backends/npu-sim/README.md
    "Co-scheduled models"): `models` are Model objects or paths, `inputs`
    one input set per model as Model.run takes it. Returns (results, report):
    one RunResult per model (its outputs and its per-group report) and the
    co-scheduled run's figures (cores, estimates, latency_cycles per model,
    makespan_cycles, throughput_per_mcycle, sequential_cycles, speedup)."""
    owned = [Model(m) for m in models if not isinstance(m, Model)]
    it = iter(owned)
    ms = [m if isinstance(m, Model) else next(it) for m in models]
    try:
        n = len(ms)
        inputs = list(inputs) if inputs is not None else [()] * n
        if len(inputs) != n:
            raise ValueError("covenant: %d models, %d input sets" % (n, len(inputs)))
        bound = [m._bind_inputs(x) for m, x in zip(ms, inputs)]
        outs = [(_lib.Tensor * max(1, len(m.outputs)))() for m in ms]
        handles = (_lib._ptr * n)(*[m._h for m in ms])
        names = (ctypes.c_char_p * n)(*[encode(m.path) for m in ms])
        in_ptrs = (ctypes.POINTER(_lib.Tensor) * n)(*[ctypes.cast(t, ctypes.POINTER(_lib.Tensor)) for t, _ in bound])
        n_in = (ctypes.c_size_t * n)(*[len(k) for _, k in bound])
        out_ptrs = (ctypes.POINTER(_lib.Tensor) * n)(*[ctypes.cast(o, ctypes.POINTER(_lib.Tensor)) for o in outs])
        n_out = (ctypes.c_size_t * n)(*[len(m.outputs) for m in ms])
        report = ctypes.c_void_p()
        check(lib.cov_run_models(encode(os.fspath(target)), handles, names, n, in_ptrs, n_in, out_ptrs, n_out,
                                 ctypes.byref(report)))
        del bound
        text = take_string(report)
        doc = json.loads(text) if text else {"coscheduled": None, "models": [None] * n}
        results = []
        for i, m in enumerate(ms):
            arrays = {name: _tensor.from_tensor(outs[i][k]) for k, (name, _, _) in enumerate(m.outputs)}
            results.append(RunResult(arrays, doc["models"][i]))
        return results, doc["coscheduled"]
    finally:
        for m in owned:
            m.close()
