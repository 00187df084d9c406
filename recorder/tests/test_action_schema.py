"""The recorder's check of action lines against capsim's table of actions
(capsim_recorder/action_schema.py); plain python3, no torch needed.

Run: python3 -m unittest discover -s recorder/tests
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from capsim_recorder.action_schema import KINDS, action_problem  # noqa: E402
from capsim_recorder.trace_writer import (  # noqa: E402
    DEFAULT_CONFIG,
    TraceWriteError,
    TraceWriter,
)


class ActionSchemaTest(unittest.TestCase):
    def test_lines_capsim_reads_pass(self):
        self.assertIsNone(action_problem("new_tensor", {"name": "x", "sizes": [2, 3]}))
        self.assertIsNone(action_problem(
            "new_tensor", {"name": "x", "sizes": [2], "dtype": "int64", "fill": 1, "x_note": 1}))
        self.assertIsNone(action_problem("zero_grad", {"name": "o", "set_to_none": True}))
        self.assertIsNone(action_problem(
            "create_optimizer", {"name": "o", "kind": "sgd", "params": ["p"], "sgd": {"lr": 0.1}}))
        self.assertIsNone(action_problem("autograd_graph", {"anything": "its own rules"}))

    def test_each_way_of_being_wrong_is_named(self):
        cases = [
            ("new_tensr", {}, "unknown action kind 'new_tensr'"),
            ("new_tensor", {"name": "x"}, "new_tensor: no field 'sizes'"),
            ("new_tensor", {"name": "x", "sizes": [1], "size": [1]},
             "new_tensor: unknown field 'size'"),
            ("new_tensor", {"name": "x", "sizes": [1], "dtype": "float8"},
             "new_tensor: field 'dtype' is 'float8', not one of float32, float16, bfloat16, "
             "float64, complex64, int64, bool, int32, int8, uint8"),
            ("zero_grad", {"name": "o", "set_to_none": 1},
             "zero_grad: field 'set_to_none' is not of type boolean: 1"),
            ("read", {"name": 3}, "read: field 'name' is not of type string: 3"),
        ]
        for kind, fields, problem in cases:
            with self.subTest(kind=kind, fields=fields):
                self.assertEqual(action_problem(kind, fields), problem)

    def test_a_list_past_its_limit_is_refused(self):
        limit = KINDS["call"]["fields"][1]["max_items"]
        args = [f"a{k}" for k in range(limit + 1)]
        self.assertEqual(action_problem("call", {"function": "f", "args": args, "outputs": []}),
                         f"call: field 'args' has {limit + 1} items, more than {limit}")

    def test_the_writer_refuses_a_bad_line_before_writing_it(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.jsonl")
            with self.assertRaisesRegex(TraceWriteError, "action line: del: no field 'name'"):
                with TraceWriter(path) as w:
                    w.header(producer="pytorch", name="t", seed=0, config=DEFAULT_CONFIG)
                    w.action("del", {})
            self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()
