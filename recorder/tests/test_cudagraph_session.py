"""The cudagraph session end to end without a GPU or torch: a hand-made graph
translation, the compile hooks' wrappers (GraphCall, PartitionRun), the
observer over the stand-in manager (fake_tree.py), and the trace the session
writes. If capsim is built (build/default/cli/capsim), its reader must accept
the trace.

Run: python3 -m unittest discover -s recorder/tests
"""

import gc
import importlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from capsim_recorder.aten_translate import GraphTranslation, NodeTranslation  # noqa: E402
from capsim_recorder import aten_translate  # noqa: E402
from capsim_recorder.cudagraph import stack_traces as st  # noqa: E402
from capsim_recorder.cudagraph.hooks import CompileHooks, GraphCall, PartitionRun  # noqa: E402
from capsim_recorder.cudagraph.observer import TreeObserver  # noqa: E402
from capsim_recorder.cudagraph.records import PartitionRecord  # noqa: E402
from capsim_recorder.cudagraph.session import Session  # noqa: E402

from capsim_recorder.trace_writer import DEFAULT_CONFIG as CONFIG  # noqa: E402

import fake_tree  # noqa: E402

CAPSIM = os.environ.get("CAPSIM_BIN") or os.path.join(ROOT, "build", "default", "cli", "capsim")


def capsim_usable():
    """A built capsim at least as new as its trace reader's sources (the
    reader accepts a pytorch trace's events without their required fields
    only since then)."""
    if not os.path.exists(CAPSIM):
        return False
    newest = max(os.path.getmtime(os.path.join(ROOT, "traces", "format", f))
                 for f in ("trace_reader.cpp", "event_schema.cpp", "program_json.cpp"))
    return os.environ.get("CAPSIM_BIN") is not None or os.path.getmtime(CAPSIM) >= newest


def mm_translation(untranslated=False):
    """primals_1 (a weight) and primals_2 (an input): out = primals_2 @ t(primals_1)."""
    nodes = {
        "permute": NodeTranslation([("t", [("n", "primals_1")], {})]),
        "mm": NodeTranslation([("mm", [("n", "primals_2"), ("n", "permute")], {})]),
    }
    bad = {}
    if untranslated:
        del nodes["mm"]
        bad["mm"] = "aten.fancy.default"
    return GraphTranslation(
        placeholders=["primals_1", "primals_2"],
        placeholder_is_tensor=[True, True],
        placeholder_problem={},
        nodes=nodes,
        untranslated=bad,
        inputs_of={"permute": ["primals_1"], "mm": ["primals_2", "permute"]},
        order=["permute", "mm"],
        outputs=["mm"],
        output_is_tensor=[True],
    )


class SessionTest(unittest.TestCase):
    def setUp(self):
        importlib.reload(fake_tree)
        self.dir = tempfile.TemporaryDirectory()
        self.generation = 0
        self.session = Session("fake_program", generation_fn=lambda: self.generation)
        self.observer = TreeObserver(
            self.session, fake_tree.CUDAGraphTreeManager, fake_tree.CUDAGraphNode,
            skip_log_modules=[fake_tree],
        ).install()
        self.mgr = fake_tree.CUDAGraphTreeManager()
        self.ptr = 0x7F0000100000

    def tearDown(self):
        self.observer.uninstall()
        self.dir.cleanup()

    def compiled(self, untranslated=False, static=(0,), same_output=None, traces=None):
        """What the compile hooks build for one cudagraphified graph
        (`traces`: the stack traces cudagraphify was handed)."""
        s = self.session
        g = s.new_graph(7, "forward", None, list(static))
        g.translation, g.translate_error = mm_translation(untranslated), None
        part = PartitionRecord(g, 0, list(static), ["primals_1", "primals_2"], stack_traces=traces)
        g.partitions.append(part)
        s.finish_graph(g, None)
        state = {}
        mgr = self.mgr

        def model(inputs):
            inputs.clear()  # Inductor's boxed calling convention
            if same_output is not None:
                return [same_output]
            self.ptr += 0x200
            return [fake_tree.FakeTensor(self.ptr, (3, 2))]

        def deferred(inputs):  # cudagraphify_impl's cache, reduced to one key
            if "fn" not in state:
                state["fn"], out = mgr.add_function(model, inputs, list(static), None,
                                                    fake_tree.CompilationMode.FORWARD, (), (), (), None)
                return out
            return state["fn"](inputs)

        return GraphCall(s, g, PartitionRun(s, part, deferred))

    def new_tensor(self, name, t, kind="input"):
        fields = {"name": name, "sizes": list(t.size())}
        if kind == "param":
            fields["parameter"] = True
        self.session.action("new_tensor", fields)
        self.session.registry.bind(t, name, kind)
        return t

    def write(self):
        path = os.path.join(self.dir.name, "t.jsonl")
        counts = self.session.write(path, producer="pytorch", seed=0, config=CONFIG,
                                    extensions={"x_device": "fake"})
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        return path, counts, lines

    def run_program(self, fn):
        w = self.new_tensor("w", fake_tree.FakeTensor(0x7F0000000000, (2, 4)), kind="param")
        outs = []
        for step in range(3):
            self.generation += 1  # Dynamo entered the compiled frame
            x = self.new_tensor("x", fake_tree.FakeTensor(0x7F0000001000 + step * 0x200, (3, 4)))
            outs.append(fn([w, x])[0])
            del x
        return w, outs

    def test_trace_of_three_calls(self):
        fn = self.compiled()
        w, outs = self.run_program(fn)
        del outs[0]  # the program drops its first output
        gc.collect()
        path, counts, lines = self.write()
        self.assertEqual(self.observer.failures, [])
        header, function = lines[0], lines[1]
        self.assertEqual(header["observes"][:4], ["compile", "warmup", "record", "replay"])
        self.assertNotIn("x_untranslated", header)
        self.assertEqual(
            {k: function[k] for k in ("function", "mode", "inputs", "ops", "outputs", "static_input_idxs", "param_input_idxs")},
            {
                "function": "fwd0",
                "mode": "forward",
                "inputs": ["primals_1", "primals_2"],
                "ops": [{"op": "t", "args": [0]}, {"op": "mm", "args": [1, 2]}],
                "outputs": [3],
                "static_input_idxs": [0],
                "param_input_idxs": [0],
            },
        )
        actions = [(l["action"], l.get("name") or l.get("function")) for l in lines if l["type"] == "action"]
        self.assertEqual(
            actions,
            [("new_tensor", "w"), ("new_tensor", "x"), ("call", "fwd0"),
             ("del", "x"), ("new_tensor", "x"), ("call", "fwd0"),
             ("del", "x"), ("new_tensor", "x"), ("call", "fwd0"),
             ("del", "fwd0_1_0"), ("del", "x")],
        )
        calls = [l for l in lines if l.get("action") == "call"]
        self.assertEqual(calls[0]["args"], ["w", "x"])
        self.assertEqual(calls[0]["outputs"], ["fwd0_1_0"])
        self.assertNotIn("new_invocation", calls[0])  # a forward: new by default
        events = [l["event"] for l in lines if l["type"] == "event"]
        self.assertEqual(events, ["compile", "warmup", "path_end", "record", "path_end", "copy_in", "replay"])
        self.assertEqual(counts["functions"], ["fwd0"])
        if capsim_usable():
            r = subprocess.run([CAPSIM, "replay", "--json", path], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 2, r.stdout + r.stderr)

    def test_a_demoted_input_in_the_trace(self):
        # 2.15: the observer wrote `demote` (the driver hands its extra kinds
        # to the session), so the header declares it; capsim's reader refuses
        # an event kind the header does not list.
        self.assertEqual(self.observer.extra_kinds, ["demote"])
        self.session.extra_kinds = list(self.observer.extra_kinds)
        self.mgr.demotable = (1,)
        fn = self.compiled()
        w, outs = self.run_program(fn)
        path, _, lines = self.write()
        self.assertEqual(self.observer.failures, [])
        self.assertEqual(lines[0]["observes"][-1], "demote")
        events = [l for l in lines if l["type"] == "event"]
        self.assertEqual([e["event"] for e in events][2:5], ["path_end", "demote", "record"])
        self.assertEqual({k: events[3][k] for k in ("function", "parent", "input")},
                         {"function": "fwd0", "parent": None, "input": 1})
        self.assertEqual(events[4]["copied_managed"], [1])
        if capsim_usable():
            r = subprocess.run([CAPSIM, "replay", "--json", path], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertNotIn("not in the header's observes list", r.stdout)
        # A CPU run (no tree manager) keeps the header it always had.
        _, _, lines = self.write_with({**CONFIG, "cudagraphs": False}, keep_events=False)
        self.assertNotIn("demote", lines[0]["observes"])

    def write_with(self, config, keep_events=True):
        if not keep_events:
            for it in self.session.items:
                it.events[:] = [e for e in it.events if e[0] != "demote"]
        path = os.path.join(self.dir.name, "t2.jsonl")
        self.session.write(path, producer="pytorch", seed=0, config=config, extensions={"x_device": "fake"})
        with open(path, encoding="utf-8") as f:
            return path, None, [json.loads(line) for line in f]

    def test_an_input_that_dies_in_the_call_is_consumed(self):
        fn = self.compiled()
        w = self.new_tensor("w", fake_tree.FakeTensor(0x7F0000000000, (2, 4)), kind="param")
        self.generation += 1
        fn([w, fake_tree.FakeTensor(0x7F0000002000, (3, 4))])  # nobody else holds the input
        _, _, lines = self.write()
        actions = [l for l in lines if l["type"] == "action"]
        self.assertEqual(actions[1]["action"], "new_tensor")
        self.assertEqual(actions[1]["name"], "t0")
        self.assertEqual(actions[2]["args"], ["w", "t0"])
        self.assertEqual(actions[2]["consume"], ["t0"])

    def test_same_generation_is_not_a_new_invocation(self):
        fn = self.compiled()
        w = self.new_tensor("w", fake_tree.FakeTensor(0x7F0000000000, (2, 4)), kind="param")
        x = self.new_tensor("x", fake_tree.FakeTensor(0x7F0000001000, (3, 4)))
        self.generation += 1
        fn([w, x])
        fn([w, x])  # no Dynamo frame in between
        _, _, lines = self.write()
        calls = [l for l in lines if l.get("action") == "call"]
        self.assertNotIn("new_invocation", calls[0])
        self.assertIs(calls[1]["new_invocation"], False)

    def test_untranslated_keeps_events_on_standalone_actions(self):
        fn = self.compiled(untranslated=True)
        self.run_program(fn)
        path, counts, lines = self.write()
        header = lines[0]
        self.assertEqual(header["x_untranslated"], ["aten.fancy.default"])
        self.assertFalse(any(l["type"] == "function" for l in lines))
        kinds = {l["action"] for l in lines if l["type"] == "action"}
        self.assertLessEqual(kinds, {"new_tensor", "mark_static", "reassign_data", "mark_step_begin", "read"})
        moved = [l for l in lines if l["type"] == "event"]
        self.assertEqual(len(moved), 7)
        self.assertTrue(all(e["x_from"] == "call fwd0" for e in moved))
        if capsim_usable():
            r = subprocess.run([CAPSIM, "replay", "--json", path], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 2, r.stdout + r.stderr)

    def test_a_cached_output_gets_a_new_name_each_replay(self):
        cached = fake_tree.FakeTensor(0x7F0000300000, (3, 2))
        fn = self.compiled(same_output=cached)
        w = self.new_tensor("w", fake_tree.FakeTensor(0x7F0000000000, (2, 4)), kind="param")
        x = self.new_tensor("x", fake_tree.FakeTensor(0x7F0000001000, (3, 4)))
        # The fake model hands out the same object every call, as a replay
        # hands out its cached outputs.
        outs = []
        for _ in range(3):
            self.generation += 1
            outs.append(fn([w, x])[0])
        self.assertTrue(all(o is cached for o in outs))
        _, _, lines = self.write()
        calls = [l for l in lines if l.get("action") == "call"]
        self.assertEqual([c["outputs"] for c in calls], [["fwd0_1_0"], ["fwd0_2_0"], ["fwd0_3_0"]])
        del cached

    def test_optimizer_step_inputs_in_capsim_order(self):
        class Opt:
            def __init__(self, params, state):
                self.param_groups = [{"params": params}]
                self.state = state

        s = self.session
        p = [fake_tree.FakeTensor(0x1000 * (i + 1), (2, 2)) for i in range(2)]
        state = {}
        for i, q in enumerate(p):
            q.grad = fake_tree.FakeTensor(0x10000 + 0x100 * i, (2, 2))
            state[q] = {
                "exp_avg": fake_tree.FakeTensor(0x20000 + 0x100 * i, (2, 2)),
                "exp_avg_sq": fake_tree.FakeTensor(0x30000 + 0x100 * i, (2, 2)),
                "step": fake_tree.FakeTensor(0x40000 + 0x100 * i, ()),
            }
        opt = Opt(p, state)
        import weakref

        s.table.optimizers["opt"] = (weakref.ref(opt), ["w1", "w2"], "adam")
        # PyTorch's order (as in 2.11's CPU graph): params, then each state, grads last.
        real = [p[0], p[1], state[p[0]]["step"], state[p[0]]["exp_avg"], state[p[0]]["exp_avg_sq"],
                state[p[1]]["step"], state[p[1]]["exp_avg"], state[p[1]]["exp_avg_sq"], p[0].grad, p[1].grad]
        remap = s.table.step_remap("opt", real, [])
        self.assertEqual([remap(i) for i in range(10)], [0, 1, 6, 4, 5, 9, 7, 8, 2, 3])
        self.assertEqual(s.table.step_inputs["opt"][:3], ["param_0", "param_1", "step_0"])
        # An input that is none of those: PyTorch's indices, and a note.
        remap = s.table.step_remap("opt", real[:-1] + [fake_tree.FakeTensor(0x99, (2, 2))], [])
        self.assertEqual(remap(9), 9)
        self.assertTrue(any("opt.step" in n for n in s.notes))

    def test_stack_traces_in_the_function_line(self):
        fn = self.compiled(traces=['  File "train.py", line 9, in forward\n    return x @ w.t()\n'])
        self.run_program(fn)
        path, _, lines = self.write()
        self.assertEqual(lines[1]["type"], "function")
        self.assertEqual(lines[1]["stack_traces"], ['File "train.py", line 9, in forward\n    return x @ w.t()'])
        if capsim_usable():
            # (Fails with "unknown field" until capsim's reader knows `stack_traces`.)
            r = subprocess.run([CAPSIM, "replay", "--json", path], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 2, r.stdout + r.stderr)

    def test_no_stack_traces_no_field(self):
        for k, traces in enumerate((None, [None], [""])):
            with self.subTest(traces=traces):
                if k:
                    self.tearDown()
                    self.setUp()
                fn = self.compiled(traces=traces)
                self.run_program(fn)
                _, _, lines = self.write()
                self.assertEqual(lines[1]["type"], "function")
                self.assertNotIn("stack_traces", lines[1])


def two_output_translation():
    """mm_translation with a second output, t(primals_1)."""
    tr = mm_translation()
    tr.outputs = ["mm", "permute"]
    tr.output_is_tensor = [True, True]
    return tr


class FakeNode:
    def __init__(self, op, name, trace=None, args=()):
        self.op, self.name, self.args = op, name, args
        self.meta = {} if trace is None else {"stack_trace": trace}


class FakeGraphModule:
    """A gm with nodes named as in mm_translation; outputs (mm, None, permute)."""

    def __init__(self, snapshot=None):
        w, x = FakeNode("placeholder", "primals_1"), FakeNode("placeholder", "primals_2")
        t = FakeNode("call_function", "permute", "  File \"m.py\", line 3, in f\n    wt = w.t()\n")
        mm = FakeNode("call_function", "mm", "  File \"m.py\", line 4, in f\n    y = x @ wt\n")
        out = FakeNode("output", "output", args=((mm, None, t),))
        if snapshot is not None:
            out.meta["output_stack_traces"] = snapshot
        self.graph = type("G", (), {"nodes": [w, x, t, mm, out]})()


class StackTracesTest(unittest.TestCase):
    """cudagraph/stack_traces.py: PyTorch's per-output stack traces, as a
    function line's `stack_traces`."""

    def test_of_gm_reads_output_args_or_the_snapshot(self):
        self.assertEqual(st.of_gm(FakeGraphModule()), [
            '  File "m.py", line 4, in f\n    y = x @ wt\n', None, '  File "m.py", line 3, in f\n    wt = w.t()\n'])
        # 2.12 on: the output node's snapshot (before post-grad passes) wins.
        self.assertEqual(st.of_gm(FakeGraphModule(snapshot=["a", None, "b"])), ["a", None, "b"])
        # An empty snapshot does not (PyTorch's `or`).
        self.assertEqual(st.of_gm(FakeGraphModule(snapshot=[]))[1], None)
        self.assertIsNone(st.of_gm(None))

    def test_of_graph_prefers_the_compiled_graphs_own(self):
        info = type("Info", (), {"stack_traces": ["c", None, "d"]})()
        compiled = type("Compiled", (), {"cudagraph_info": info})()
        self.assertEqual(st.of_graph(FakeGraphModule(), compiled), ["c", None, "d"])
        self.assertEqual(st.of_graph(FakeGraphModule(snapshot=["a", None, "b"]), object()), ["a", None, "b"])

    def test_for_function_strips_drops_and_limits(self):
        self.assertEqual(st.for_function(["  a\n", None, " b "], [1], 2), ["a", "b"])
        self.assertEqual(st.for_function(["  a\n", None], [], 2), ["a", None])
        self.assertEqual(st.for_function([" ", "x"], [], 2), ["", "x"])  # PyTorch prints ""
        self.assertIsNone(st.for_function([None, ""], [], 2))  # nothing known: no field
        self.assertIsNone(st.for_function(None, [], 1))
        self.assertIsNone(st.for_function(["a", "b"], [], 1))  # counts differ: no field
        self.assertIsNone(st.for_function(["a"] * (st.MAX_ENTRIES + 1), [], st.MAX_ENTRIES + 1))
        self.assertEqual(len(st.for_function(["a"] * st.MAX_ENTRIES, [], st.MAX_ENTRIES)), st.MAX_ENTRIES)
        long = "x" * 5000 + "innermost"
        (cut,) = st.for_function([long], [], 1)
        self.assertEqual(len(cut), st.MAX_CHARS)
        self.assertTrue(cut.endswith("innermost"))

    def test_for_partition(self):
        traces = ["a", "b", None, "d"]
        # 2.11: one graph output (or None) per partition output.
        self.assertEqual(st.for_partition(traces, [3, None, 0], None), ["d", None, "a"])
        # 2.12 on: a list; the first user-visible one, else the first.
        self.assertEqual(st.for_partition(traces, [[1, 3], [], [0, 1]], {3}), ["d", None, "a"])
        # Several graph outputs with different traces and no user-visible
        # set known: cannot tell.
        self.assertEqual(st.for_partition(traces, [[1, 3], [0]], None), [None, "a"])
        self.assertIsNone(st.for_partition(None, [0], None))


class FakeOp:
    """An op with a schema: which arguments it writes (alias_info.is_write)."""

    def __init__(self, name, writes):
        arg = lambda n, w: type("Arg", (), {"name": n, "alias_info": type("A", (), {"is_write": w})() if w else None})()
        self._schema = type("S", (), {"arguments": [arg(f"a{k}", w) for k, w in enumerate(writes)]})()
        self._name = name

    def __str__(self):
        return self._name


def mutation_gm():
    """x: mutated by add_ (its only user); y: read by mul and written by
    copy_ (two users); z: only read."""
    x, y, z = (FakeNode("placeholder", n) for n in ("x", "y", "z"))
    add_ = FakeNode("call_function", "add_", '  File "%s/m.py", line 5, in f\n    x.add_(1)\n' % os.getcwd(), (x, 1))
    add_.target = FakeOp("aten.add_.Tensor", [True, False])
    mul = FakeNode("call_function", "mul", "  mul trace\n", (y, z))
    mul.target = FakeOp("aten.mul.Tensor", [False, False])
    copy_ = FakeNode("call_function", "copy_", "  copy trace\n", (y, mul))
    copy_.target = FakeOp("aten.copy_.default", [True, False])
    x.users, y.users, z.users = [add_], [mul, copy_], [mul]
    return type("GM", (), {"graph": type("G", (), {"nodes": [x, y, z, add_, mul, copy_]})()})()


class MutatingUsesTest(unittest.TestCase):
    """S1's "Found from": each mutated input's mutating use, per input."""

    def test_mutating_uses(self):
        uses = st.mutating_uses(mutation_gm())
        # The only user's trace (paths under the working directory made
        # relative, not stripped), else the copy_'s; z is not mutated.
        self.assertEqual(uses, {"x": '  File "m.py", line 5, in f\n    x.add_(1)\n', "y": "  copy trace\n"})
        self.assertEqual(st.for_inputs(uses, ["z", "y"]), [None, "  copy trace\n"])
        self.assertIsNone(st.for_inputs(uses, ["z"]))
        self.assertIsNone(st.for_inputs({}, ["x"]))
        self.assertIsNone(st.mutating_uses(None) or None)


class StackTracesSessionTest(unittest.TestCase):
    """The function lines' `stack_traces` from the compile hooks, without a tree."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.session = Session("fake_program")
        self.session.no_cudagraphs = True

    def tearDown(self):
        self.dir.cleanup()

    def lines(self):
        for f in self.session.table.functions.values():
            f.called = True
        path = os.path.join(self.dir.name, "t.jsonl")
        self.session.write(path, producer="pytorch", seed=0, config={**CONFIG, "cudagraphs": False},
                           extensions={})
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if '"type":"function"' in line]

    def compile_through_hooks(self, compiled_info=None, cudagraphify_traces=None, snapshot=None):
        """The compile hooks around a stand-in compile_fx: one graph (its
        translation two_output_translation's, its gm FakeGraphModule's)."""
        cfx = type("compile_fx", (), {})()
        gm = FakeGraphModule(snapshot)

        def original(gm, example_inputs, **kw):
            out = type("Compiled", (), {})()
            out.cudagraph_info = compiled_info
            out.partition_maps = None
            out.current_callable = lambda inputs: []
            if cudagraphify_traces is not None:
                cfx.cudagraphify(lambda inputs: [], (0,), stack_traces=cudagraphify_traces, placeholders=())
            return out

        cfx._compile_fx_inner = original
        cfx.cudagraphify = lambda model, static_input_idxs=(), *a, **k: model
        saved = aten_translate.translate_graph
        aten_translate.translate_graph = lambda gm: two_output_translation_with_none()
        try:
            hooks = CompileHooks(self.session, cfx).install()
            cfx._compile_fx_inner(gm, [], graph_id=0, is_inference=True, static_input_idxs=[0])
            hooks.uninstall()
        finally:
            aten_translate.translate_graph = saved
        self.assertEqual(hooks.failures, [])
        return self.lines()

    def test_from_the_graph_module(self):
        (line,) = self.compile_through_hooks()
        self.assertEqual(line["outputs"], [3, 2])  # (mm, None, permute): None left out
        self.assertEqual(line["stack_traces"], ['File "m.py", line 4, in f\n    y = x @ wt',
                                                'File "m.py", line 3, in f\n    wt = w.t()'])

    def test_from_the_snapshot_and_the_compiled_graph(self):
        (line,) = self.compile_through_hooks(snapshot=["s0\n", None, None])
        self.assertEqual(line["stack_traces"], ["s0", None])
        info = type("Info", (), {"stack_traces": [None, None, "  c2 "]})()
        self.session = Session("fake_program")
        (line,) = self.compile_through_hooks(compiled_info=info, snapshot=["s0", None, None])
        self.assertEqual(line["stack_traces"], [None, "c2"])

    def test_what_cudagraphify_got_wins(self):
        (line,) = self.compile_through_hooks(cudagraphify_traces=["g0", None, "g2"])
        self.assertEqual(line["stack_traces"], ["g0", "g2"])

    def test_none_known_no_field(self):
        (line,) = self.compile_through_hooks(snapshot=[None, None, None])
        self.assertNotIn("stack_traces", line)

    def test_partitions(self):
        """Two partitions (2.12's list mapping): each line gets its own outputs' traces."""
        s = self.session
        g = s.new_graph(0, "inference", None, [0])
        g.translation, g.translate_error = two_output_translation_with_none(), None
        g.stack_traces = ["mm here", None, "t here"]
        for k in range(2):
            g.partitions.append(PartitionRecord(g, k, [0], []))
        pm = type("PM", (), {})
        p0, p1 = pm(), pm()
        p0.input_index_mapping, p0.output_index_mapping = [0, 1], [[0], [1]]
        p1.input_index_mapping, p1.output_index_mapping = [0], [[2]]
        s.finish_graph(g, [p0, p1])
        lines = {l["function"]: l for l in self.lines()}
        self.assertEqual(lines["inf0_p0"]["stack_traces"], ["mm here"])
        self.assertEqual(lines["inf0_p1"]["stack_traces"], ["t here"])


def two_output_translation_with_none():
    """Outputs (mm, None, permute), as FakeGraphModule's."""
    tr = two_output_translation()
    tr.outputs = ["mm", None, "permute"]
    tr.output_is_tensor = [True, False, True]
    return tr


if __name__ == "__main__":
    unittest.main()
