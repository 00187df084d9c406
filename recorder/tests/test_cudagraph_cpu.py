"""The cudagraph recorder's compile hooks on the real Inductor, on the CPU:
torch.compile(mode="reduce-overhead") of a small MLP, where Inductor compiles
the same aten graphs as on a GPU but hands no callable to the cudagraph trees
(no CUDA device), so each compiled call is an eager_call. This checks the
hooks (PyTorch 2.11's _compile_fx_inner and its CompiledFxGraph), the
translation of what Inductor really received, the names, accumulate_grad and
the trace; the tree-manager half is tested with a stand-in
(test_cudagraph_events.py, test_cudagraph_session.py). Skipped without torch;
takes about 10 s (Inductor's CPU code generation).
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

HAVE_TORCH = importlib.util.find_spec("torch") is not None


class TinyProgram:
    name = "tiny_cpu"

    @staticmethod
    def run(rec):
        import torch

        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8, bias=False), torch.nn.ReLU(), torch.nn.Linear(8, 2, bias=False)
        )
        rec.params(model, ["w1", "w2"])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        rec.create_optimizer("opt", opt, ["w1", "w2"])
        fmodel = torch.compile(model, mode="reduce-overhead")
        for _ in range(2):
            x = rec.tensor("x", torch.randn(3, 4))
            loss = fmodel(x).sum()
            rec.backward(loss)
            rec.zero_grad("opt", opt, set_to_none=True)


class NetProgram:
    """TinyProgram's MLP as a module of its own: its nodes have stack traces."""

    name = "net_cpu"

    @staticmethod
    def run(rec):
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = torch.nn.Linear(4, 8, bias=False)
                self.l2 = torch.nn.Linear(8, 2, bias=False)

            def forward(self, x):
                h = torch.relu(self.l1(x))  # NET_LINE_1
                return self.l2(h)  # NET_LINE_2

        model = Net()
        rec.params(model, ["w1", "w2"])
        fmodel = torch.compile(model, mode="reduce-overhead")
        x = rec.tensor("x", torch.randn(3, 4))
        rec.backward(fmodel(x).sum())


class MutationProgram:
    """A compiled function that adds into a buffer it is passed: on a GPU,
    each call skips cudagraphs (S1), naming the add_."""

    name = "mutation_cpu"

    @staticmethod
    def run(rec):
        import torch

        def accumulate(x, acc):
            acc.add_(x)  # MUT_LINE
            return acc * 2

        fn = torch.compile(accumulate, mode="reduce-overhead")
        acc = rec.tensor("acc", torch.zeros(4))
        with torch.no_grad():
            for _ in range(2):
                fn(rec.tensor("x", torch.randn(4)), acc)


def this_file():
    """This file as a trace names it: relative to the working directory
    when under it."""
    here = os.path.relpath(os.path.abspath(__file__))
    return os.path.abspath(__file__) if here.startswith("..") else here


def marked_line(mark):
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        for k, line in enumerate(f, 1):
            if line.rstrip().endswith(mark):
                return k
    raise AssertionError(mark)


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class CpuRecordingTest(unittest.TestCase):
    def test_stack_traces(self):
        """Each function line's `stack_traces`: per output, the source line
        PyTorch's E1 would name (None for the saved inputs)."""
        from capsim_recorder.cudagraph.runner import record_cudagraph_program

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "net_cpu.jsonl")
            summary = record_cudagraph_program(NetProgram, path, device="cpu", timeout_s=300,
                                               log=lambda msg: None)
            self.assertEqual(summary["status"], "recorded", summary)
            with open(path, encoding="utf-8") as f:
                functions = {l["function"]: l for l in map(json.loads, f) if l["type"] == "function"}
            # A file under the working directory is written relative to it.
            here = this_file()
            one = f'File "{here}", line {marked_line("NET_LINE_1")}, in forward'
            two = f'File "{here}", line {marked_line("NET_LINE_2")}, in forward'
            fwd, bwd = functions["fwd0"]["stack_traces"], functions["bwd0"]["stack_traces"]
            self.assertEqual(len(fwd), len(functions["fwd0"]["outputs"]))
            self.assertEqual(len(bwd), len(functions["bwd0"]["outputs"]))
            self.assertTrue(fwd[0].startswith(two), fwd[0])  # the return value
            self.assertEqual(fwd[1:3], [None, None])  # the saved x and w2: placeholders
            self.assertTrue(fwd[3].startswith(one), fwd[3])  # the saved relu
            # The backward's outputs: w1's grad (of l1), w2's (of l2); x's, None, is left out.
            self.assertEqual([t.split("\n")[0] for t in bwd], [one, two])
            self.assertTrue(all(t == t.strip() for t in fwd + bwd if t is not None))
            capsim = os.environ.get("CAPSIM_BIN")
            if capsim:
                # (Fails with "unknown field" until capsim's reader knows `stack_traces`.)
                r = subprocess.run([capsim, "replay", path], capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_mutating_use_stack_traces(self):
        """The mutated input's `mutating_use_stack_traces` entry names the
        add_, and S1 as on a GPU quotes it after "Found from"."""
        from capsim_recorder.cudagraph.runner import record_cudagraph_program

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mutation_cpu.jsonl")
            summary = record_cudagraph_program(MutationProgram, path, device="cpu", timeout_s=300,
                                               log=lambda msg: None)
            self.assertEqual(summary["status"], "recorded", summary)
            with open(path, encoding="utf-8") as f:
                (fn,) = [l for l in map(json.loads, f) if l["type"] == "function"]
            here = this_file()
            line = f'File "{here}", line {marked_line("MUT_LINE")}, in accumulate'
            traces = fn["mutating_use_stack_traces"]
            self.assertEqual(len(traces), len(fn["inputs"]))
            self.assertEqual(sum(t is not None for t in traces), 1, traces)
            self.assertIn(line, next(t for t in traces if t is not None))
            capsim = os.environ.get("CAPSIM_BIN")
            if capsim:
                # (A CPU run of the tree writes eager calls: S1 as on a GPU is
                # the launcher's, test_record_launcher.py.)
                r = subprocess.run([capsim, "replay", path], capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_tiny_program(self):
        from capsim_recorder.cudagraph.runner import record_cudagraph_program

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tiny_cpu.jsonl")
            summary = record_cudagraph_program(TinyProgram, path, device="cpu", timeout_s=300,
                                               log=lambda msg: None)
            self.assertEqual(summary["status"], "recorded", summary)
            with open(path, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            header = lines[0]
            self.assertEqual(header["producer"], "pytorch")
            self.assertEqual(header["x_device"], "cpu")
            self.assertNotIn("x_untranslated", header)
            self.assertNotIn("x_notes", header, header.get("x_notes"))
            functions = {l["function"]: l for l in lines if l["type"] == "function"}
            self.assertEqual(sorted(functions), ["bwd0", "fwd0"])
            fwd = functions["fwd0"]
            self.assertEqual(fwd["mode"], "forward")
            self.assertEqual(fwd["static_input_idxs"], [0, 2])
            self.assertEqual(fwd["param_input_idxs"], [0, 2])
            self.assertEqual([op["op"] for op in fwd["ops"]], ["t", "mm", "relu", "t", "mm"])
            self.assertIn("relu_backward", [op["op"] for op in functions["bwd0"]["ops"]])
            # nn.Sequential's nodes have no stack trace (its code is torch's):
            # PyTorch's E1 would say "[Could not find stack trace]".
            self.assertNotIn("stack_traces", fwd)
            self.assertNotIn("stack_traces", functions["bwd0"])
            # (The forward's first output dies at once: `.sum()` keeps no
            # reference to it, so a del follows the forward call.)
            actions = [l for l in lines if l["type"] == "action" and l["action"] != "del"]
            kinds = [a["action"] for a in actions]
            self.assertEqual(kinds[:9], [
                "new_tensor", "new_tensor", "create_optimizer", "new_tensor", "eager_call",
                "new_tensor", "eager_call", "accumulate_grad", "accumulate_grad",
            ])
            fwd_call = actions[4]
            self.assertEqual(fwd_call["args"], ["w1", "x", "w2"])
            # The saved x and w2 pass through the forward: not renamed.
            self.assertEqual(fwd_call["outputs"][1:3], ["", ""])
            tangent = actions[5]
            self.assertEqual((tangent["sizes"], tangent.get("fill")), ([3, 2], 1.0))
            bwd_call = actions[6]
            self.assertEqual(bwd_call["args"][:2], ["x", "w2"])
            self.assertEqual([(a["param"], a["grad"]) for a in actions[7:9]],
                             [("w1", bwd_call["outputs"][0]), ("w2", bwd_call["outputs"][1])])
            self.assertEqual(kinds.count("eager_call"), 4)
            dels = [l["name"] for l in lines if l.get("action") == "del"]
            self.assertEqual(len(dels), len(set(dels)))
            capsim = os.environ.get("CAPSIM_BIN")
            if capsim:
                r = subprocess.run([capsim, "replay", path], capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_cuda_missing_is_77(self):
        import torch

        if torch.cuda.is_available():
            self.skipTest("this machine has a CUDA device")
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-m", "capsim_recorder", "--cudagraphs", "--out", d],
                               capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 77, r.stderr)
        self.assertIn("needs a CUDA device", r.stderr)


if __name__ == "__main__":
    unittest.main()
