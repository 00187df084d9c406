"""The recorder writes capsim's ids and reasons from the decisions table:
every `id` and `reason` string literal the recorder puts in an event, and
every value of REASONS (PyTorch's CheckInvariantStatus -> record.reason), is a
key of `capsim version --decisions --json` (sim/core/decisions.def), so an id
that capsim renames or drops fails here instead of leaving a trace that
explain cannot read. No torch needed; skipped when the capsim binary is not
built (CAPSIM_BIN names it; ctest sets it)."""

import ast
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "capsim_recorder")
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

from capsim_recorder.cudagraph.values import REASONS  # noqa: E402
from capsim_recorder.miss_reasons import REASONS as MISS_REASONS, miss_reason  # noqa: E402

# Enumerated reasons of events that explain does not explain, so they are
# not decisions (docs/trace-format.md §6.1: path_end.reason, shutdown.reason).
NOT_DECISIONS = {"new_generation", "outputs_dead", "dynamo_reset", "last_cudagraphified_function_died"}


def capsim_binary():
    path = os.environ.get("CAPSIM_BIN") or os.path.join(REPO, "build", "default", "cli", "capsim")
    return path if os.access(path, os.X_OK) else None


def is_text(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def literals(key):
    """(file, line, value) of each string literal the recorder gives `key`:
    {"key": "v"} in a dict, fields["key"] = "v", and eid = "v" for ids."""
    for name in sorted(os.path.relpath(os.path.join(d, f), PACKAGE)
                       for d, _, files in os.walk(PACKAGE) for f in files if f.endswith(".py")):
        with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value == key and is_text(v):
                        yield name, v.lineno, v.value
            elif isinstance(node, ast.Assign) and is_text(node.value):
                for t in node.targets:
                    sub = isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                    if (sub and t.slice.value == key) or (key == "id" and isinstance(t, ast.Name) and t.id == "eid"):
                        yield name, node.lineno, node.value.value


class DecisionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = capsim_binary()
        if binary is None:
            raise unittest.SkipTest("capsim is not built (set CAPSIM_BIN)")
        out = subprocess.run([binary, "version", "--decisions", "--json"], check=True,
                             capture_output=True, text=True).stdout
        cls.table = json.loads(out)

    def keys(self, *kinds):
        return {d["key"] for d in self.table if d["kind"] in kinds and d["key"]}

    def test_reasons_are_record_reasons(self):
        self.assertEqual(set(REASONS.values()) - self.keys("record"), set())

    def test_ids_are_decisions(self):
        ids = self.keys("error", "skip", "warning")
        found = list(literals("id"))
        self.assertGreater(len(found), 5)
        for name, line, value in found:
            self.assertIn(value, ids, f"{name}:{line}: id {value!r} is not in the decisions table")

    def test_reasons_are_decisions(self):
        reasons = self.keys("record", "eager", "compile", "ca_cache_miss") | NOT_DECISIONS
        for name, line, value in literals("reason"):
            self.assertIn(value, reasons, f"{name}:{line}: reason {value!r} is not in the decisions table")

    def test_capture_reasons_are_decisions(self):
        # ca_graph's reason: a ca_graph decision, or the cache miss's own.
        keys = self.keys("ca_graph", "ca_cache_miss")
        for reason, _ in MISS_REASONS:
            self.assertIn(reason, keys, f"ca_graph reason {reason!r} is not in the decisions table")

    def test_the_control_fails(self):
        # The check can fail: an id capsim does not have is refused.
        self.assertNotIn("E2", self.keys("error", "skip", "warning"))


class MissReasonTest(unittest.TestCase):
    """PyTorch's cache-miss lines (as the corpus holds them) and their reasons."""

    def test_each_line_has_its_reason(self):
        cases = [
            ("Cache miss due to new autograd node: torch::autograd::AccumulateGrad (NodeCall 5)"
             " with key size 39, previous key sizes=[]", "accumulate_grad"),
            ("Cache miss due to 4 changed tensor shapes (total of 4): sizes[0], sizes[1]",
             "changed_shapes"),
            ("Cache miss due to new autograd node: ScaledByBackward (NodeCall 2) with key size 53",
             "new_autograd_node"),
            ("Cache miss due to something a later release says", None),
            (None, None),
        ]
        for message, reason in cases:
            with self.subTest(message=message):
                self.assertEqual(miss_reason(message), reason)


if __name__ == "__main__":
    unittest.main()
