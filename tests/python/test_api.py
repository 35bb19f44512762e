"""tests/python/test_api.py: the Python package against independent
references: the target files as plain JSON, numpy's own reference output
of examples/convnet.onnx (examples/convnet_output.npy), MAC counts from
the suite's sizes, the error's line found by searching the file's text.

Runs from the build tree (PYTHONPATH=build/python) and from an installed
prefix (tests/install/standalone.sh); COVENANT_SOURCE_DIR names the
folder holding examples/ and targets/ (default: this file's tree)."""

import json
import math
import os
import tempfile
import threading
import unittest

import numpy as np

import covenant

SRC = os.environ.get("COVENANT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MODEL = os.path.join(SRC, "examples", "convnet.onnx")
X = os.path.join(SRC, "examples", "convnet_input.npy")
Y = os.path.join(SRC, "examples", "convnet_output.npy")


def rel_err(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(np.abs(b).max(), 1e-30))


class AcgTest(unittest.TestCase):
    def test_load_by_name_is_the_shipped_file(self):
        a = covenant.load_acg("npu-16x16")
        with open(os.path.join(SRC, "targets", "npu-16x16.json")) as f:
            raw = json.load(f)
        self.assertEqual(a["name"], raw["name"])
        self.assertEqual(a["clock_mhz"], raw["clock_mhz"])
        self.assertEqual([s["name"] for s in a["storage"]], [s["name"] for s in raw["storage"]])
        # canonical: loading the dict again gives the same dict
        self.assertEqual(covenant.load_acg(a), a)

    def test_derive_follows_dims(self):
        base = covenant.load_acg("npu-16x16")
        d, notes = covenant.derive(base, {"pe_array.dims": (8, 8)}, notes=True)
        pe = next(c for c in d["compute"] if c["name"] == "pe_array")
        mac = next(c for c in pe["capabilities"] if c["op"] == "mac")
        self.assertEqual(pe["dims"], [8, 8])
        self.assertEqual(mac["tile"][:2], [8, 8])
        self.assertEqual(mac["throughput"], 64)
        self.assertIn("8x8", notes)
        cap = covenant.derive("npu-16x16", {"ibuf.capacity": 65536})["storage"][1]["capacity"]
        self.assertIn(cap, (65536, "64KiB"))

    def test_located_error(self):
        a = covenant.load_acg("npu-16x16")
        a["storage"][1]["capacity"] = -5
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.json")
            with open(path, "w") as f:
                json.dump(a, f, indent=2)
            with open(path) as f:
                want_line = next(i + 1 for i, l in enumerate(f) if '"capacity": -5' in l)
            with self.assertRaises(covenant.Error) as cm:
                covenant.load_acg(path)
        e = cm.exception
        self.assertEqual(e.code, "INVALID_INPUT")
        self.assertEqual(e.file, path)
        self.assertEqual(e.line, want_line)
        self.assertEqual(e.path, "$.storage[1].capacity")
        self.assertIn("positive", e.message)
        self.assertIn("%s:%d:" % (path, want_line), str(e))

    def test_unknown_target(self):
        with self.assertRaises(covenant.Error) as cm:
            covenant.load_acg("npu16x16")
        self.assertEqual(cm.exception.code, "NOT_FOUND")
        self.assertIn("npu-16x16", str(cm.exception))  # did you mean

    def test_codes_match_the_library(self):
        from covenant import _lib
        for i, name in enumerate(_lib.CODES):
            text = _lib.lib.cov_code_name(i).decode()
            self.assertEqual(name.replace("_", " ").lower().replace("io error", "i/o error")
                             .replace("internal", "internal error"), text.lower())


class RunTest(unittest.TestCase):
    def test_npu_and_ref_match_numpy(self):
        x, y = np.load(X), np.load(Y)
        m = covenant.Model(MODEL)
        self.assertEqual([n for n, _, _ in m.inputs], ["input"])
        self.assertEqual(m.inputs[0][2], x.shape)
        ref = m.run("ref", {"input": x})
        npu = m.run("npu-16x16", [x])
        self.assertLess(rel_err(ref.outputs["output"], y), 1e-5)
        self.assertLess(rel_err(npu.outputs["output"], y), 1e-2)
        self.assertEqual(ref.report, [])
        # the report: one fused row per conv group, MACs from the shapes
        self.assertEqual([r["kind"] for r in npu.report], ["group", "group"])
        self.assertEqual(npu.report[0]["macs"], 10 * 30 * 30 * 3 * 3 * 3)
        self.assertEqual(npu.cycles, sum(r["cycles"] for r in npu.report))
        self.assertEqual(npu.summary["fused_groups"], 2)

    def test_input_checks(self):
        x = np.load(X)
        m = covenant.Model(MODEL)
        with self.assertRaises(TypeError):
            m.run("ref", [x.astype(np.int64)])
        with self.assertRaises(KeyError):
            m.run("ref", {"inptu": x})
        with self.assertRaises(covenant.Error) as cm:
            m.run("ref", [x[:, :, :16]])
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")
        # float64 is converted (same kind)
        self.assertLess(rel_err(m.run("ref", [x.astype(np.float64)]).outputs["output"], np.load(Y)), 1e-5)

    def test_threads(self):
        x = np.load(X)
        m = covenant.Model(MODEL)
        one = m.run("npu-16x16", [x]).outputs["output"]
        got = [None] * 3

        def work(i):
            got[i] = m.run("npu-16x16", [x]).outputs["output"]
        ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for g in got:
            np.testing.assert_array_equal(g, one)

    def test_gpu_target_without_device(self):
        with self.assertRaises(covenant.Error) as cm:
            covenant.run(MODEL, "nvptx-sm90", [np.load(X)])
        self.assertIn(cm.exception.code, ("DEVICE_ERROR", "UNSUPPORTED"))

    def test_missing_model(self):
        with self.assertRaises(covenant.Error) as cm:
            covenant.Model(os.path.join(SRC, "no_such.onnx"))
        self.assertEqual(cm.exception.code, "NOT_FOUND")


class MapTest(unittest.TestCase):
    def test_schedule_cost_alternatives(self):
        s = covenant.map_layer("convnet_layer1", "npu-16x16")
        self.assertEqual(s["ops"], 10 * 30 * 30 * 3 * 3 * 3)
        sched, cost = s["schedule"], s["schedule"]["cost"]
        self.assertEqual(sched["compute_node"], "pe_array")
        self.assertGreater(cost["cycles"], 0)
        self.assertGreaterEqual(cost["cycles"], cost["compute_cycles"])
        # the loops' trips multiply to at least each extent they tile
        trips = {}
        for lp in sched["loops"]:
            trips[lp["loop"]] = trips.get(lp["loop"], 1) * lp["trips"]
        self.assertGreaterEqual(trips.get("r", 1) * trips.get("s", 1), 1)
        self.assertIn("compute", s["dump"])
        self.assertGreater(len(s["alternatives"]), 0)
        for alt in s["alternatives"]:
            self.assertGreaterEqual(alt["cost"]["cycles"], cost["cycles"])
        with self.assertRaises(covenant.Error):
            covenant.map_layer("convnet_layer9", "npu-16x16")


class ExploreTest(unittest.TestCase):
    def test_four_designs(self):
        with tempfile.TemporaryDirectory() as d:
            t = covenant.explore("npu-16x16", {"pe_array.dims": ["8x8", (16, 16)], "ibuf.capacity": ["32KiB", 65536]},
                                 suite=["convnet_layer1"], evaluator="roofline", out_dir=d)
            rows = t.to_dict("records") if hasattr(t, "to_dict") else t
            summary = covenant.read_study(d, "summary")
        self.assertEqual([r["design"] for r in rows], ["d000", "d001", "d002", "d003"])
        self.assertEqual({r["layer"] for r in rows}, {"convnet_layer1"})
        # roofline: ceil(max(MACs / peak, bytes / bandwidth)); the MAC bound alone is a floor
        macs = 10 * 30 * 30 * 3 * 3 * 3
        for r in rows:
            peak = 64 if r["pe_array.dims"] == "8x8" else 256
            self.assertGreaterEqual(r["cycles"], math.ceil(macs / peak))
        self.assertEqual(len(summary), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
