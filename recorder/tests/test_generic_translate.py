"""Generic ops (docs/trace-format.md §4.1) in the aten -> capsim translation:
every node the exact map does not cover is modelled from its metadata, not
dropped. Graphs from AOTAutograd with Inductor's decompositions (as
compile_fx hands them on) and from make_fx with FakeTensors, on the CPU.
Skipped without torch.

Run: build/torch-venv/bin/python -m unittest recorder/tests/test_generic_translate.py
"""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from capsim_recorder import aten_translate as at  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def capture(fn, *args, dynamic=False, backward=True):
    """The AOTAutograd graphs Inductor would compile (test_cudagraph_translate's)."""
    import torch._inductor.lowering  # noqa: F401  (Inductor's decompositions consult it)
    from test_cudagraph_translate import capture as aot_capture

    return aot_capture(fn, *args, dynamic=dynamic, backward=backward)


def trace(fn, *args):
    """make_fx with FakeTensors (the metadata Inductor's graphs carry)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(fn, tracing_mode="fake")(*args)


def meta_of(v):
    """A FakeTensor's metadata as the format writes it."""
    import torch

    if not isinstance(v, torch.Tensor):
        return None
    return {"sizes": [int(d) for d in v.shape], "strides": [int(d) for d in v.stride()],
            "storage_offset": int(v.storage_offset()), "dtype": str(v.dtype).replace("torch.", "")}


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class GenericTranslateTest(unittest.TestCase):
    def setUp(self):
        import torch

        self.torch = torch
        torch.manual_seed(0)

    def translate(self, gm):
        """(translation, body), after checking that nothing is untranslated,
        that every generic op's results are its FakeTensor's metadata and
        that every getitem takes the node's index."""
        tr = at.translate_graph(gm)
        self.assertEqual(tr.untranslated, {})
        f = at.build_function(tr)
        self.assertTrue(f.ok, f.untranslated)
        for node in gm.graph.nodes:
            nt = tr.nodes.get(node.name)
            if nt is None or not nt.steps:
                continue
            op, args, extra = nt.steps[-1]
            if op == "generic" and node.op == "call_function":
                v = node.meta["val"]
                want = [meta_of(e) for e in v] if isinstance(v, (list, tuple)) else [meta_of(v)]
                self.assertEqual(extra["results"], want, node.format_node())
            elif op == "getitem":
                self.assertEqual((args, extra), ([("n", node.args[0].name)], {"index": node.args[1]}))
        return tr, f

    @staticmethod
    def targets(f):
        return [op.get("target", op["op"]) for op in f.ops]

    @staticmethod
    def dtypes(f):
        return {r["dtype"] for op in f.ops if op["op"] == "generic" for r in op["results"] if r}

    def test_conv_batchnorm_maxpool(self):
        torch = self.torch
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.MaxPool2d(2),
                                    torch.nn.Flatten(), torch.nn.Linear(16, 2))
        fwd, bwd = capture(model, torch.randn(2, 1, 6, 6))
        _, f = self.translate(fwd)
        self.assertIn("aten.convolution.default", self.targets(f))
        self.assertIn("getitem", self.targets(f))  # var_mean's, the pool's
        self.assertIn("int8", self.dtypes(f))  # the pool's offsets
        self.assertIn("mm", self.targets(f))  # the exact map still applies
        _, b = self.translate(bwd)
        self.assertIn("aten.convolution_backward.default", self.targets(b))
        conv_bwd = next(op for op in b.ops if op.get("target") == "aten.convolution_backward.default")
        self.assertIsNone(conv_bwd["results"][0])  # no grad of the input: an undefined result

    def test_lstm_int_uint8_bool(self):
        torch = self.torch
        import torch._dynamo

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb, self.lstm, self.drop = torch.nn.Embedding(10, 4), torch.nn.LSTM(4, 4), torch.nn.Dropout(0.2)

            def forward(self, idx):
                mask = (idx % 2).to(torch.uint8)
                out, (h, _) = self.lstm(self.drop(self.emb(idx)))
                return (out * mask.unsqueeze(-1)).sum() + h.sum()

        with torch._dynamo.config.patch(allow_rnn=True):
            fwd, bwd = capture(Model(), torch.randint(0, 10, (3, 2)))
        _, f = self.translate(fwd)
        self.assertTrue({"int64", "uint8", "bool"} <= self.dtypes(f), self.dtypes(f))
        self.assertIn("aten.embedding.default", self.targets(f))
        self.assertIn("tanh", self.targets(f))  # exact on float32
        tr, b = self.translate(bwd)
        self.assertEqual(tr.placeholder_problem, {})  # the int64 indices are an input
        # The embedding's backward: index_put (2.15: _unsafe_masked_index_put_accumulate).
        self.assertTrue(any("index_put" in t for t in self.targets(b)), self.targets(b))

    def test_embedding_layer_norm_dropout(self):
        torch = self.torch
        model = torch.nn.Sequential(torch.nn.Embedding(10, 8), torch.nn.LayerNorm(8), torch.nn.Dropout(0.1))
        names = [n for n, _ in model.named_parameters()]
        gm = trace(lambda idx, *ps: torch.func.functional_call(model, dict(zip(names, ps)), (idx,)),
                   torch.randint(0, 10, (3, 5)), *model.parameters())
        _, f = self.translate(gm)
        emb, ln, get0, empty, bern, div_, mul = f.ops
        self.assertEqual((emb["target"], emb["args"], emb["results"][0]["sizes"]),
                         ("aten.embedding.default", [1, 0], [3, 5, 8]))
        self.assertEqual((ln["target"], ln["args"], ln["attrs"]),
                         ("aten.native_layer_norm.default", [4, 2, 3], "[8], 1e-05"))
        self.assertEqual([r["sizes"] for r in ln["results"]], [[3, 5, 8], [3, 5, 1], [3, 5, 1]])
        # A three-result op's value is a tuple, read through getitem.
        self.assertEqual(get0, {"op": "getitem", "args": [5], "index": 0})
        self.assertEqual(empty["target"], "aten.empty_like.default")
        # Dropout as make_fx leaves it: in-place ops that write and return their argument.
        self.assertEqual((bern["target"], bern["args"], bern["attrs"], bern["views"], bern["writes"]),
                         ("aten.bernoulli_.float", [7], "0.9", [0], [0]))
        self.assertEqual((div_["target"], div_["args"], div_["views"], div_["writes"]),
                         ("aten.div_.Scalar", [8], [0], [0]))
        self.assertEqual((mul["op"], mul["args"]), ("mul", [6, 9]))

    def test_cat_split_permute(self):
        torch = self.torch
        gm = trace(lambda x: torch.cat(x.split(2, dim=1)[::-1], 1).permute(2, 0, 1), torch.randn(2, 6, 3))
        _, f = self.translate(gm)
        # Tensor(a)[]: each chunk of the split only views the input, so each
        # getitem is an as_strided of it.
        gets, cat, permute = f.ops[0:3], f.ops[3], f.ops[4]
        self.assertEqual([(g["op"], g["args"], g["storage_offset"]) for g in gets],
                         [("as_strided", [0], 0), ("as_strided", [0], 6), ("as_strided", [0], 12)])
        self.assertEqual(gets[0]["sizes"], [2, 2, 3])
        self.assertEqual((cat["target"], cat["args"], cat["attrs"]), ("aten.cat.default", [3, 2, 1], "1"))
        self.assertNotIn("views", cat)
        self.assertEqual((permute["op"], permute["args"], permute["strides"]), ("as_strided", [4], [1, 18, 3]))

    def test_sdpa(self):
        torch = self.torch
        qkv = [torch.randn(1, 2, 4, 8) for _ in range(3)]
        gm = trace(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), *qkv)
        _, f = self.translate(gm)
        sdpa = [op for op in f.ops if op["op"] == "generic" and "scaled_dot_product" in op["target"]]
        self.assertEqual(len(sdpa), 1, self.targets(f))
        self.assertEqual(sdpa[0]["args"], [0, 1, 2])
        self.assertEqual(len(sdpa[0]["results"]), 2)  # the output and the logsumexp
        self.assertEqual(f.ops[-1], {"op": "getitem", "args": [3], "index": 0})
        # The decomposed form (Inductor's table) is a chain of generic ops.
        fwd, bwd = capture(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                           *(torch.randn(1, 2, 4, 8, requires_grad=True) for _ in range(3)))
        self.translate(fwd)
        self.translate(bwd)

    def test_in_place_writes_and_views(self):
        torch = self.torch

        def fn(x, y):
            x.mul_(2.0)  # not an output: kept because it writes an input
            return y.permute(1, 0, 2) + 1

        gm = trace(fn, torch.randn(3), torch.randn(2, 3, 4))
        _, f = self.translate(gm)
        mul_ = f.ops[0]
        self.assertEqual((mul_["target"], mul_["args"], mul_["views"], mul_["writes"]),
                         ("aten.mul_.Tensor", [0], [0], [0]))
        permute = next(op for op in f.ops if op["op"] == "as_strided")
        self.assertEqual((permute["args"], permute["sizes"]), ([1], [3, 2, 4]))

    def test_get_attr_constant(self):
        torch = self.torch
        const = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
        from torch.fx.experimental.proxy_tensor import make_fx

        gm = make_fx(lambda x: x + const)(torch.randn(3, dtype=torch.float64))  # the constant: a get_attr
        _, f = self.translate(gm)
        self.assertEqual((f.ops[0]["op"], f.ops[0]["target"], f.ops[0]["args"]), ("generic", "get_attr", []))
        self.assertEqual(f.ops[0]["results"], [meta_of(const)])
        self.assertEqual(f.ops[1]["target"], "aten.add.Tensor")  # float64: not the exact add
        self.assertEqual(f.ops[1]["args"], [0, 1])

    def test_symbolic_sizes_at_hints_and_noted(self):
        torch = self.torch
        fwd, = capture(lambda x: torch.erf(x).sum(), torch.randn(5, 3), dynamic=True, backward=False)
        f = at.build_function(at.translate_graph(fwd))
        self.assertTrue(f.ok, f.untranslated)
        erf = next(op for op in f.ops if op.get("target") == "aten.erf.default")
        self.assertEqual(erf["results"][0]["sizes"], [5, 3])
        self.assertEqual(len(f.notes), 1)
        self.assertIn("aten.erf.default", f.notes[0])

    def test_attrs_are_stable_text(self):
        torch = self.torch

        def fn(x, i):
            return torch.nn.functional.leaky_relu(x, 0.1), torch.ops.aten.add.Tensor(i, i, alpha=3)

        bodies = [at.build_function(at.translate_graph(trace(fn, torch.randn(3), torch.arange(3))))
                  for _ in range(2)]
        self.assertEqual(bodies[0].ops, bodies[1].ops)
        self.assertEqual([(op["target"], op["attrs"]) for op in bodies[0].ops],
                         [("aten.leaky_relu.default", "0.1"), ("aten.add.Tensor", "alpha=3")])

    def test_what_no_op_can_express_stays_untranslated(self):
        torch = self.torch
        gm = trace(lambda x, y: (torch.sigmoid(x.view([1] * 9)), y.sigmoid()), torch.randn(1), torch.randn([1] * 9))
        f = at.build_function(at.translate_graph(gm))
        self.assertFalse(f.ok)
        self.assertEqual(f.untranslated, ["aten.sigmoid.default (a 9-d tensor)", "aten.view.default (a 9-d tensor)",
                                          "input y_1: a 9-d tensor"])


if __name__ == "__main__":
    unittest.main()
