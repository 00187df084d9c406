"""Unit tests of capsim_recorder.trace_writer; plain python3, no torch needed.

Run: python3 -m unittest discover -s traces/torch/tests
"""

import json
import os
import sys
import tempfile
import unittest

# The package lives one level up; importing trace_writer alone keeps torch out.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from capsim_recorder.trace_writer import (  # noqa: E402
    CONFIG_KEYS,
    DEFAULT_CONFIG as CONFIG,
    TraceWriteError,
    TraceWriter,
    encode_line,
)


EXPECTED_HEADER = (
    '{"seq":0,"type":"header","format":"capsim-trace","version":1,'
    '"producer":"pytorch","capsim_version":"0.1.0","name":"demo","seed":0,'
    '"config":{"inline_inbuilt_nn_modules":true,"cudagraph_support_input_mutation":true,'
    '"cudagraph_unexpected_rerecord_limit":128,"skip_cudagraph_warmup":false,'
    '"force_cudagraphs_warmup":false,"slow_path_cudagraph_asserts":true,'
    '"zero_grad_static_error":false,"plain_api":false,"poison_freed":false},'
    '"observes":["ca_graph"],"x_device":"cpu"}\n'
)


class TraceWriterTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "t.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def _header(self, w, **kw):
        args = dict(producer="pytorch", name="demo", seed=0, config=CONFIG,
                    observes=["ca_graph"], extensions={"x_device": "cpu"})
        args.update(kw)
        w.header(**args)

    def read(self):
        with open(self.path, encoding="utf-8") as f:
            return f.read()

    def test_header_bytes(self):
        with TraceWriter(self.path) as w:
            self._header(w)
        self.assertEqual(self.read(), EXPECTED_HEADER)

    def test_config_is_written_in_spec_order(self):
        reversed_config = {k: CONFIG[k] for k in reversed(CONFIG_KEYS)}
        with TraceWriter(self.path) as w:
            self._header(w, config=reversed_config)
        self.assertEqual(self.read(), EXPECTED_HEADER)

    def test_actions_and_events_count_seq_and_index(self):
        with TraceWriter(self.path) as w:
            self._header(w)
            a0 = w.action("autograd_graph", {"name": "g0", "root": 0, "tensors": [], "nodes": []})
            a1 = w.action("compiled_backward", {"graph": "g0", "dynamic": True})
            w.event(a1, "ca_graph", {"backward": 0, "captured": False})
        self.assertEqual((a0, a1), (0, 1))
        lines = self.read().splitlines()
        self.assertEqual(
            lines[2], '{"seq":2,"type":"action","index":1,"action":"compiled_backward",'
            '"graph":"g0","dynamic":true}')
        self.assertEqual(
            lines[3], '{"seq":3,"type":"event","action":1,"event":"ca_graph",'
            '"backward":0,"captured":false}')
        self.assertEqual([json.loads(l)["seq"] for l in lines], [0, 1, 2, 3])

    def test_event_must_follow_its_action(self):
        with self.assertRaises(TraceWriteError):
            with TraceWriter(self.path) as w:
                self._header(w)
                w.action("compiled_backward", {"graph": "g0", "dynamic": True})
                w.action("compiled_backward", {"graph": "g1", "dynamic": True})
                w.event(0, "ca_graph", {"backward": 0, "captured": False})

    def test_floats_repr_and_utf8(self):
        line = encode_line({"a": [0.1, 1e-05, 2.5, 3], "name": "größe"})
        self.assertEqual(line, '{"a":[0.1,1e-05,2.5,3],"name":"größe"}\n')

    def test_non_finite_floats_refused(self):
        for bad in (float("nan"), float("inf")):
            with self.assertRaises(TraceWriteError):
                encode_line({"nodes": [{"saved_scalars": [bad]}]})

    def test_extension_keys_need_x_prefix(self):
        with self.assertRaises(TraceWriteError):
            with TraceWriter(self.path) as w:
                self._header(w, extensions={"device": "cpu"})

    def test_missing_config_field_refused(self):
        config = dict(CONFIG)
        del config["plain_api"]
        with self.assertRaises(TraceWriteError):
            with TraceWriter(self.path) as w:
                self._header(w, config=config)

    def test_envelope_clash_refused(self):
        with self.assertRaises(TraceWriteError):
            with TraceWriter(self.path) as w:
                self._header(w)
                w.action("compiled_backward", {"seq": 7})

    def test_success_renames_tmp(self):
        with TraceWriter(self.path) as w:
            self._header(w)
            self.assertTrue(os.path.exists(self.path + ".tmp"))
            self.assertFalse(os.path.exists(self.path))
        self.assertTrue(os.path.exists(self.path))
        self.assertFalse(os.path.exists(self.path + ".tmp"))

    def test_failure_leaves_previous_file_and_no_tmp(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("old\n")
        with self.assertRaises(RuntimeError):
            with TraceWriter(self.path) as w:
                self._header(w)
                raise RuntimeError("program failed")
        self.assertEqual(self.read(), "old\n")
        self.assertFalse(os.path.exists(self.path + ".tmp"))

    def test_lines_are_flushed_as_written(self):
        with TraceWriter(self.path) as w:
            self._header(w)
            with open(self.path + ".tmp", encoding="utf-8") as f:
                self.assertEqual(f.read(), EXPECTED_HEADER)


if __name__ == "__main__":
    unittest.main()
