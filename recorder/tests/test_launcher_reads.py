"""launcher/reads.py on its own: whose ops count as the script's reads, that
Dynamo still compiles under the watch, and that the watch leaves the mode
stack without taking a mode of the script's. Skipped without torch (and the
watch itself before 2.11, which has no ignore_compile_internals); a few
seconds.
"""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class ReadWatchTest(unittest.TestCase):
    def setUp(self):
        from capsim_recorder.launcher import reads as launcher_reads

        self.reads = launcher_reads

    def test_whose_ops_are_the_script(self):
        is_script = self.reads.is_script
        for module in ("__main__", "train", "torch.nn.functional", "torch._tensor_str", "torch",
                       "capsim_recorder.launcher.programs"):
            self.assertTrue(is_script(module), module)
        for module in ("", "torch._functorch._aot_autograd.runtime_wrappers", "torch.autograd",
                       "torch.optim.sgd", "torch._inductor.cudagraph_trees", "capsim_recorder",
                       "capsim_recorder.cudagraph.session"):
            self.assertFalse(is_script(module), module)

    def run_as(self, module, method, x):
        """x.method() called from code whose module is `module`."""
        scope = {"__name__": module}
        exec(f"def call(x):\n    return x.{method}()\n", scope)
        return scope["call"](x)

    def test_watch_sees_the_script_not_torch_internals(self):
        import torch

        if not self.reads.supported():
            self.skipTest("no ignore_compile_internals in this release")
        x = torch.ones(3)
        seen = []
        watch = self.reads.ReadWatch(lambda func, tensors: seen.append((str(func), tensors[0] is x)))
        with watch:
            self.run_as("__main__", "sum", x)
            self.run_as("torch.nn.functional", "neg", x)
            self.run_as("torch._functorch.fake", "exp", x)
            self.run_as("torch.optim.fake", "abs", x)
        self.assertEqual(seen, [("aten.sum.default", True), ("aten.neg.default", True)])

    def test_dynamo_compiles_under_the_watch(self):
        import torch
        from torch._dynamo.utils import counters

        if not self.reads.supported():
            self.skipTest("no ignore_compile_internals in this release")
        torch.compiler.reset()
        counters.clear()
        with self.reads.ReadWatch(lambda func, tensors: None):
            torch.compile(lambda t: t * 2 + 1, backend="eager")(torch.ones(2))
        self.assertEqual(counters["stats"]["unique_graphs"], 1)

    def test_pop_or_mute_leaves_the_scripts_mode(self):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

        if not self.reads.supported():
            self.skipTest("no ignore_compile_internals in this release")

        class ScriptMode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        seen = []
        watch = self.reads.ReadWatch(lambda func, tensors: seen.append(func))
        watch.__enter__()
        mine = ScriptMode()
        with mine:
            self.reads.pop_or_mute(watch)  # under the script's mode: muted, not popped
            self.assertIs(_get_current_dispatch_mode(), mine)
            torch.ones(2).sum()
        self.assertEqual(seen, [])
        self.assertIs(_get_current_dispatch_mode(), watch)
        self.reads.pop_or_mute(watch)  # on top now: popped
        self.assertIsNone(_get_current_dispatch_mode())


if __name__ == "__main__":
    unittest.main()
