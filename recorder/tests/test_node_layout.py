"""Tests of what the recorder writes for node-for-node comparison: the node
fields in compiled_args order (node_fields.py), a compiled region's backward
graph (aot_body.py) and the node lines of a captured graph (capture.py). They
need torch and skip without it.

Run with torch: build/torch-venv/bin/python -m unittest discover -s recorder/tests
"""

import importlib.util
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class NodeLayoutTest(unittest.TestCase):
    def setUp(self):
        import torch

        from capsim_recorder import graph_walk, node_fields

        self.torch = torch
        self.walk = graph_walk.walk
        self.node_fields = node_fields
        torch.manual_seed(0)

    def test_the_header_declares_fields_in_compiled_args_order(self):
        fields = self.node_fields.declared_fields()
        # AddmmBackward0 in Functions.h: alpha, beta, mat1_, mat1_layout, ...
        names = [name for _, name in fields["AddmmBackward0"]]
        self.assertEqual(names[:4], ["alpha", "beta", "mat1_", "mat1_layout"])
        # Bookkeeping fields (`*_released_`) are not collected.
        self.assertFalse(any(n.endswith("_released_") for ns in fields.values() for _, n in ns))

    def test_hidden_fields_come_from_the_tensors_they_describe(self):
        x = self.torch.randn(3, requires_grad=True)
        y = self.torch.randn(3, dtype=self.torch.float64)
        g = self.walk((x * y).sum())
        mul = g["nodes"][1]
        self.assertEqual(mul["name"], "MulBackward0")
        # other (y, saved), other_scalar_type (float64: 7), self (not saved:
        # y needs no grad), self_scalar_type (x, edge 0: float32, 6).
        self.assertEqual(mul["saved_values"], [{"tensor": "t0"}, {"const": "7"}, None, {"const": "6"}])

    def test_only_symint_fields_are_sizes(self):
        lin = self.torch.nn.Linear(3, 2)
        g = self.walk(lin(self.torch.randn(5, 3)).sum())
        addmm = next(n for n in g["nodes"] if n["name"] == "AddmmBackward0")
        # alpha and beta are constants; the sizes are the sym_sizes/strides.
        self.assertEqual(addmm["saved_values"][:2], [{"const": "1"}, {"const": "1"}])
        flattened = [v for f in addmm["saved_values"] if isinstance(f, dict) and "symints" in f
                     for v in f["symints"]]
        self.assertEqual(addmm["saved_sizes"], flattened)

    def test_a_tensor_list_argument_is_read_from_its_edges(self):
        # torch.cat's node keeps its inputs' count, dtypes and sizes, which
        # Python cannot read: they come from the edges, the count first, and
        # needs_input_grad has one entry for the whole list.
        a = self.torch.randn(2, 3, requires_grad=True)
        b = self.torch.randn(4, 3, dtype=self.torch.float64, requires_grad=True)
        g = self.walk(self.torch.cat([a, b.float()]).sum())
        cat = next(n for n in g["nodes"] if n["name"] == "CatBackward0")
        self.assertEqual(cat["input_ranges"], [2])
        self.assertEqual(cat["saved_values"],
                         [{"const": "2"}, {"const": "0"}, {"const": "[6, 6]"},
                          {"symint_lists": [[2, 3], [4, 3]]}])
        self.assertEqual(cat["saved_sizes"], [2, 3, 4, 3])
        stack = next(n for n in self.walk(self.torch.stack([a, a]).sum())["nodes"]
                     if n["name"] == "StackBackward0")
        self.assertEqual(stack["saved_values"][0], {"const": "2"})
        self.assertEqual(stack["input_ranges"], [2])

    def test_a_compiled_region_carries_its_backward_graph(self):
        from torch.testing._internal.two_tensor import TwoTensor

        from capsim_recorder.annotations import Annotations

        compiled = self.torch.compile(lambda a, b: (a * b).sin(), backend="aot_eager")
        w = TwoTensor(self.torch.randn(4), self.torch.randn(4)).requires_grad_()
        x = TwoTensor(self.torch.randn(4), self.torch.randn(4))
        out = compiled(w, x)
        notes = Annotations()
        notes.subclass_output(out)
        g = self.walk(out.sum(), notes)
        region = g["nodes"][1]
        self.assertEqual(region["kind"], "CompiledFunctionBackward")
        body = region["aot_backward"]
        self.assertEqual(body["placeholders"], 6)  # 4 saved inner tensors, 2 tangents
        self.assertEqual(body["symints"], 0)
        self.assertEqual(body["epilogue"][0], {"subclass": True})
        self.assertTrue(all(n["target"].startswith("torch.ops.aten.") for n in body["nodes"]))
        # The loss and the region's output are subclasses, as PyTorch's
        # InputMetadata says; the leaf w is a subclass tensor.
        self.assertTrue(g["nodes"][0]["inputs"][0]["subclass"])
        self.assertTrue(region["inputs"][0]["subclass"])
        self.assertTrue(any(t.get("subclass") for t in g["tensors"]))


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class NodeLinesTest(unittest.TestCase):
    def test_lines_name_nodes_by_position_and_write_constants_as_python(self):
        import torch
        import torch.fx

        from capsim_recorder.capture import graph_lines

        g = torch.fx.Graph()
        a = g.placeholder("inputs")
        b = g.call_function(torch.add, (a, 1.0), {"alpha": 2})
        c = g.call_function(max, ((b,), [None, True], torch.float32, "x"))
        g.output([c])
        lines = graph_lines(torch.fx.GraphModule(torch.nn.Module(), g))
        self.assertEqual(lines[0], "%0 = placeholder inputs")
        self.assertEqual(lines[1], "%1 = torch.add(%0, 1.0, alpha=2)")
        self.assertEqual(lines[2], "%2 = max((%1,), [None, True], torch.float32, 'x')")
        self.assertEqual(lines[3], "%3 = output([%2])")


if __name__ == "__main__":
    unittest.main()
