"""The one cudagraph driver (capsim_recorder.cudagraph.driver), which both
the built-in programs and `run --cudagraphs` / record(cudagraphs=True) run
on: what its compile hooks and tree observer could not do reaches the trace's
x_notes, a method PyTorch renamed (missing) and an exception inside a wrapper
alike. (Before the drivers were merged, the launcher's form dropped them:
tests/test_record_cudagraphs.py checks that form on real PyTorch.) Plain
python3 with the stand-in tree manager (fake_tree.py); no torch.

Run: python3 -m unittest discover -s recorder/tests
"""

import importlib
import json
import os
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from capsim_recorder.cudagraph.driver import CudagraphDriver  # noqa: E402
from capsim_recorder.trace_writer import DEFAULT_CONFIG as CONFIG  # noqa: E402

import fake_tree  # noqa: E402


def renamed(self):
    raise AttributeError("'CUDAGraphNode' object has no attribute 'path_live_weakrefs'")


def model(inputs):
    return [fake_tree.FakeTensor(0x9000 + 0x100 * len(inputs), (2, 2))]


class DriverFailuresTest(unittest.TestCase):
    def setUp(self):
        importlib.reload(fake_tree)
        self.dir = tempfile.TemporaryDirectory()
        self.driver = None

    def tearDown(self):
        if self.driver is not None and self.driver.installed:
            self.driver.uninstall()
        importlib.reload(fake_tree)
        self.dir.cleanup()

    def driver_over_fakes(self):
        # An Inductor without cudagraphify, a manager without
        # set_to_running_backward, a node whose path_live_weakrefs raises.
        compile_fx = types.SimpleNamespace(_compile_fx_inner=lambda gm, example_inputs, **kw: None)
        del fake_tree.CUDAGraphTreeManager.set_to_running_backward
        fake_tree.CUDAGraphNode.path_live_weakrefs = renamed
        self.driver = CudagraphDriver.over(
            "fake_script", compile_fx_module=compile_fx, manager_cls=fake_tree.CUDAGraphTreeManager,
            node_cls=fake_tree.CUDAGraphNode, generation_fn=lambda: 0, skip_log_modules=[fake_tree])
        return self.driver

    def run_checkpointing_calls(self):
        """As test_cudagraph_events' checkpoint test: a replay, then a new
        function warming up from it (the allocator's checkpoint)."""
        mgr = fake_tree.CUDAGraphTreeManager()
        param = fake_tree.FakeTensor(0x7F0000000000, (2, 2))
        x = fake_tree.FakeTensor(0x7F0000100000, (2, 2))
        self.driver.session.action("new_tensor", {"name": "w", "sizes": [2, 2], "parameter": True})
        self.driver.session.registry.bind(param, "w", "param")
        fn, _ = mgr.add_function(model, [param, x], [0], None, fake_tree.CompilationMode.FORWARD,
                                 (), (), (), None)
        fn([param, x])
        fn([param, x])
        mgr.new_generation = False
        mgr.add_function(model, [param, x], [0], None, fake_tree.CompilationMode.FORWARD, (), (), (), None)

    def write(self):
        path = os.path.join(self.dir.name, "t.jsonl")
        self.driver.write(path, producer="pytorch", seed=0, config=CONFIG, extensions={"x_device": "fake"})
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def test_failures_reach_x_notes(self):
        driver = self.driver_over_fakes()
        driver.install()
        self.run_checkpointing_calls()
        checkpoint = self.write()[0].get("x_notes", [])  # a launcher's checkpoint: still installed
        driver.uninstall()
        notes = self.write()[0].get("x_notes", [])
        for found in (checkpoint, notes):
            self.assertIn("install: compile_fx.cudagraphify not found", found)
            self.assertIn("observer: install: CUDAGraphTreeManager.set_to_running_backward not found", found)
            self.assertTrue(any(n.startswith("observer: checkpoint: AttributeError") for n in found), found)
        self.assertEqual(driver.notes(), notes)
        # The run itself went on as PyTorch's (the calls are in the trace).
        self.assertEqual(driver.session.calls.count, 4)

    def test_no_failures_no_notes(self):
        importlib.reload(fake_tree)
        self.driver = CudagraphDriver.over(
            "fake_script", compile_fx_module=types.SimpleNamespace(
                _compile_fx_inner=lambda *a, **k: None, cudagraphify=lambda *a, **k: None),
            manager_cls=fake_tree.CUDAGraphTreeManager, node_cls=fake_tree.CUDAGraphNode)
        self.driver.install()
        self.driver.uninstall()
        self.assertEqual(self.driver.failure_notes(), [])
        self.assertNotIn("x_notes", self.write()[0])


if __name__ == "__main__":
    unittest.main()
