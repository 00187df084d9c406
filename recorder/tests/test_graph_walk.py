"""Tests of the graph walk and of one recording; they need torch, and are
skipped under a python without it (so that plain python3 runs the suite).

Run with torch: build/torch-venv/bin/python -m unittest discover -s recorder/tests
"""

import importlib.util
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class GraphWalkTest(unittest.TestCase):
    def setUp(self):
        import torch

        from capsim_recorder import graph_walk
        from capsim_recorder.annotations import Annotations

        self.torch = torch
        self.walk = graph_walk.walk
        self.Annotations = Annotations
        torch.manual_seed(0)

    def test_tensor_saved_twice_has_one_name(self):
        x = self.torch.randn(3, requires_grad=True)
        g = self.walk((x * x).sum())
        mul = g["nodes"][1]
        self.assertEqual(mul["name"], "MulBackward0")
        self.assertEqual(mul["saved"], ["t0", "t0"])
        # The leaf saved by mul is the AccumulateGrad's variable: one entry.
        self.assertEqual(g["nodes"][2]["variable"], "t0")
        self.assertEqual(g["tensors"], [{"name": "t0", "sizes": [3], "dtype": "float32", "requires_grad": True}])

    def test_breadth_first_and_shared_nodes(self):
        w = self.torch.randn(2, requires_grad=True)
        g = self.walk((w.sin() + w.cos()).sum())
        names = [n["name"] for n in g["nodes"]]
        self.assertEqual(names, ["SumBackward0", "AddBackward0", "SinBackward0", "CosBackward0", "AccumulateGrad"])
        self.assertEqual(g["nodes"][2]["next"], [[4, 0]])
        self.assertEqual(g["nodes"][3]["next"], [[4, 0]])
        self.assertEqual(g["nodes"][0]["inputs"], [{"sizes": [], "dtype": "float32"}])
        self.assertEqual(g["root"], 0)

    def test_copyslices_and_hooks_annotations(self):
        notes = self.Annotations()
        w = self.torch.randn(4, requires_grad=True)
        notes.post_accumulate_grad_hook(w, lambda p: None)
        notes.tensor_hook(w, lambda grad: grad)
        y = w * 2.0
        y[0:2].mul_(self.torch.randn(2))
        notes.copyslices_inner(y.grad_fn, "MulBackward0")
        loss = y.sum()
        notes.pre_hook(loss.grad_fn, lambda grad_outputs: None)
        g = self.walk(loss, notes)
        by_name = {n["name"]: n for n in g["nodes"]}
        self.assertEqual(by_name["CopySlices"]["kind"], "CopySlices")
        self.assertEqual(by_name["CopySlices"]["inner"], "MulBackward0")
        self.assertEqual(by_name["SumBackward0"]["hooks"], ["pre_hook"])
        self.assertEqual(by_name["AccumulateGrad"]["hooks"], ["post_acc_grad_hook", "tensor_pre_hook"])

    def test_python_function_is_pynode(self):
        from capsim_recorder.programs import ScaledSquare

        w = self.torch.randn(3, requires_grad=True)
        g = self.walk(ScaledSquare.apply(w, 2.0).sum())
        node = g["nodes"][1]
        self.assertEqual((node["name"], node["kind"]), ("ScaledSquareBackward", "PyNode"))
        # Only tensor arguments get an edge; the float scale has none.
        self.assertEqual(node["next"], [[2, 0]])


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class RecordingTest(unittest.TestCase):
    def test_a_program_records_the_same_bytes_twice(self):
        from capsim_recorder.program_runs import load
        from capsim_recorder.recorder import record_program

        program = load(("autograd",))["zero_grad_keep"]
        with tempfile.TemporaryDirectory() as d:
            texts = []
            for i in range(2):
                path = os.path.join(d, f"{i}.jsonl")
                self.assertEqual(record_program(program, path), (3, 2))
                with open(path, encoding="utf-8") as f:
                    texts.append(f.read())
        self.assertEqual(texts[0], texts[1])
        self.assertIn('"event":"ca_graph","backward":1,"captured":true', texts[0])


if __name__ == "__main__":
    unittest.main()
