"""tests/python/test_corun.py: two models co-scheduled on npu-4core through
the Python package (covenant.run_models; backends/npu-sim/README.md
"Co-scheduled models"), against independent references:

- each model's outputs against its own run on the reference target
  (Model.run("ref"), the CPU interpreter) on the same inputs;
- the report's figures against each other and against plain runs: each
  model's cycles "on all cores" are those of Model.run("npu-4core"), its
  cycles "alone" those of Model.run on the ACG of its cores (npu-4core with
  that many instances of every per-core node, written here as JSON), the
  makespan the largest latency, the throughputs 2e6 / cycles.

Models: examples/convnet.onnx and squeezenet1_1_64 (materialized by the
real_models fixture into COV_MODELS_DIR)."""

import json
import os
import sys
import tempfile
import unittest

import numpy as np

import covenant

SRC = os.environ.get("COVENANT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MODELS = [os.path.join(SRC, "examples", "convnet.onnx"),
          os.path.join(os.environ.get("COV_MODELS_DIR", ""), "squeezenet1_1_64.onnx")]


def rel_err(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(np.abs(b).max(), 1e-30))


def cores_acg(k, path):
    """npu-4core with k cores: every node of 4 instances gets k."""
    with open(os.path.join(SRC, "targets", "npu-4core.json")) as f:
        d = json.load(f)
    for sec in ("compute", "storage"):
        for n in d[sec]:
            if n.get("instances") == 4:
                n["instances"] = k
    d["name"] = "npu-4core-%dc" % k
    with open(path, "w") as f:
        json.dump(d, f)


class CoRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rng = np.random.default_rng(7)
        cls.inputs = []
        for p in MODELS:
            with covenant.Model(p) as m:
                cls.inputs.append({name: rng.uniform(-1, 1, shape).astype(np.float32)
                                   for name, _, shape in m.inputs})
        cls.results, cls.co = covenant.run_models(MODELS, "npu-4core", cls.inputs)

    def test_outputs_match_the_reference(self):
        for p, x, r in zip(MODELS, self.inputs, self.results):
            ref = covenant.run(p, "ref", x)
            for name, want in ref.outputs.items():
                e = rel_err(r.outputs[name], want)
                self.assertLess(e, 1e-2, "%s output %s: %g" % (p, name, e))

    def test_figures(self):
        co = self.co
        ms = co["models"]
        self.assertEqual(co["cores"], 4)
        self.assertEqual(sum(m["cores"] for m in ms), 4)
        self.assertTrue(all(m["cores"] >= 1 for m in ms))
        self.assertEqual(co["makespan_cycles"], max(m["latency_cycles"] for m in ms))
        self.assertEqual(co["sequential_cycles"], sum(m["all_cores_cycles"] for m in ms))
        self.assertAlmostEqual(co["throughput_per_mcycle"], 2e6 / co["makespan_cycles"], places=6)
        self.assertAlmostEqual(co["sequential_throughput_per_mcycle"], 2e6 / co["sequential_cycles"], places=6)
        self.assertAlmostEqual(co["speedup"], co["sequential_cycles"] / co["makespan_cycles"], places=6)
        for m, r in zip(ms, self.results):
            # sharing DRAM slows a model down, never speeds it up
            self.assertGreaterEqual(m["latency_cycles"], m["alone_cycles"])
            self.assertEqual(m["alone_cycles"], r.cycles)
        # the division: no other one has a smaller largest estimate
        est = [{int(k): v for k, v in m["estimates"].items() if v is not None} for m in ms]
        chosen = max(est[i][m["cores"]] for i, m in enumerate(ms))
        for k in range(1, 4):
            if k in est[0] and 4 - k in est[1]:
                self.assertLessEqual(chosen, max(est[0][k], est[1][4 - k]))

    def test_plain_runs_agree(self):
        with tempfile.TemporaryDirectory() as d:
            for p, x, m in zip(MODELS, self.inputs, self.co["models"]):
                self.assertEqual(covenant.run(p, "npu-4core", x).cycles, m["all_cores_cycles"], p)
                acg = os.path.join(d, "k.json")
                cores_acg(m["cores"], acg)
                self.assertEqual(covenant.run(p, acg, x).cycles, m["alone_cycles"], p)


if __name__ == "__main__":
    if not os.path.exists(MODELS[1]):
        sys.exit("%s: not materialized (the real_models fixture)" % MODELS[1])
    unittest.main()
