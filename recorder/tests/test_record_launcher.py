"""capsim_recorder.record() and `python -m capsim_recorder run` on real
PyTorch (CPU): any script's backwards recorded unchanged, the limits, a script
that raises, and a recording killed mid-run (its trace is a valid prefix).
Skipped without torch; takes about 30 s.
"""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.join(HERE, "..")
sys.path.insert(0, PACKAGE_ROOT)
sys.path.insert(0, HERE)

HAVE_TORCH = importlib.util.find_spec("torch") is not None

from launching import launch, lines_of  # noqa: E402

SCRIPT = """
import sys, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = int(sys.argv[1])
i = 0
while steps < 0 or i < steps:
    model(torch.randn(5, 4)).square().mean().backward()
    opt.step()
    opt.zero_grad()
    if "--fail" in sys.argv and i == 1:
        raise ValueError("boom")
    if steps < 0:
        time.sleep(0.05)
    i += 1
"""




@unittest.skipUnless(HAVE_TORCH, "needs torch")
class LauncherTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.script = os.path.join(self.dir.name, "train.py")
        with open(self.script, "w", encoding="utf-8") as f:
            f.write(SCRIPT)
        self.trace = os.path.join(self.dir.name, "run.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def launch(self, *args, wait=True):
        return launch(self.trace, *args, wait=wait, timeout=300)

    def backwards(self):
        return [l for l in lines_of(self.trace) if l.get("action") == "compiled_backward"]

    def test_script_recorded_with_max_steps(self):
        out = self.launch("--max-steps", "2", "--", self.script, "4")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = lines_of(self.trace)
        self.assertEqual(lines[0]["producer"], "pytorch")
        self.assertEqual(lines[0]["observes"], ["ca_graph", "optimizer", "compile", "zero_grad"])
        self.assertIs(lines[0]["config"]["cudagraphs"], False)  # a CPU run
        # The script's SGD steps eagerly: not capsim's compiled optimizer.
        self.assertFalse([l for l in lines if l.get("action") == "create_optimizer"])
        self.assertEqual(len(self.backwards()), 2)
        self.assertEqual(sum(1 for l in lines if l.get("event") == "ca_graph"), 2)

    def test_mutated_input_as_on_a_gpu(self):
        """A reduce-overhead function that adds into a buffer it is passed:
        the function line names the add_ (`mutating_use_stack_traces`), and
        capsim's S1 as on a GPU quotes it as PyTorch's does."""
        script = os.path.join(self.dir.name, "acc.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write("import torch\n"
                    "def accumulate(x, acc):\n"
                    "    acc.add_(x)\n"
                    "    return acc * 2\n"
                    "fn = torch.compile(accumulate, mode='reduce-overhead')\n"
                    "acc = torch.zeros(4)\n"
                    "with torch.no_grad():\n"
                    "    for _ in range(2):\n"
                    "        fn(torch.randn(4), acc)\n")
        out = self.launch("--cudagraphs", "--", script)
        self.assertEqual(out.returncode, 0, out.stderr)
        (fn,) = [l for l in lines_of(self.trace) if l.get("type") == "function"]
        traces = [t for t in fn["mutating_use_stack_traces"] if t is not None]
        self.assertEqual(len(traces), 1, fn)
        self.assertIn("line 3, in accumulate\n    acc.add_(x)", traces[0])
        capsim = os.environ.get("CAPSIM_BIN")
        if capsim:
            r = subprocess.run([capsim, "explain", "--as-on-a-gpu", self.trace], capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("mutated inputs (1 instances). Found from : \n", r.stdout)
            self.assertIn("acc.add_(x)", r.stdout)

    def test_script_that_raises(self):
        out = self.launch("--", self.script, "5", "--fail")
        self.assertEqual(out.returncode, 1)
        self.assertRegex(out.stderr, r"train\.py raised at .*train\.py:\d+: ValueError: boom")
        self.assertEqual(len(self.backwards()), 2)

    def test_size_cap(self):
        out = self.launch("--max-bytes", "2000", "--", self.script, "4")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("size cap of 2000 bytes reached", out.stderr)
        self.assertLess(len(self.backwards()), 4)

    def test_killed_recording_is_a_valid_prefix(self):
        proc = self.launch("--", self.script, "-1", wait=False)
        deadline = time.time() + 240
        while time.time() < deadline:
            time.sleep(0.5)
            if os.path.exists(self.trace) and len(self.backwards()) >= 3:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        with open(self.trace, encoding="utf-8") as f:
            raw = f.read().split("\n")
        complete = raw[:-1]  # a line cut by the kill has no newline
        self.assertGreaterEqual(len(complete), 7)
        for line in complete:
            json.loads(line)
        self.assertEqual(json.loads(complete[0])["type"], "header")

    def test_script_that_enables_compiled_autograd_itself(self):
        # The script's own compiler function still sees every graph, and
        # the trace keeps each backward's graph (it once lost them: "1
        # captures but 0 graphs").
        script = os.path.join(self.dir.name, "own_ca.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(SCRIPT.split("steps = int")[0] + (
                "from torch._dynamo import compiled_autograd\n"
                "seen = []\n"
                "def mine(gm):\n"
                "    seen.append(gm)\n"
                "    return gm\n"
                "for i in range(3):\n"
                "    loss = model(torch.randn(5, 4)).sum()\n"
                "    with compiled_autograd._enable(mine):\n"
                "        loss.backward()\n"
                "    opt.step()\n"
                "    opt.zero_grad()\n"
                "print('seen', len(seen))\n"))
        out = self.launch("--", script)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("seen 1", out.stdout)
        self.assertEqual(len(self.backwards()), 3)
        graphs = [l["captured"] for l in lines_of(self.trace) if l.get("event") == "ca_graph"]
        self.assertEqual(graphs, [True, False, False])  # one capture, then the cache

    def test_record_context_manager(self):
        import torch

        import capsim_recorder

        lin = torch.nn.Linear(3, 1)
        original = torch.Tensor.backward
        with capsim_recorder.record(self.trace) as session:
            for _ in range(2):
                lin(torch.ones(2, 3)).sum().backward()
        self.assertIs(torch.Tensor.backward, original)
        self.assertEqual(session.steps, 2)
        self.assertEqual(len(self.backwards()), 2)


def hooks_of(trace, graph):
    """(node name, hooks) of every node with hooks in autograd graph `graph`."""
    for line in lines_of(trace):
        if line.get("action") == "autograd_graph" and line["name"] == graph:
            return sorted((n["name"], tuple(n["hooks"])) for n in line["nodes"] if n.get("hooks"))
    raise AssertionError(f"no graph {graph}")


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class RecordWrapsTest(unittest.TestCase):
    """What record() wraps of the plain API: hook registrations (and their
    removal), torch.autograd.backward, and what it leaves unrecorded."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.trace = os.path.join(self.dir.name, "run.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_plain_api_hooks_are_in_the_graph(self):
        import torch

        import capsim_recorder

        w = torch.ones(3, requires_grad=True)
        patched = [(torch.Tensor, "register_hook"), (torch.autograd, "backward"),
                   (torch.autograd.function.BackwardCFunction, "register_hook")]
        before = [getattr(o, a) for o, a in patched]
        with capsim_recorder.record(self.trace) as session:
            w.register_post_accumulate_grad_hook(lambda p: None)
            for step in range(3):
                y = w * 2
                h = y.register_hook(lambda g: g)
                if step == 1:
                    h.remove()
                torch.autograd.backward(y.sum())
        self.assertEqual([getattr(o, a) for o, a in patched], before)
        self.assertNotIn("register_hook", vars(torch.autograd.function.BackwardCFunction))
        self.assertEqual(session.steps, 3)
        self.assertEqual(hooks_of(self.trace, "g0"),
                         [("AccumulateGrad", ("post_acc_grad_hook",)),
                          ("MulBackward0", ("tensor_pre_hook",))])
        self.assertEqual(hooks_of(self.trace, "g1"), [("AccumulateGrad", ("post_acc_grad_hook",))])

    def test_function_node_hooks_and_unrecorded_calls(self):
        import contextlib
        import io

        import torch

        import capsim_recorder

        lin = torch.nn.Linear(3, 1)
        lin.register_full_backward_hook(lambda m, gi, go: None)
        x = torch.ones(2, 3, requires_grad=True)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), capsim_recorder.record(self.trace) as session:
            lin(x).sum().backward()
            torch.autograd.backward([(x * 2).sum(), (x * 3).sum()])
            torch.autograd.grad((x * x).sum(), x)
        self.assertEqual(session.steps, 1)
        self.assertIn(("BackwardHookFunctionBackward", ("post_hook",)), hooks_of(self.trace, "g0"))
        self.assertIn("1 backwards with several roots, 1 torch.autograd.grad calls", err.getvalue())


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class RecordOptimizerTest(unittest.TestCase):
    """The compiled optimizer of a script with no recorder calls
    (launcher/optimizer.py): found by its graphs' inputs, written when its
    first compiled step runs, followed after."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.trace = os.path.join(self.dir.name, "run.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_optimizer_made_before_the_recording_is_not_seen(self):
        import torch

        import capsim_recorder

        net = torch.nn.Linear(3, 2)
        opt = torch.optim.Adam(net.parameters(), lr=0.1)
        with capsim_recorder.record(self.trace):
            step = torch.compile(opt.step)
            net(torch.ones(4, 3)).sum().backward()
            step()
        self.assertNotIn("create_optimizer", [l.get("action") for l in lines_of(self.trace)])

    def test_optimizer_made_inside_the_recording(self):
        import torch

        import capsim_recorder

        torch.manual_seed(0)
        net = torch.nn.Linear(3, 2)
        with capsim_recorder.record(self.trace):
            opt = torch.optim.Adam(net.parameters(), lr=0.1)
            step = torch.compile(opt.step)
            for _ in range(2):
                net(torch.ones(4, 3)).square().sum().backward()
                step()
                opt.zero_grad()
        lines = lines_of(self.trace)
        actions = [l["action"] for l in lines if l["type"] == "action"]
        self.assertEqual(actions.count("create_optimizer"), 1)
        self.assertEqual(actions.count("optimizer_step"), 2)
        self.assertEqual(actions.count("zero_grad"), 2)
        params = [l["name"] for l in lines if l.get("action") == "new_tensor" and l.get("parameter")]
        self.assertEqual(params, ["net_weight", "net_bias"])
        compiles = [l for l in lines if l.get("event") == "compile"]
        # params 0, 1; grads 2, 3 (not static); state 4 to 9 (exp_avg, exp_avg_sq, step)
        self.assertEqual(compiles, [{**compiles[0], "function": "opt.step",
                                     "static_input_idxs": [0, 1, 4, 5, 6, 7, 8, 9]}])

    def test_eager_and_unmodelled_optimizers(self):
        import contextlib
        import io

        import torch

        import capsim_recorder

        net = torch.nn.Linear(3, 2)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), capsim_recorder.record(self.trace):
            sgd = torch.optim.SGD(net.parameters(), lr=0.1)  # eager steps: never written
            rms = torch.optim.RMSprop(net.parameters(), lr=0.1)
            for _ in range(2):
                net(torch.ones(4, 3)).sum().backward()
                sgd.step()
                sgd.zero_grad()
        kinds = [l.get("action") for l in lines_of(self.trace)]
        self.assertNotIn("create_optimizer", kinds)
        self.assertNotIn("zero_grad", kinds)
        self.assertIn("1 RMSprop optimizers (capsim models SGD, Adam, AdamW)", err.getvalue())
        del rms


if __name__ == "__main__":
    unittest.main()
