"""torch_compat.py: the table of PyTorch's private entry points, its
per-release gates and the self-check every recording runs first. The table
and the gates need no torch; the self-check on this release (it must find
everything) and its report of a missing method need it.

Run: python3 -m unittest discover -s recorder/tests
"""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from capsim_recorder import torch_compat  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None
ALL_NEEDS = (torch_compat.AUTOGRAD, torch_compat.OPTIMIZER, torch_compat.CUDAGRAPHS,
             torch_compat.LAUNCHER, torch_compat.READS, torch_compat.PROGRAMS)


class TableTest(unittest.TestCase):
    def test_releases(self):
        self.assertEqual(torch_compat.release_tuple("2.11.0+cu130"), (2, 11, 0))
        self.assertEqual(torch_compat.release_tuple("2.12.0a0+git1234"), (2, 12, 0))
        self.assertEqual(torch_compat.release_tuple("2.8"), (2, 8, 0))

    def test_gates(self):
        reads = next(e for e in torch_compat.ENTRY_POINTS if e.path.endswith("ignore_compile_internals"))
        self.assertFalse(torch_compat.expected(reads, "2.8.0"))
        self.assertTrue(torch_compat.expected(reads, "2.11.0+cu130"))
        self.assertTrue(torch_compat.expected(reads, "2.15.0"))
        demote = next(e for e in torch_compat.ENTRY_POINTS
                      if e.path.endswith("._update_cudagraph_managed_input_rerecord"))
        self.assertEqual((demote.own, demote.needed_by), (True, (torch_compat.CUDAGRAPHS,)))
        self.assertFalse(torch_compat.expected(demote, "2.14.1"))
        self.assertTrue(torch_compat.expected(demote, "2.15.0+cu132"))

    def test_every_patched_method_is_listed(self):
        paths = [e.path for e in torch_compat.ENTRY_POINTS]
        self.assertEqual(len(paths), len(set(paths)))
        later = tuple(m for m, _ in torch_compat.LATER_MANAGER_METHODS)
        self.assertEqual(later, ("_update_cudagraph_managed_input_rerecord",))
        patched = [p for p in paths if p.startswith((torch_compat.MANAGER_CLASS + ".", torch_compat.NODE_CLASS + "."))
                   and p.rsplit(".", 1)[1] in torch_compat.MANAGER_METHODS + later + torch_compat.NODE_METHODS]
        self.assertEqual(len(patched), 15)
        self.assertTrue(all(p.startswith("torch.") for p in paths))
        self.assertTrue(all(set(e.needed_by) <= set(ALL_NEEDS) for e in torch_compat.ENTRY_POINTS))

    def test_demoted_managed_idxs(self):
        class Mgr:
            demoted_cudagraph_managed_idxs = {None: {"f0": [2, 1]}, "g3": {"f0": [4], "f1": []}}

        self.assertEqual(torch_compat.demoted_managed_idxs(Mgr()),
                         {(None, "f0"): {1, 2}, ("g3", "f0"): {4}, ("g3", "f1"): set()})
        self.assertEqual(torch_compat.demoted_managed_idxs(object()), {})  # before 2.15

    def test_add_function_mode_by_position(self):
        # add_function(self, model, inputs, static_input_idxs, stack_traces, mode, ...)
        self.assertEqual(torch_compat.add_function_mode(["traces", "MODE", "consts"], {}), "MODE")
        self.assertEqual(torch_compat.add_function_mode([], {"mode": "KW"}), "KW")

    def test_nothing_needed_nothing_checked(self):
        self.assertEqual(torch_compat.self_check((), version="2.11.0"), [])


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class SelfCheckTest(unittest.TestCase):
    def test_this_release_has_everything(self):
        self.assertEqual(torch_compat.self_check(ALL_NEEDS), [])

    def test_later_methods_as_gated(self):
        import torch

        manager, _ = torch_compat.tree_classes()
        for entry in torch_compat.ENTRY_POINTS:
            name = entry.path.rsplit(".", 1)[1]
            if name in dict(torch_compat.LATER_MANAGER_METHODS):
                self.assertEqual(name in vars(manager), torch_compat.expected(entry, torch.__version__), name)

    def test_a_missing_method_is_said(self):
        manager, _ = torch_compat.tree_classes()
        saved = manager.__dict__["run_eager"]
        delattr(manager, "run_eager")
        try:
            lines = torch_compat.self_check((torch_compat.CUDAGRAPHS,))
        finally:
            setattr(manager, "run_eager", saved)
        self.assertEqual(len(lines), 1)
        self.assertIn("CUDAGraphTreeManager.run_eager: missing", lines[0])
        # An older release is not expected to have what came later.
        self.assertEqual([line for line in torch_compat.self_check((torch_compat.READS,), version="2.8.0")], [])


if __name__ == "__main__":
    unittest.main()
