"""The scalar types a node keeps for operands it neither saves nor has an
edge for (operands.py, node_fields.py): `h + 1` gives AddBackward0 an
other_scalar_type of int64 (4), `h + 0.5` float64 (7), as compiled autograd
passes them; the recorder learns them from the forward's call through a
TorchFunctionMode. Also: the mode leaves the script alone (results, hooks,
what torch.compile compiles), and a recorded script replays in capsim.
Skipped without torch; the replay also needs the capsim binary.

Run: PYTHONPATH=recorder build/torch-venv/bin/python -m unittest recorder/tests/test_number_operands.py
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

HAVE_TORCH = importlib.util.find_spec("torch") is not None

from launching import launch, lines_of  # noqa: E402

SCRIPT = """
import torch
torch.manual_seed(0)
lin = torch.nn.Linear(4, 3)
for _ in range(2):
    h = lin(torch.randn(2, 4))
    (h + 1).sum().backward()
"""


def capsim_binary():
    path = os.environ.get("CAPSIM_BIN") or os.path.join(REPO, "build", "default", "cli", "capsim")
    return path if os.access(path, os.X_OK) else None


def scalar_types(node, class_name):
    """{field name: its const} of a walked node's *_scalar_type fields."""
    from capsim_recorder import node_fields

    names = [name for _, name in node_fields.declared_fields()[class_name]]
    return {n: v["const"] for n, v in zip(names, node["saved_values"]) if n.endswith("_scalar_type")}


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class NumberOperandsTest(unittest.TestCase):
    def setUp(self):
        import torch

        from capsim_recorder import graph_walk, operands

        self.torch = torch
        self.walk = graph_walk.walk
        self.operands = operands
        torch.manual_seed(0)

    def node_of(self, out):
        return next(n for n in self.walk(out.sum())["nodes"] if n["name"] == type(out.grad_fn).__name__)

    def test_number_and_no_grad_operands(self):
        torch = self.torch
        x = torch.randn(3, requires_grad=True)
        y = torch.randn(3, dtype=torch.float64)  # needs no grad: no edge
        with self.operands.watching():
            outs = {"x + 1": x + 1, "x + 0.5": x + 0.5, "x - 1": x - 1, "x + y": x + y}
        expected = {"x + 1": "4", "x + 0.5": "7", "x - 1": "4", "x + y": "7"}
        for text, out in outs.items():
            kind = "SubBackward0" if "-" in text else "AddBackward0"
            self.assertEqual(self.node_of(out)["name"], kind, text)
            self.assertEqual(scalar_types(self.node_of(out), kind),
                             {"other_scalar_type": expected[text], "self_scalar_type": "6"}, text)

    def test_reflected_and_in_place_calls(self):
        torch = self.torch
        x = torch.randn(3, requires_grad=True)
        with self.operands.watching():
            radd = 1 + x           # Tensor.__radd__(x, 1): self is x
            inplace = x * 1.0
            inplace.add_(True)     # a bool is PyTorch's bool (11)
            same = radd.contiguous()  # hands radd back: its node keeps radd's call
        self.assertEqual(scalar_types(self.node_of(radd), "AddBackward0"),
                         {"other_scalar_type": "4", "self_scalar_type": "6"})
        self.assertEqual(scalar_types(self.node_of(inplace), "AddBackward0")["other_scalar_type"], "11")
        self.assertIs(same.grad_fn, radd.grad_fn)
        self.assertEqual(same.grad_fn.metadata[self.operands.KEY], [torch.float32, torch.int64])

    def test_without_the_watch_the_output_dtype_stands_in(self):
        x = self.torch.randn(3, requires_grad=True)
        out = x + 1
        self.assertEqual(scalar_types(self.node_of(out), "AddBackward0")["other_scalar_type"], "6")

    def test_the_watch_never_raises_and_comes_off(self):
        torch = self.torch
        x = torch.randn(3, requires_grad=True)
        with self.operands.watching(wanted=lambda: 1 / 0) as mode:
            out = x + 1  # the watch's own failure is swallowed; the op runs
            with self.assertRaises(RuntimeError):  # the op's own error is the op's
                x + torch.randn(4)
        self.assertIsNotNone(mode)
        self.assertTrue(torch.equal(out, x.detach() + 1))
        self.assertNotIn(self.operands.KEY, out.grad_fn.metadata)
        self.assertTrue(mode.muted)
        self.assertIsNone(self.operands.operand_dtype(object(), 1))
        self.assertEqual(torch.overrides._get_current_function_mode_stack(), [])

    def test_a_mode_the_script_left_on_keeps_its_place(self):
        torch = self.torch
        inner = torch.overrides.TorchFunctionMode()
        with self.operands.watching() as mode:
            inner.__enter__()
        try:
            self.assertTrue(mode.muted)  # under the script's mode: muted, not popped
        finally:
            inner.__exit__(None, None, None)
            mode.__exit__(None, None, None)

    def test_compiled_calls_under_record_do_not_see_the_watch(self):
        """Dynamo traces a mode on the stack, and a traced mode changes the
        graph (`0.1 / t` becomes `t.reciprocal() * 0.1`): record() takes
        the watch off for a torch.compile'd call, and for a backward."""
        torch = self.torch
        import capsim_recorder

        graphs = []

        def backend(gm, inputs):
            graphs.append(gm.code)
            return gm.forward

        torch.compiler.reset()
        with tempfile.TemporaryDirectory() as d:
            with capsim_recorder.record(os.path.join(d, "run.jsonl")):
                fn = torch.compile(lambda t: 0.1 / t, backend=backend)
                t = torch.rand(3) + 1
                result = fn(t)
                lin = torch.nn.Linear(3, 1)
                (lin(t) + 1).sum().backward()
        torch.compiler.reset()
        self.assertTrue(torch.equal(result, 0.1 / t))
        self.assertEqual(len(graphs), 1)
        self.assertNotIn("reciprocal", graphs[0])
        self.assertEqual(torch.overrides._get_current_function_mode_stack(), [])


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class LaunchedNumberOperandTest(unittest.TestCase):
    def test_a_launched_script_replays(self):
        with tempfile.TemporaryDirectory() as d:
            script, trace = os.path.join(d, "script.py"), os.path.join(d, "out.jsonl")
            with open(script, "w", encoding="utf-8") as f:
                f.write(SCRIPT)
            run = launch(trace, "--", script)
            self.assertEqual(run.returncode, 0, run.stderr)
            graphs = [line for line in lines_of(trace) if line.get("action") == "autograd_graph"]
            self.assertEqual(len(graphs), 2)
            for graph in graphs:
                add = next(n for n in graph["nodes"] if n["name"] == "AddBackward0")
                self.assertEqual(scalar_types(add, "AddBackward0"),
                                 {"other_scalar_type": "4", "self_scalar_type": "6"})
            capsim = capsim_binary()
            if capsim is None:
                self.skipTest("capsim is not built (set CAPSIM_BIN)")
            replay = subprocess.run([capsim, "replay", trace], capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(replay.returncode, 0, replay.stdout + replay.stderr)


if __name__ == "__main__":
    unittest.main()
