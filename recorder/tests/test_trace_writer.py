"""Unit tests of capsim_recorder.trace_writer; plain python3, no torch needed.

Run: python3 -m unittest discover -s recorder/tests
"""

import glob
import io
import json
import os
import socket
import stat
import sys
import tempfile
import threading
import unittest
from unittest import mock

# The package lives one level up; importing trace_writer alone keeps torch out.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from capsim_recorder.trace_writer import (  # noqa: E402
    CONFIG_KEYS,
    torch_profile_of,
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

    def test_torch_profile_of_a_version(self):
        # sim/core/torch_profile.cpp's torch_profile_for, for the versions
        # torch.__version__ reports.
        cases = {"2.5.1": None, "2.8.0+cu128": None, "2.9.0": "2.9", "2.10.0": "2.10",
                 "2.11.0+cu130": "2.11", "2.12.0": "2.12", "2.15.1": "2.15",
                 "2.16.0": None, "3.0": None, "nightly": None}
        for version, want in cases.items():
            self.assertEqual(torch_profile_of(version), want, version)

    def test_header_carries_a_torch_profile_after_the_others(self):
        with TraceWriter(self.path) as w:
            self._header(w, config=dict(CONFIG, torch_profile="2.11"))
        header = json.loads(self.read().splitlines()[0])
        self.assertEqual(list(header["config"])[-1], "torch_profile")
        self.assertEqual(header["config"]["torch_profile"], "2.11")
        with self.assertRaises(TraceWriteError):
            with TraceWriter(os.path.join(self.dir.name, "u.jsonl")) as w:
                self._header(w, config=dict(CONFIG, torch_profile="2.16"))

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

    def temporaries(self, directory=None):
        """The writer's temporaries for t.jsonl in `directory` (default: the
        test's directory): mkstemp names them .t.jsonl.XXXXXXXX.tmp."""
        return glob.glob(os.path.join(directory or self.dir.name, ".t.jsonl.*.tmp"))

    def test_success_renames_tmp(self):
        with TraceWriter(self.path) as w:
            self._header(w)
            self.assertEqual(len(self.temporaries()), 1)
            self.assertEqual(self.temporaries(), [w.tmp_path])
            self.assertFalse(os.path.exists(self.path))
        self.assertTrue(os.path.exists(self.path))
        self.assertEqual(self.temporaries(), [])
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["t.jsonl"])

    def test_failure_leaves_previous_file_and_no_tmp(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("old\n")
        with self.assertRaises(RuntimeError):
            with TraceWriter(self.path) as w:
                self._header(w)
                raise RuntimeError("program failed")
        self.assertEqual(self.read(), "old\n")
        self.assertEqual(self.temporaries(), [])
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["t.jsonl"])

    def test_missing_header_leaves_nothing(self):
        with self.assertRaises(TraceWriteError):
            with TraceWriter(self.path):
                pass
        self.assertEqual(os.listdir(self.dir.name), [])

    def test_lines_are_flushed_as_written(self):
        with TraceWriter(self.path) as w:
            self._header(w)
            (tmp,) = self.temporaries()
            with open(tmp, encoding="utf-8") as f:
                self.assertEqual(f.read(), EXPECTED_HEADER)

    def test_users_path_tmp_file_is_untouched(self):
        mine = self.path + ".tmp"
        with open(mine, "w", encoding="utf-8") as f:
            f.write("mine\n")
        with TraceWriter(self.path) as w:
            self._header(w)
        with self.assertRaises(RuntimeError):
            with TraceWriter(self.path) as w:
                self._header(w)
                raise RuntimeError("program failed")
        with open(mine, encoding="utf-8") as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertEqual(self.read(), EXPECTED_HEADER)
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["t.jsonl", "t.jsonl.tmp"])

    def test_new_file_mode_follows_umask(self):
        for mask in (0o022, 0o077, 0o002):
            with self.subTest(umask=oct(mask)):
                if os.path.exists(self.path):
                    os.remove(self.path)
                old = os.umask(mask)
                try:
                    with TraceWriter(self.path) as w:
                        self._header(w)
                finally:
                    os.umask(old)
                self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o666 & ~mask)

    def test_replaced_file_keeps_its_mode(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("old\n")
        os.chmod(self.path, 0o604)
        with TraceWriter(self.path) as w:
            self._header(w)
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o604)
        self.assertEqual(self.read(), EXPECTED_HEADER)

    def test_symlink_to_regular_file_stays_a_link(self):
        target_dir = os.path.join(self.dir.name, "real")
        os.mkdir(target_dir)
        target = os.path.join(target_dir, "t.jsonl")
        with open(target, "w", encoding="utf-8") as f:
            f.write("old\n")
        os.symlink(target, self.path)
        with TraceWriter(self.path) as w:
            self._header(w)
            # The temporary is beside the target, not beside the link.
            self.assertEqual(len(self.temporaries(target_dir)), 1)
            self.assertEqual(self.temporaries(), [])
        self.assertTrue(os.path.islink(self.path))
        self.assertEqual(os.readlink(self.path), target)
        with open(target, encoding="utf-8") as f:
            self.assertEqual(f.read(), EXPECTED_HEADER)
        self.assertEqual(self.temporaries(target_dir), [])

    def test_dangling_symlink_creates_its_target(self):
        target_dir = os.path.join(self.dir.name, "real")
        os.mkdir(target_dir)
        target = os.path.join(target_dir, "new.jsonl")
        os.symlink(target, self.path)
        with TraceWriter(self.path) as w:
            self._header(w)
        self.assertTrue(os.path.islink(self.path))
        self.assertEqual(os.readlink(self.path), target)
        self.assertTrue(stat.S_ISREG(os.lstat(target).st_mode))
        self.assertEqual(self.read(), EXPECTED_HEADER)
        self.assertEqual(os.listdir(target_dir), ["new.jsonl"])

    def test_directory_is_refused(self):
        sub = os.path.join(self.dir.name, "out")
        os.mkdir(sub)
        link = os.path.join(self.dir.name, "link")
        os.symlink(sub, link)
        for path in (sub, link):
            with self.subTest(path=path):
                with self.assertRaises(TraceWriteError) as cm:
                    with TraceWriter(path) as w:
                        self._header(w)
                self.assertEqual(str(cm.exception), f"{path}: is a directory")
        self.assertEqual(os.listdir(sub), [])
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["link", "out"])
        self.assertTrue(os.path.islink(link))

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs os.mkfifo")
    def test_fifo_is_written_in_place(self):
        fifo = os.path.join(self.dir.name, "pipe")
        os.mkfifo(fifo)
        received = []

        def read_all():
            with open(fifo, encoding="utf-8") as f:
                received.append(f.read())

        reader = threading.Thread(target=read_all, daemon=True)
        reader.start()
        with TraceWriter(fifo) as w:
            self._header(w)
            w.action("compiled_backward", {"graph": "g0", "dynamic": True})
        reader.join(timeout=10)
        self.assertFalse(reader.is_alive())
        lines = received[0].splitlines(keepends=True)
        self.assertEqual(lines[0], EXPECTED_HEADER)
        self.assertEqual(len(lines), 2)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(os.listdir(self.dir.name), ["pipe"])

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs os.mkfifo")
    def test_fifo_survives_a_failure(self):
        fifo = os.path.join(self.dir.name, "pipe")
        os.mkfifo(fifo)
        received = []

        def read_all():
            with open(fifo, encoding="utf-8") as f:
                received.append(f.read())

        reader = threading.Thread(target=read_all, daemon=True)
        reader.start()
        with self.assertRaises(RuntimeError):
            with TraceWriter(fifo) as w:
                self._header(w)
                raise RuntimeError("program failed")
        reader.join(timeout=10)
        self.assertFalse(reader.is_alive())
        self.assertEqual(received, [EXPECTED_HEADER])  # what went out stays out
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(os.listdir(self.dir.name), ["pipe"])

    @unittest.skipUnless(hasattr(socket, "AF_UNIX"), "needs unix sockets")
    def test_socket_is_neither_replaced_nor_removed(self):
        path = os.path.join(self.dir.name, "sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(path)
            with self.assertRaises(OSError):  # open(2) on a socket: ENXIO
                with TraceWriter(path) as w:
                    self._header(w)
            self.assertTrue(stat.S_ISSOCK(os.lstat(path).st_mode))
            self.assertEqual(os.listdir(self.dir.name), ["sock"])
        finally:
            server.close()

    def test_dash_writes_to_stdout(self):
        cwd = os.getcwd()
        os.chdir(self.dir.name)  # a wrongly made file "-" would land here
        try:
            out = io.StringIO()
            with mock.patch.object(sys, "stdout", out):
                with TraceWriter("-") as w:
                    self._header(w)
            self.assertFalse(out.closed)
            self.assertEqual(out.getvalue(), EXPECTED_HEADER)
            self.assertEqual(os.listdir(self.dir.name), [])
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    unittest.main()
