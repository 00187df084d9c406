"""`new_tensor`'s `dtype` (docs/trace-format.md section 5): every tensor the
recorder declares carries its real dtype, left out when float32 (the
default). The mapping itself in plain python3; a `run --cudagraphs`
recording of a script that passes an int64 buffer to a compiled function
with torch (skipped without; about 20 s, Inductor's CPU code generation).
"""

import importlib.util
import os
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

HAVE_TORCH = importlib.util.find_spec("torch") is not None

from capsim_recorder import dtypes  # noqa: E402
from launching import launch, lines_of  # noqa: E402

SCRIPT = textwrap.dedent("""
    import torch

    w = torch.nn.Parameter(torch.randn(4))
    count = torch.zeros((), dtype=torch.int64)
    step = torch.compile(lambda w, n: (w * 2, n + 1), mode="reduce-overhead")
    for _ in range(2):
        y, m = step(w, count)
        y.sum().backward()
""")


class DtypeNamesTest(unittest.TestCase):
    def test_new_tensor_fields(self):
        self.assertEqual(dtypes.new_tensor_fields("x", (2, 3), "torch.float32"), {"name": "x", "sizes": [2, 3]})
        self.assertEqual(dtypes.new_tensor_fields("n", (), "torch.int64"),
                         {"name": "n", "sizes": [], "dtype": "int64"})
        for name in dtypes.DTYPES:
            self.assertEqual(dtypes.name_of(f"torch.{name}"), name)
        self.assertIsNone(dtypes.name_of("torch.int16"))
        self.assertNotIn("dtype", dtypes.new_tensor_fields("s", (1,), "torch.int16"))
        self.assertIn("int16", dtypes.unnamed("s", "torch.int16"))
        self.assertIsNone(dtypes.unnamed("n", "torch.int64"))


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class NewTensorDtypeTest(unittest.TestCase):
    def test_int64_buffer_passed_to_a_compiled_function(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "count.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write(SCRIPT)
            trace = os.path.join(d, "run.jsonl")
            out = launch(trace, "--cudagraphs", "--", script, timeout=600)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = lines_of(trace)
        new = [l for l in lines if l["type"] == "action" and l["action"] == "new_tensor"]
        call = next(l for l in lines if l["type"] == "action" and l["action"] == "call")
        by_name = {l["name"]: l for l in new}
        buffer = by_name[call["args"][1]]
        self.assertEqual(buffer["dtype"], "int64")
        self.assertEqual(buffer["sizes"], [])
        # float32 tensors (the parameter, autograd's grad of the loss) leave
        # the default out.
        self.assertNotIn("dtype", by_name[call["args"][0]])
        self.assertEqual([l for l in new if "dtype" in l], [buffer])


class _Strided:
    """A tensor's geometry, as session.strided_fields reads it."""

    def __init__(self, strides, offset):
        self._strides, self._offset = strides, offset

    def stride(self):
        return self._strides

    def storage_offset(self):
        return self._offset


class StridedNewTensorTest(unittest.TestCase):
    """new_tensor's `strides` and `offset`: a tensor PyTorch made that is not
    contiguous from its storage's start keeps its geometry, so that a
    compiled graph's views of it fit (time_sequence_prediction's input is
    rows 3.. of a [10, 12] array, its last column dropped)."""

    def test_geometry_kept_only_where_it_differs(self):
        from capsim_recorder.cudagraph.session import strided_fields

        self.assertEqual(strided_fields(_Strided([11, 1], 0), [7, 11]), {})
        self.assertEqual(
            strided_fields(_Strided([12, 1], 36), [7, 11]), {"strides": [12, 1], "offset": 36}
        )
        self.assertEqual(strided_fields(_Strided([1, 4], 0), [4, 2]), {"strides": [1, 4]})
        self.assertEqual(strided_fields(_Strided([0], 0), [0]), {})


if __name__ == "__main__":
    unittest.main()
