"""The one table of wraps and the one program registry: a Sink's own
methods run the statement unrecorded, a backward's given arguments are
the ones passed on, the registry orders programs by kind and refuses a
name twice among the kinds recorded together (plain python3); with torch,
each form's session is a sink that names entries of the table, and
installing them puts every original back on exit, passing straight
through while installed with no sink doing anything.

Run: python3 -m unittest discover -s recorder/tests
"""

import importlib.util
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from capsim_recorder import program_registry  # noqa: E402
from capsim_recorder.launcher.patching import NOT_OURS  # noqa: E402
from capsim_recorder.launcher.sink import BackwardArgs, Sink  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


class PlainTest(unittest.TestCase):
    def test_a_sink_runs_what_it_does_not_record(self):
        sink = Sink()
        self.assertEqual(sink.on_tensor_backward(None, lambda: "ran", BackwardArgs()), "ran")
        self.assertEqual(sink.on_mark_static_address(None, True, lambda: "ran"), "ran")
        self.assertEqual(sink.on_compiled_call(lambda *a, **k: (a, k), (1,), {"x": 2}),
                         ((1,), {"x": 2}))
        self.assertIs(sink.on_compile("model", "compiled"), "compiled")
        self.assertIs(sink.on_module_zero_grad(None, None, True, lambda: "ran"), NOT_OURS)
        self.assertIs(sink.on_parameter_data(None, None, None, lambda: "ran"), NOT_OURS)

    def test_given_arguments(self):
        self.assertEqual(BackwardArgs().given(None), {})
        self.assertEqual(BackwardArgs("g", True, True, ["x"]).given("h"),
                         {"gradient": "h", "retain_graph": True, "create_graph": True,
                          "inputs": ["x"]})

    def test_registry_orders_by_kind_and_refuses_a_name_twice(self):
        with mock.patch.object(program_registry, "_PROGRAMS", []):
            def a():
                pass

            def b():
                pass

            program_registry.program("launcher", "b", prefix="launcher_", cudagraphs=True)(b)
            program_registry.program("autograd", "a")(a)
            program_registry.program("cudagraph", "a on a GPU", inductor_config={"k": 1})(a)
            cpu = program_registry.programs(program_registry.CPU_KINDS)
            self.assertEqual([(p.name, p.kind) for p in cpu.values()],
                             [("a", "autograd"), ("launcher_b", "launcher")])
            self.assertTrue(cpu["launcher_b"].cudagraphs)
            gpu = program_registry.programs(program_registry.CUDAGRAPH_KINDS)
            self.assertEqual(gpu["a"].inductor_config, {"k": 1})
            program_registry.program("optimizer", "a again")(a)
            with self.assertRaises(AssertionError):
                program_registry.programs(program_registry.CPU_KINDS)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class TableTest(unittest.TestCase):
    def test_each_form_names_entries_of_the_table(self):
        from capsim_recorder.launcher import wraps
        from capsim_recorder.launcher.cudagraphs import CudagraphRecording
        from capsim_recorder.launcher.session import RecordingSession

        names = [entry.name for entry in wraps.TABLE]
        self.assertEqual(len(names), len(set(names)))
        for sink in (RecordingSession, CudagraphRecording):
            self.assertTrue(issubclass(sink, Sink), sink.__name__)
            self.assertLessEqual(set(sink.WRAPS), set(names), sink.__name__)
        self.assertEqual(set(RecordingSession.WRAPS) | set(CudagraphRecording.WRAPS), set(names))

    def test_installed_restores_every_original(self):
        import torch

        from capsim_recorder.launcher import wraps

        class Everything(Sink):
            WRAPS = tuple(entry.name for entry in wraps.TABLE)

        targets = [entry.target() for entry in wraps.TABLE]
        before = [(owner, attr, attr in vars(owner), getattr(owner, attr)) for owner, attr in targets]
        lin = torch.nn.Linear(2, 1)
        with wraps.installed(Everything()):
            self.assertIsNotNone(wraps.active())
            opt = torch.optim.SGD(lin.parameters(), lr=0.1)
            lin(torch.ones(1, 2)).sum().backward()
            opt.zero_grad(set_to_none=False)
            self.assertEqual(float(lin.weight.grad.abs().sum()), 0.0)
            lin.weight.grad = None
            self.assertIsNone(lin.weight.grad)
        self.assertIsNone(wraps.active())
        for owner, attr, own, original in before:
            self.assertEqual(attr in vars(owner), own, attr)
            self.assertIs(getattr(owner, attr), original, attr)


if __name__ == "__main__":
    unittest.main()
