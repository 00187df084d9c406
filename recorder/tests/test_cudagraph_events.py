"""The tree-manager observer (capsim_recorder.cudagraph.observer) driven by a
stand-in manager (fake_tree.py): which events each path writes, with which
fields. Plain python3, no torch, no GPU.

Run: python3 -m unittest discover -s recorder/tests
"""

import importlib
import os
import sys
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from capsim_recorder.cudagraph.observer import TreeObserver  # noqa: E402
from capsim_recorder.cudagraph.values import (  # noqa: E402
    FidInfo,
    NullSink,
    drop_positions,
    int_positions_of,
    span_bytes,
)

import fake_tree  # noqa: E402


class RecordingSink(NullSink):
    def __init__(self):
        self.events = []
        self.enters = []
        self.exits = []
        self.compile_skips = []
        self.backward_marks = 0

    def bind_function(self, fid, inputs, static_input_idxs, mode):
        return FidInfo(f"f{fid}", drop_positions(int_positions_of(inputs)))

    def on_run_enter(self, fid, info, inputs):
        self.enters.append((fid, info.function, len(inputs)))
        return len(self.enters)

    def on_run_exit(self, token, outputs, error):
        self.exits.append((token, error))

    def event(self, kind, fields):
        self.events.append((kind, fields))

    def on_compile_skip(self, message):
        self.compile_skips.append(message)

    def on_set_to_running_backward(self):
        self.backward_marks += 1

    def kinds(self):
        return [k for k, _ in self.events]

    def of(self, kind):
        return [f for k, f in self.events if k == kind]


def model(inputs):
    return [fake_tree.FakeTensor(0x9000 + 0x100 * len(inputs), (2, 2))]


class ObserverTest(unittest.TestCase):
    def setUp(self):
        importlib.reload(fake_tree)
        self.sink = RecordingSink()
        self.obs = TreeObserver(
            self.sink,
            fake_tree.CUDAGraphTreeManager,
            fake_tree.CUDAGraphNode,
            skip_log_modules=[fake_tree],
            get_block_count=lambda mgr: 7,
            dealloc_message_prefix="Fake overwritten-output error.",
        ).install()
        self.mgr = fake_tree.CUDAGraphTreeManager()
        self.param = fake_tree.FakeTensor(0x7F0000000000, (2, 2))

    def tearDown(self):
        self.obs.uninstall()

    def call_first(self, inputs, static=(0,), mode=fake_tree.CompilationMode.FORWARD):
        fn, out = self.mgr.add_function(model, list(inputs), list(static), None, mode, (), (), (), None)
        return fn, out

    def x(self, ptr=0x7F0000100000):
        return fake_tree.FakeTensor(ptr, (2, 2))

    def test_warmup_record_replay(self):
        fn, _ = self.call_first([self.param, self.x()])
        fn([self.param, self.x()])
        fn([self.param, self.x(0x7F0000200000)])
        self.assertEqual(self.obs.failures, [])
        self.assertEqual(
            self.sink.kinds(),
            ["compile", "warmup", "path_end", "record", "path_end", "copy_in", "replay"],
        )
        self.assertEqual(
            self.sink.of("compile")[0],
            {"function": "f0", "fid": 0, "int_key": [], "static_input_idxs": [0]},
        )
        self.assertEqual(self.sink.of("warmup")[0], {"fid": 0, "function": "f0", "node": -1, "depth": 0})
        self.assertEqual(
            self.sink.of("record")[0],
            {
                "fid": 0,
                "function": "f0",
                "graph": 0,
                "parent": None,
                "static": [0],
                "managed": [],
                "non_static": [1],
                "static_ptrs": ["0x7f0000000000"],
                "reason": "no_child",
            },
        )
        self.assertEqual(self.sink.of("copy_in")[0], {"fid": 0, "function": "f0", "graph": 0, "copies": 1, "bytes": 16})
        self.assertEqual(
            self.sink.of("replay")[0],
            {"fid": 0, "function": "f0", "graph": 0, "static_ptrs": ["0x7f0000000000"]},
        )
        self.assertEqual(self.sink.of("path_end")[0], {"reason": "new_generation"})
        # One enter and exit per call, none for the nested calls.
        self.assertEqual([e[1] for e in self.sink.enters], ["f0", "f0", "f0"])
        self.assertEqual(len(self.sink.exits), 3)

    def test_rerecord_when_a_static_pointer_moves(self):
        fn, _ = self.call_first([self.param, self.x()])
        fn([self.param, self.x()])
        moved = fake_tree.FakeTensor(0x7F0000000400, (2, 2))
        fn([moved, self.x()])
        records = self.sink.of("record")
        self.assertEqual(len(records), 2)
        self.assertEqual(records[1]["reason"], "static_input_idx_mismatch")
        self.assertEqual(records[1]["input"], 0)
        self.assertEqual(records[1]["old_ptr"], "0x7f0000000000")
        self.assertEqual(records[1]["new_ptr"], "0x7f0000000400")
        self.assertEqual(records[1]["static_ptrs"], ["0x7f0000000400"])

    def test_integer_inputs_leave_the_index_lists(self):
        fn, _ = self.call_first([5, self.param, self.x()], static=(1,))
        fn([5, self.param, self.x()])
        fn([5, self.param, self.x()])
        self.assertEqual(self.sink.of("compile")[0]["int_key"], [5])
        self.assertEqual(self.sink.of("compile")[0]["static_input_idxs"], [0])
        rec = self.sink.of("record")[0]
        self.assertEqual((rec["static"], rec["non_static"]), ([0], [1]))
        self.assertEqual(self.sink.of("copy_in")[0]["copies"], 1)

    def test_mutation_skip_and_eager(self):
        # The fake marks a function that mutates inputs (mutated_input_idxs).
        self.mgr.add_function(model, [self.param, self.x()], [0], None, fake_tree.CompilationMode.FORWARD,
                              (), (), (1,), None)
        kinds = self.sink.kinds()
        self.assertEqual(kinds, ["compile", "skip", "eager"])
        skip = self.sink.of("skip")[0]
        self.assertEqual(skip["id"], "S1")
        self.assertEqual(skip["fid"], 0)
        self.assertTrue(skip["message"].startswith("skipping cudagraphs due to mutated inputs"))
        self.assertEqual(self.sink.of("eager")[0], {"fid": 0, "function": "f0", "reason": "mutated_inputs"})
        self.assertEqual(fake_tree.SKIPS, [skip["message"]])  # the original still ran

    def test_rerecord_limit_skip(self):
        self.mgr.rerecord_limit = 0
        fn, _ = self.call_first([self.param, self.x()])
        fn([self.param, self.x()])
        fn([fake_tree.FakeTensor(0x7F0000000800, (2, 2)), self.x()])
        skip = self.sink.of("skip")[0]
        self.assertEqual(skip["id"], "E5")
        self.assertEqual(skip["reason"], "static_input_idx_mismatch")
        self.assertEqual((skip["input"], skip["old_ptr"], skip["new_ptr"]), (0, "0x7f0000000000", "0x7f0000000800"))
        self.assertEqual(self.sink.kinds()[-2:], ["skip", "eager"])
        self.assertEqual(self.sink.of("eager")[0]["reason"], "rerecord_limit")

    def test_error_mode_raises_e4(self):
        fake_tree.CUDAGraphNode.error_mode = True
        fn, _ = self.call_first([self.param, self.x()])
        fn([self.param, self.x()])
        with self.assertRaises(RuntimeError) as caught:
            fn([fake_tree.FakeTensor(0x7F0000000800, (2, 2)), self.x()])
        error = self.sink.of("error")[0]
        self.assertEqual(error["id"], "E4")
        self.assertEqual(error["exception"], "RuntimeError")
        self.assertIn("static input data pointer changed", error["message"])
        self.assertTrue(caught.exception._capsim_recorded)
        self.assertIs(self.sink.exits[-1][1], caught.exception)
        # The failed replay wrote no copy_in and no replay.
        self.assertEqual(self.sink.of("replay"), [])

    def test_dealloc_error_is_e1(self):
        fields = self.obs.error_fields(RuntimeError("Fake overwritten-output error. Stack trace: x. Advice."), None)
        self.assertEqual(fields["id"], "E1")
        fields = self.obs.error_fields(ValueError("other"), None)
        self.assertNotIn("id", fields)

    def test_warning_w1(self):
        self.mgr.warn = True
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.call_first([self.param, self.x()])
        self.assertEqual(self.sink.of("warning"), [{"id": "W1", "fid": 0, "message": "Fake W1: unable to hit the fast path"}])
        self.assertEqual([str(w.message) for w in caught], ["Fake W1: unable to hit the fast path"])

    def test_checkpoint_and_outputs_dead(self):
        fn, _ = self.call_first([self.param, self.x()])
        fn([self.param, self.x()])
        fn([self.param, self.x()])  # replay: EXECUTION
        self.mgr.new_generation = False
        g, _ = self.call_first([self.param, self.x()])  # a new function warms up from EXECUTION
        self.assertIn("checkpoint", self.sink.kinds())
        cp = self.sink.of("checkpoint")[0]
        self.assertEqual(cp, {"count": 1, "node": 0, "live": 2, "pool_blocks_before": 7, "pool_blocks_after": 7})

    def test_compile_time_skip_goes_to_the_sink(self):
        fake_tree.log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to cpu device")
        self.assertEqual(self.sink.compile_skips, ["skipping cudagraphs due to cpu device"])
        self.assertEqual(self.sink.events, [])

    def test_set_to_running_backward(self):
        self.mgr.set_to_running_backward()
        self.assertEqual((self.sink.backward_marks, self.mgr.backward_marks), (1, 1))

    def test_uninstall_restores(self):
        self.obs.uninstall()
        for name in ("run", "record_function", "execute_node", "add_function",
                     "_update_cudagraph_managed_input_rerecord"):
            self.assertEqual(
                fake_tree.CUDAGraphTreeManager.__dict__[name].__qualname__.split(".")[0],
                "CUDAGraphTreeManager",
            )
            self.assertFalse(hasattr(fake_tree.CUDAGraphTreeManager.__dict__[name], "__wrapped__"))
        self.assertFalse(hasattr(fake_tree.log_cudagraph_skip_and_bump_counter, "__wrapped__"))

    def test_demoted_managed_input_is_copied(self):
        # 2.15: the edge (root, f0) demotes input 2 at its first recording;
        # the recording keeps it static (with its pointer) and copies it in.
        self.mgr.demotable = (2,)
        y = fake_tree.FakeTensor(0x7F0000300000, (2, 2))
        fn, _ = self.call_first([self.param, self.x(), y])
        fn([self.param, self.x(), y])
        self.assertEqual(self.sink.kinds()[:5], ["compile", "warmup", "path_end", "demote", "record"])
        self.assertEqual(self.sink.of("demote"), [{"fid": 0, "function": "f0", "parent": None, "input": 2}])
        rec = self.sink.of("record")[0]
        self.assertEqual((rec["static"], rec["non_static"], rec["copied_managed"]), ([0, 2], [1], [2]))
        self.assertEqual(rec["static_ptrs"], ["0x7f0000000000", "0x7f0000300000"])
        fn([self.param, self.x(), y])  # replay: the non-static input and the demoted one
        self.assertEqual(self.sink.of("copy_in")[0]["copies"], 2)
        self.assertEqual(self.sink.of("copy_in")[0]["bytes"], 32)
        # A later recording on the edge copies it too, with no second demote.
        fn([fake_tree.FakeTensor(0x7F0000000400, (2, 2)), self.x(), y])
        self.assertEqual(len(self.sink.of("demote")), 1)
        self.assertEqual(self.sink.of("record")[1]["copied_managed"], [2])
        self.assertEqual(self.obs.failures, [])

    def test_no_copied_managed_without_demotion(self):
        fn, _ = self.call_first([self.param, self.x()])
        fn([self.param, self.x()])
        self.assertNotIn("copied_managed", self.sink.of("record")[0])
        self.assertEqual(self.sink.of("demote"), [])

    def test_demote_per_newly_demoted_index(self):
        fn, _ = self.call_first([5, self.param, self.x(), self.x(0x7F0000100400)], static=(1,))
        self.mgr.managed_input_rerecord_limit = 2
        update = self.mgr._update_cudagraph_managed_input_rerecord
        fid, parent = fake_tree.FunctionID(0), fake_tree.GraphID(3)
        update(parent, fid, {2, 3})  # counted once: none demoted
        self.assertEqual(self.sink.of("demote"), [])
        update(parent, fid, {2, 3})  # both reach the limit
        # Input positions in capsim's order (the int input 0 is not one).
        self.assertEqual(self.sink.of("demote"), [
            {"fid": 0, "function": "f0", "parent": 3, "input": 1},
            {"fid": 0, "function": "f0", "parent": 3, "input": 2},
        ])
        update(parent, fid, {2, 3})  # already demoted: nothing new
        update(None, fid, {2})  # another edge, counted once
        self.assertEqual(len(self.sink.of("demote")), 2)
        self.assertEqual(self.obs.failures, [])

    def test_a_failing_demote_observer_does_not_break_the_call(self):
        from capsim_recorder import torch_compat

        saved = torch_compat.demoted_managed_idxs

        def broken(mgr):
            raise ValueError("broken read")

        torch_compat.demoted_managed_idxs = broken
        try:
            self.mgr._update_cudagraph_managed_input_rerecord(None, fake_tree.FunctionID(0), {1})
        finally:
            torch_compat.demoted_managed_idxs = saved
        self.assertEqual(self.mgr.demoted_cudagraph_managed_idxs, {None: {fake_tree.FunctionID(0): {1}}})
        self.assertEqual(self.sink.of("demote"), [])
        self.assertTrue(any("broken read" in f for f in self.obs.failures))

    def test_a_release_without_demotion(self):
        self.assertEqual(self.obs.extra_kinds, ["demote"])
        self.obs.uninstall()
        delattr(fake_tree.CUDAGraphTreeManager, "_update_cudagraph_managed_input_rerecord")
        obs = TreeObserver(RecordingSink(), fake_tree.CUDAGraphTreeManager, fake_tree.CUDAGraphNode).install()
        try:
            self.assertEqual((obs.failures, obs.extra_kinds), ([], []))
        finally:
            obs.uninstall()

    def test_a_failing_sink_does_not_break_the_run(self):
        class Broken(RecordingSink):
            def event(self, kind, fields):
                raise ValueError("broken sink")

        self.obs.uninstall()
        obs = TreeObserver(Broken(), fake_tree.CUDAGraphTreeManager, fake_tree.CUDAGraphNode).install()
        try:
            fn, out = self.call_first([self.param, self.x()])
            self.assertEqual(len(out), 1)
            self.assertTrue(any("broken sink" in f for f in obs.failures))
        finally:
            obs.uninstall()


class HelpersTest(unittest.TestCase):
    def test_span_bytes(self):
        self.assertEqual(span_bytes(fake_tree.FakeTensor(0, (3, 4))), 48)
        # An expanded dim (stride 0) is copied once.
        self.assertEqual(span_bytes(fake_tree.FakeTensor(0, (3, 4), (0, 1))), 16)
        self.assertEqual(span_bytes(fake_tree.FakeTensor(0, (0, 4))), 0)

    def test_drop_positions(self):
        remap = drop_positions([0, 3])
        self.assertEqual([remap(i) for i in range(5)], [None, 0, 1, None, 2])


if __name__ == "__main__":
    unittest.main()
