"""The recorder never harms the script and never loses what it did: what the
recorder cannot write (a dtype or a line the trace format cannot hold) or
fails at is left out whole, with a note in the header's x_notes, and the
script runs on; the script's own exceptions reach it unchanged and are not
a cudagraph trace's error events; `model.zero_grad()`, `p.grad = None` and
an eager optimizer's `opt.zero_grad()` are clear_grads actions; parameter
names lose torch.compile's `_orig_mod.` and a method's `self_`.

The plain python3 part (the classification of exceptions, the cudagraph
output's oversized lines, the header's notes) runs everywhere; the rest
needs torch (about a minute: the cudagraph form compiles with Inductor).

Run: python3 -m unittest discover -s recorder/tests
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from capsim_recorder import trace_writer  # noqa: E402
from capsim_recorder.cudagraph.session import Session  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def actions(lines, kind):
    return [l for l in lines if l["type"] == "action" and l["action"] == kind]


def events(lines, kind):
    return [l for l in lines if l["type"] == "event" and l["event"] == kind]


def raise_in(module_name, exc):
    """Raises `exc` from a frame whose module is `module_name`."""
    scope = {"__name__": module_name, "exc": exc}
    exec("def fail():\n    raise exc\n", scope)
    scope["fail"]()


class PlainTest(unittest.TestCase):
    def test_only_cudagraph_code_makes_an_error(self):
        from capsim_recorder.launcher import failures

        for module, cudagraph in (("torch._inductor.cudagraph_trees", True),
                                  ("torch._inductor.cudagraph_utils", True),
                                  ("torch.serialization", False), ("__main__", False)):
            try:
                raise_in(module, RuntimeError("x"))
            except RuntimeError as e:
                self.assertEqual(failures.raised_by_cudagraphs(e), cudagraph, module)
                self.assertEqual(failures.raised_by_script(e), module == "__main__", module)

    def test_oversized_cudagraph_lines_are_left_out(self):
        """An action or event line past the format's limit is left out of
        the cudagraph form's trace, with a note; the rest is written."""
        s = Session("big")
        s.action("new_tensor", {"name": "x", "sizes": [1]})
        s.event("warning", {"x_big": "a" * trace_writer.MAX_LINE_BYTES})
        s.action("read", {"name": "x", "x_big": "b" * trace_writer.MAX_LINE_BYTES})
        s.action("read", {"name": "x"})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.jsonl")
            s.write(path, producer="pytorch", seed=0, config=trace_writer.DEFAULT_CONFIG,
                    extensions={})
            lines = lines_of(path)
        self.assertEqual([l["action"] for l in lines if l["type"] == "action"], ["new_tensor", "read"])
        self.assertFalse([l for l in lines if l["type"] == "event"])
        notes = lines[0]["x_notes"]
        self.assertTrue(any("warning event of new_tensor" in n for n in notes), notes)
        self.assertTrue(any(n.startswith("read: its action line passes") for n in notes), notes)

    def test_notes_join_the_header_afterwards(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.jsonl")
            with trace_writer.TraceWriter(path, log=True) as w:
                w.header(producer="pytorch", name="t", seed=0, config=trace_writer.DEFAULT_CONFIG,
                         extensions={"x_notes": ["first"]})
                w.action("read", {"name": "x"})
                with self.assertRaises(ValueError), w.atomic():
                    w.action("read", {"name": "y"})
                    raise ValueError("dropped")
            many = [f"n{k}" for k in range(trace_writer.MAX_NOTES + 5)]
            self.assertTrue(trace_writer.amend_header(path, ["first"] + many))
            lines = lines_of(path)
        self.assertEqual(lines[0]["x_notes"][:3], ["first", "n0", "n1"])
        self.assertEqual(lines[0]["x_notes"][-1], "5 more notes (on stderr)")
        self.assertEqual([(l["seq"], l.get("name")) for l in lines[1:]], [(1, "x")])


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class CompiledAutogradFormTest(unittest.TestCase):
    """record() (the CPU form) around plain PyTorch code, in this process."""

    def setUp(self):
        import torch

        self.torch = torch
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "run.jsonl")
        torch.manual_seed(0)

    def tearDown(self):
        self.dir.cleanup()

    def record(self, body):
        import capsim_recorder

        err = io.StringIO()
        with contextlib.redirect_stderr(err), capsim_recorder.record(self.path, reset=True):
            body()
        return lines_of(self.path), err.getvalue()

    def test_lstm_is_recorded(self):
        """nn.LSTM on the CPU saves uint8 tensors: once an exception that
        killed the script (dtype torch.uint8 has no name in the trace format)."""
        torch = self.torch
        lstm = torch.nn.LSTM(4, 4, 2, dropout=0.2)

        def body():
            out, _ = lstm(torch.randn(3, 2, 4))
            out.sum().backward()

        lines, _ = self.record(body)
        graphs = actions(lines, "autograd_graph")
        self.assertEqual(len(graphs), 1)
        self.assertIn("uint8", {t["dtype"] for t in graphs[0]["tensors"]})
        self.assertEqual(len(events(lines, "ca_graph")), 1)

    def test_unnamed_dtype_skips_that_backward(self):
        """A graph with a dtype the format has no name for (int16) is left
        out, its compiled_backward with it; the backward still runs, and the
        next one is recorded as backward 0."""
        torch = self.torch
        lin = torch.nn.Linear(3, 1)
        mask = torch.ones(2, 1, dtype=torch.int16)

        def body():
            (lin(torch.randn(2, 3)) * mask).sum().backward()
            self.assertIsNotNone(lin.weight.grad)
            lin(torch.randn(2, 3)).sum().backward()

        lines, err = self.record(body)
        self.assertEqual([a["name"] for a in actions(lines, "autograd_graph")], ["g0"])
        self.assertEqual([a["graph"] for a in actions(lines, "compiled_backward")], ["g0"])
        self.assertEqual([e["backward"] for e in events(lines, "ca_graph")], [0])
        notes = lines[0]["x_notes"]
        self.assertTrue(any("backward 0: not recorded (UnsupportedGraph: dtype torch.int16" in n
                            for n in notes), notes)
        self.assertIn("dtype torch.int16", err)

    def test_over_long_lines(self):
        """An autograd graph over the line limit is left out with its
        backward; a ca_graph event over it loses fx_nodes (then targets and
        uses); each said in x_notes; the script runs to its end."""
        torch = self.torch
        lin = torch.nn.Linear(3, 1)

        def chain(n):
            x = lin(torch.randn(2, 3))
            for _ in range(n):
                x = x * 1.5
            x.sum().backward()

        graph = {}

        def body():
            chain(1)  # recorded
            lines = lines_of(self.path)
            graph["event"] = len(json.dumps(events(lines, "ca_graph")[0]))
            limit = graph["event"] - 100
            with mock.patch.object(trace_writer, "MAX_LINE_BYTES", limit):
                chain(1)  # the same graph again: its event fits
                chain(5)  # a new capture: too long an event
                chain(60)  # too long a graph

        lines, _ = self.record(body)
        self.assertEqual([a["graph"] for a in actions(lines, "compiled_backward")], ["g0", "g1", "g2"])
        last = events(lines, "ca_graph")[-1]
        self.assertTrue(last["captured"])
        self.assertNotIn("fx_nodes", last)
        notes = lines[0]["x_notes"]
        self.assertTrue(any("backward 2: its ca_graph event leaves out fx_nodes" in n for n in notes),
                        notes)
        self.assertTrue(any(n.startswith("backward 3: not recorded (LineTooLong") for n in notes),
                        notes)

    def test_failing_capture_is_left_out_and_the_backward_runs(self):
        """compiled autograd (here: the recorder's capture) failing inside a
        recorded backward: nothing of that backward in the trace, the
        recording stops, and the backward runs as without the recorder."""
        torch = self.torch
        from capsim_recorder.capture import CompiledAutogradCapture

        lin = torch.nn.Linear(3, 1)

        def body():
            lin(torch.randn(2, 3)).sum().backward()
            broke = RuntimeError("capture broke")
            with mock.patch.object(CompiledAutogradCapture, "backward",
                                   side_effect=lambda *a, **k: raise_in("torch._dynamo.x", broke)):
                lin(torch.randn(2, 3)).sum().backward()
            self.assertIsNotNone(lin.weight.grad)
            lin(torch.randn(2, 3)).sum().backward()

        lines, err = self.record(body)
        self.assertEqual(len(actions(lines, "autograd_graph")), 1)
        self.assertEqual(len(actions(lines, "compiled_backward")), 1)
        self.assertEqual(len(events(lines, "ca_graph")), 1)
        self.assertTrue(any("recording stopped: backward 1: compiled autograd failed" in n
                            for n in lines[0]["x_notes"]), lines[0]["x_notes"])
        self.assertIn("capture broke", err)

    def test_failing_optimizer_watch_stops_it_only(self):
        torch = self.torch
        from capsim_recorder.launcher.optimizer import OptimizerWatch

        lin = torch.nn.Linear(3, 1)

        def body():
            with mock.patch.object(OptimizerWatch, "created", side_effect=KeyError("watch broke")):
                torch.optim.SGD(lin.parameters(), lr=0.1)
            lin(torch.randn(2, 3)).sum().backward()

        lines, _ = self.record(body)
        self.assertEqual(len(events(lines, "ca_graph")), 1)
        notes = lines[0]["x_notes"]
        self.assertTrue(any("an optimizer made failed (KeyError" in n for n in notes), notes)
        self.assertTrue(any("the optimizer watch stops" in n for n in notes), notes)

    def test_grad_clears(self):
        """model.zero_grad(), p.grad = None and an eager optimizer's
        opt.zero_grad(): clear_grads with the zero_grad event (grads: how
        many had one); the optimizer's own `p.grad = None` inside it is not
        one more."""
        torch = self.torch
        fc = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(fc.parameters(), lr=0.1)

        def body():
            fc(torch.randn(2, 3)).sum().backward()
            fc.zero_grad()
            fc(torch.randn(2, 3)).sum().backward()
            fc.bias.grad = None
            opt.zero_grad()
            fc.zero_grad(set_to_none=False)

        lines, _ = self.record(body)
        clears = [(a["name"], a["params"], a["set_to_none"]) for a in actions(lines, "clear_grads")]
        self.assertEqual(clears, [("fc", ["fc_weight", "fc_bias"], True),
                                  ("fc_bias", ["fc_bias"], True),
                                  ("opt", ["fc_weight", "fc_bias"], True),
                                  ("fc", ["fc_weight", "fc_bias"], False)])
        self.assertEqual([(e["name"], e["grads"]) for e in events(lines, "zero_grad")],
                         [("fc", 2), ("fc_bias", 1), ("opt", 1), ("fc", 0)])
        self.assertFalse(actions(lines, "zero_grad"))
        self.assertEqual([a["name"] for a in actions(lines, "new_tensor") if a.get("parameter")],
                         ["fc_weight", "fc_bias"])
        # Each clear follows the grads the trace did not know yet.
        index = {l["index"]: l for l in lines if l["type"] == "action"}
        first = actions(lines, "clear_grads")[0]["index"]
        self.assertEqual([index[first - k]["action"] for k in (3, 2, 1)],
                         ["new_tensor", "accumulate_grad", "del"])

    def test_parameter_names_lose_orig_mod_and_self(self):
        torch = self.torch
        from capsim_recorder.launcher import script_names

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)

            def names(self):
                return script_names.module_names(sys._getframe()), id(self.fc.weight)

        model = torch.compile(Net())
        names = script_names.module_names(sys._getframe())
        self.assertEqual(names[id(model.fc.weight)], "model_fc_weight")
        self.assertEqual(model.names()[0][id(model.fc.weight)], "model_fc_weight")
        names, weight = Net().names()  # only the method's `self` holds it
        self.assertEqual(names[weight], "fc_weight")


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class CudagraphFormTest(unittest.TestCase):
    """record(cudagraphs=True) on the CPU (every compiled call a `call` run
    without CUDA graphs)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "run.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_clears_names_and_the_script_exception(self):
        """fc.zero_grad() and p.grad = None are clear_grads (with the names
        of the compiled graphs' parameters: `fc_weight`, not
        `model__orig_mod_weight`); an exception of the script's outside the
        cudagraph code (a torch.load that fails) reaches it unchanged and is
        a note, not an error event."""
        import capsim_recorder
        import torch

        fc = torch.nn.Linear(4, 1)
        model = torch.compile(fc, mode="reduce-overhead")
        err = io.StringIO()
        missing = os.path.join(self.dir.name, "missing.pt")
        with self.assertRaises(FileNotFoundError):
            with contextlib.redirect_stderr(err), capsim_recorder.record(self.path, cudagraphs=True,
                                                                         reset=True):
                for _ in range(2):
                    fc.zero_grad()
                    model(torch.randn(8, 4)).square().mean().backward()
                fc.weight.grad = None
                torch.load(missing)
        lines = lines_of(self.path)
        self.assertFalse(events(lines, "error"))
        self.assertTrue(any(n.startswith("the script raised FileNotFoundError") for n in
                            lines[0]["x_notes"]), lines[0]["x_notes"])
        clears = [(a["name"], a["params"], a["set_to_none"]) for a in actions(lines, "clear_grads")]
        self.assertEqual(clears, [("fc", ["fc_weight", "fc_bias"], True)] * 2
                         + [("fc_weight", ["fc_weight"], True)])

    def test_an_eager_optimizers_zero_grad(self):
        """opt.zero_grad() of an optimizer the trace does not have (Adadelta
        stepped eagerly, as in pytorch/examples' mnist; an SGD made before
        the block) is a clear_grads named after its variable, once per call
        (its own `p.grad = None` per param is not one more), before each
        step's grads; an SGD made in the block is in the trace
        (create_optimizer) and keeps its zero_grad."""
        import capsim_recorder
        import torch

        fc = torch.nn.Linear(4, 1)
        model = torch.compile(fc, mode="reduce-overhead")
        sgd = torch.optim.SGD(fc.parameters(), lr=0.1)
        with capsim_recorder.record(self.path, cudagraphs=True, reset=True):
            ada = torch.optim.Adadelta(fc.parameters(), lr=1.0)
            made = torch.optim.SGD(fc.parameters(), lr=0.1)
            for _ in range(3):
                ada.zero_grad()
                model(torch.randn(8, 4)).square().mean().backward()
                ada.step()
            sgd.zero_grad()
            made.zero_grad(set_to_none=False)
        lines = lines_of(self.path)
        params = ["fc_weight", "fc_bias"]
        clears = actions(lines, "clear_grads")
        self.assertEqual([(a["name"], a["params"], a["set_to_none"]) for a in clears],
                         [("ada", params, True)] * 3 + [("sgd", params, True)])
        grads = [a["index"] for a in actions(lines, "accumulate_grad")]
        self.assertEqual(len(grads), 6)
        self.assertEqual([sum(1 for g in grads if g < c["index"]) for c in clears], [0, 2, 4, 6])
        # (Named when made, before the assignment: "opt".)
        made_name = [a["name"] for a in actions(lines, "create_optimizer")]
        self.assertEqual(len(made_name), 1)
        self.assertEqual([(a["name"], a["set_to_none"]) for a in actions(lines, "zero_grad")],
                         [(made_name[0], False)])

    def test_a_failing_wrap_stops_the_recording_only(self):
        import capsim_recorder
        import torch
        from capsim_recorder.launcher.cudagraph_script import ScriptStatements

        lin = torch.nn.Linear(2, 2)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), capsim_recorder.record(self.path, cudagraphs=True):
            with mock.patch.object(ScriptStatements, "created", side_effect=KeyError("broke")):
                opt = torch.optim.SGD(lin.parameters(), lr=0.1)
            lin(torch.ones(1, 2)).sum().backward()
            opt.step()
        notes = lines_of(self.path)[0]["x_notes"]
        self.assertIn("recording stopped: an optimizer made failed (KeyError: 'broke')", notes)
        self.assertIn("an optimizer made failed", err.getvalue())


if __name__ == "__main__":
    unittest.main()
