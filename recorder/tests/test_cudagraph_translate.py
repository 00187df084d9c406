"""The aten -> capsim translation (capsim_recorder.aten_translate) on graphs
torch produces on the CPU: the same AOTAutograd graphs, after Inductor's
decompositions, that Inductor compiles on the GPU. Skipped without torch.

Run: build/torch-venv/bin/python -m unittest discover -s recorder/tests
"""

import importlib.util
import os
import sys
import struct
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from capsim_recorder import aten_translate as at  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def capture(fn, *args, dynamic=False, backward=True):
    """The forward (and backward) graphs AOTAutograd makes for fn, with
    Inductor's decomposition table, as compile_fx would hand them on."""
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.decomposition import select_decomp_table

    graphs = []

    from functorch.compile import make_boxed_func

    def keep(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch.compiler.reset()
    backend = aot_autograd(fw_compiler=keep, bw_compiler=keep, decompositions=select_decomp_table())
    out = torch.compile(fn, backend=backend, dynamic=dynamic)(*args)
    if backward:
        out.sum().backward()
    return graphs


def simulate_values(capsim, body, inputs):
    """The values capsim computes for `body` on `inputs` (uniform tensors):
    a program with one call and a read of each output, through `capsim
    simulate`; each read's preview (its first values) as floats."""
    import json
    import subprocess
    import tempfile

    lines = [{"type": "header", "name": "values"},
             {"type": "function", "function": "f", "mode": "inference", "inputs": body.inputs,
              "ops": body.ops, "outputs": body.outputs}]
    names = [f"in{k}" for k in range(len(inputs))]
    for name, t in zip(names, inputs):
        lines.append({"type": "action", "action": "new_tensor", "name": name, "sizes": list(t.shape),
                      "fill": at.f32(t.view(-1)[0].item())})
    outs = [f"out{k}" for k in range(len(body.outputs))]
    lines.append({"type": "action", "action": "call", "function": "f", "args": names, "outputs": outs})
    lines += [{"type": "action", "action": "read", "name": o} for o in outs]
    with tempfile.TemporaryDirectory() as d:
        program, trace = os.path.join(d, "p.jsonl"), os.path.join(d, "t.jsonl")
        with open(program, "w") as f:
            f.write("".join(json.dumps(l) + "\n" for l in lines))
        subprocess.run([capsim, "simulate", program, "-o", trace], check=True, capture_output=True)
        with open(trace) as f:
            reads = [json.loads(l) for l in f if '"event":"read"' in l]
    return [[float(v) for v in r["values"].strip("[]").split(",") if v != "..."] for r in reads]


@unittest.skipUnless(HAVE_TORCH, "torch is not installed in this python")
class TranslateTest(unittest.TestCase):
    def setUp(self):
        import torch

        self.torch = torch
        torch.manual_seed(0)

    def mlp(self, bias=False):
        torch = self.torch
        return torch.nn.Sequential(
            torch.nn.Linear(4, 8, bias=bias), torch.nn.ReLU(), torch.nn.Linear(8, 2, bias=bias)
        )

    def test_mlp_forward_and_backward(self):
        fwd, bwd = capture(self.mlp(), self.torch.randn(3, 4))
        f = at.build_function(at.translate_graph(fwd))
        self.assertTrue(f.ok, f.untranslated)
        self.assertEqual(f.inputs, ["primals_1", "primals_2", "primals_3"])
        # (This capture keeps an aten.alias of the saved relu that Inductor's
        # own passes remove; it translates to capsim's alias.)
        self.assertEqual([op["op"] for op in f.ops if op["op"] != "alias"], ["t", "mm", "relu", "t", "mm"])
        # mm(x, t(w1)): the weight is primals_1, the input primals_2.
        self.assertEqual(f.ops[1]["args"], [1, 3])
        b = at.build_function(at.translate_graph(bwd))
        self.assertTrue(b.ok, b.untranslated)
        self.assertIn("relu_backward", [op["op"] for op in b.ops])
        self.assertNotIn("where", [op["op"] for op in b.ops])
        # The grad of the input x (no requires_grad) is None: left out.
        self.assertEqual(b.dropped_outputs, [1])
        self.assertEqual(len(b.outputs), 2)

    def mse_graphs(self):
        """The forward and backward of an MLP with biases under a
        mean-squared loss: means, squares, scalar divisions, the bias grads'
        sums over the batch and the views and expands around them."""
        torch = self.torch
        model = self.mlp(bias=True)
        return capture(lambda x, y: (model(x) - y).pow(2).mean(), torch.randn(3, 4), torch.randn(3, 2))

    def test_bias_grads_and_mse_loss_translate(self):
        fwd, bwd = self.mse_graphs()
        f = at.build_function(at.translate_graph(fwd))
        self.assertTrue(f.ok, f.untranslated)
        b = at.build_function(at.translate_graph(bwd))
        self.assertTrue(b.ok, b.untranslated)
        ops = [op["op"] for op in b.ops]
        for op in ("expand", "div", "view", "relu_backward"):
            self.assertIn(op, ops)
        self.assertIn({"op": "sum", "dims": [0], "keepdim": True},
                      [{k: v for k, v in op.items() if k != "args"} for op in b.ops])

    def test_log_softmax_tanh_sigmoid_translate_exactly(self):
        """Inductor's log-softmax (amax, sub, exp, sum, log), tanh and
        sigmoid: every op exact, no generic op left."""
        torch = self.torch
        from torch.fx.experimental.proxy_tensor import make_fx

        def fn(x):
            shifted = x - x.amax(-1, keepdim=True)
            log_softmax = shifted - shifted.exp().sum(-1, keepdim=True).log()
            return log_softmax + torch.tanh(x) * torch.sigmoid(x).rsqrt()

        gm = make_fx(fn)(torch.randn(3, 5))
        f = at.build_function(at.translate_graph(gm))
        self.assertTrue(f.ok, f.untranslated)
        ops = [op["op"] for op in f.ops]
        self.assertNotIn("generic", ops)
        for op in ("amax", "exp", "log", "tanh", "sigmoid", "rsqrt"):
            self.assertIn(op, ops)
        self.assertIn({"op": "amax", "dims": [1], "keepdim": True},
                      [{k: v for k, v in op.items() if k != "args"} for op in f.ops])
        capsim = os.environ.get("CAPSIM_BIN")
        if capsim:  # and capsim computes what PyTorch computes, to float32 rounding
            x = torch.full((3, 5), -0.75)  # simulate_values fills each input with one value
            got = simulate_values(capsim, f, [x])
            for a, b in zip(got[0], gm(x).contiguous().view(-1).tolist()):
                self.assertAlmostEqual(a, b, places=5)

    def test_translated_values_are_torch_values(self):
        """capsim (`capsim simulate`, CAPSIM_BIN) computes what the graph
        computes in PyTorch, on the same uniform inputs."""
        capsim = os.environ.get("CAPSIM_BIN")
        if not capsim:
            self.skipTest("CAPSIM_BIN is not set")
        for gm in self.mse_graphs():
            fills = [0.25, -0.5, 0.125, 0.75, -0.375, 1.5, 0.0625]
            inputs = []
            for k, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
                inputs.append(self.torch.full(tuple(node.meta["val"].shape), fills[k % len(fills)]))
            want = [t for t in gm(*inputs) if isinstance(t, self.torch.Tensor)]
            f = at.build_function(at.translate_graph(gm))
            self.assertTrue(f.ok, f.untranslated)
            got = simulate_values(capsim, f, inputs)
            self.assertEqual(len(got), len(want))
            for g, w in zip(got, want):
                flat = w.detach().contiguous().view(-1).tolist()
                self.assertTrue(1 <= len(g) <= len(flat), (g, flat))
                for a, b in zip(g, flat):
                    self.assertAlmostEqual(a, b, places=5)

    def test_refused_views_and_exponents_are_generic(self):
        """What the exact map refuses (a view of a non-contiguous tensor, an
        exponent other than 1 or 2) is a generic op, not a dropped graph."""
        torch = self.torch
        from torch.fx.experimental.proxy_tensor import make_fx

        gm = make_fx(lambda x: x.t().unsqueeze(0) + x.pow(3).sum())(torch.randn(2, 3))
        f = at.build_function(at.translate_graph(gm))
        self.assertTrue(f.ok, f.untranslated)
        generic = {op["target"]: op for op in f.ops if op["op"] == "generic"}
        self.assertEqual(sorted(generic), ["aten.pow.Tensor_Scalar"])
        self.assertEqual(generic["aten.pow.Tensor_Scalar"]["attrs"], "3")
        # The unsqueeze of a transposed tensor only views it: as_strided, exact.
        self.assertEqual([op["op"] for op in f.ops], ["t", "as_strided", "generic", "sum", "add"])
        self.assertEqual((f.ops[1]["args"], f.ops[1]["sizes"], f.ops[1]["strides"]), ([1], [1, 3, 2], [3, 1, 3]))

    def test_addmm_is_mm_then_add(self):
        fwd, _ = capture(self.torch.nn.Linear(4, 2), self.torch.randn(3, 4))
        f = at.build_function(at.translate_graph(fwd))
        self.assertTrue(f.ok, f.untranslated)
        ops = [op["op"] for op in f.ops]
        self.assertEqual(ops, ["t", "mm", "add"])
        mm_value = len(f.inputs) + 1
        self.assertEqual(f.ops[2]["args"][0], mm_value)

    def test_threshold_backward_without_decomposition(self):
        torch = self.torch
        from torch.fx.experimental.proxy_tensor import make_fx

        def bwd(grad, result):
            return torch.ops.aten.threshold_backward(grad, result, 0)

        gm = make_fx(bwd)(torch.randn(3), torch.randn(3))
        f = at.build_function(at.translate_graph(gm))
        self.assertEqual(f.ops, [{"op": "relu_backward", "args": [0, 1]}])

    def test_scalars_become_full(self):
        torch = self.torch
        from torch.fx.experimental.proxy_tensor import make_fx

        gm = make_fx(lambda x: (x * 2.5 + 1).neg())(torch.randn(3))
        f = at.build_function(at.translate_graph(gm))
        self.assertTrue(f.ok, f.untranslated)
        self.assertEqual(
            f.ops,
            [
                {"op": "full", "args": [], "sizes": [], "scalar": 2.5},
                {"op": "mul", "args": [0, 1]},
                {"op": "full", "args": [], "sizes": [], "scalar": 1.0},
                {"op": "add", "args": [2, 3]},
                {"op": "neg", "args": [4]},
            ],
        )

    def test_slice_clone_copy(self):
        torch = self.torch
        from torch.fx.experimental.proxy_tensor import make_fx

        def fn(x, y):
            z = x[1:3].clone()
            return z.sum(), torch.ops.aten.copy_(y, x)

        gm = make_fx(fn)(torch.randn(5, 2), torch.randn(5, 2))
        f = at.build_function(at.translate_graph(gm))
        self.assertTrue(f.ok, f.untranslated)
        self.assertEqual(
            [(op["op"], op.get("start"), op.get("end")) for op in f.ops],
            [("slice", 1, 3), ("clone", None, None), ("sum", None, None), ("copy_", None, None)],
        )

    def test_unknown_op_is_generic_not_guessed(self):
        torch = self.torch
        from torch.fx.experimental.proxy_tensor import make_fx

        gm = make_fx(lambda x: torch.erf(x) * x)(torch.randn(3))
        f = at.build_function(at.translate_graph(gm))
        self.assertTrue(f.ok, f.untranslated)
        self.assertEqual(f.ops[0], {"op": "generic", "target": "aten.erf.default", "attrs": "", "args": [0],
                                    "results": [{"sizes": [3], "strides": [1], "storage_offset": 0,
                                                 "dtype": "float32"}]})
        self.assertEqual(f.ops[1], {"op": "mul", "args": [1, 0]})

    def test_symint_placeholders_are_not_inputs(self):
        torch = self.torch
        lin = torch.nn.Linear(4, 2, bias=False)
        fwd, bwd = capture(lin, torch.randn(5, 4), dynamic=True)
        tr = at.translate_graph(fwd)
        f = at.build_function(tr)
        self.assertTrue(f.ok, f.untranslated)
        ints = [i for i, t in enumerate(tr.placeholder_is_tensor) if not t]
        self.assertTrue(ints, "expected a SymInt placeholder")
        self.assertEqual(f.int_positions, ints)
        self.assertEqual(len(f.inputs), len(tr.placeholders) - len(ints))

    def test_partition_positions(self):
        fwd, _ = capture(self.mlp(), self.torch.randn(3, 4))
        tr = at.translate_graph(fwd)
        # Only the first output, over all inputs: the second mm's chain.
        f = at.build_function(tr, [0, 1, 2], [0])
        self.assertTrue(f.ok)
        self.assertEqual(len(f.outputs), 1)
        # A partition input that is not a graph input cannot be translated.
        g = at.build_function(tr, [0, None, 2], [0])
        self.assertFalse(g.ok)
        self.assertIn("partition input that is not a graph input", g.untranslated)
        # Leaving out an input the outputs need.
        h = at.build_function(tr, [0, 2], [0])
        self.assertFalse(h.ok)

    def test_stack_traces_of_the_outputs(self):
        """cudagraph/stack_traces.py on AOTAutograd's graphs: one entry per
        output (the output node's snapshot from 2.12 on, else each output
        node's stack_trace), the function line's without the left-out ones."""
        from capsim_recorder.cudagraph import stack_traces as st

        torch = self.torch

        def f(x, w):
            y = x @ w  # ST_MM
            return y.relu()  # ST_RELU

        fwd, bwd = capture(f, torch.randn(3, 4), torch.randn(4, 2, requires_grad=True))
        with open(__file__, encoding="utf-8") as src:
            lines = {mark: k for k, text in enumerate(src, 1)
                     for mark in ("ST_MM", "ST_RELU") if text.rstrip().endswith(mark)}
        for gm in (fwd, bwd):
            out = [n for n in gm.graph.nodes if n.op == "output"][0]
            traces = st.of_gm(gm)
            self.assertEqual(len(traces), len(out.args[0]))
            snapshot = out.meta.get("output_stack_traces")
            expected = snapshot or [a.meta.get("stack_trace") if isinstance(a, torch.fx.Node) else None
                                    for a in out.args[0]]
            self.assertEqual(traces, expected)
            body = at.build_function(at.translate_graph(gm))
            self.assertTrue(body.ok, body.untranslated)
            line = st.for_function(traces, body.dropped_outputs, len(body.outputs))
            self.assertEqual(len(line), len(body.outputs))
            if gm is fwd:
                self.assertIn(f"line {lines['ST_RELU']}, in f", line[0])
            else:
                # (x's grad, None, is left out: w's grad only, from the mm.)
                self.assertEqual(len(line), 1)
                self.assertIn(f"line {lines['ST_MM']}, in f", line[0])
            self.assertTrue(all(t is None or t == t.strip() for t in line))


class F32Test(unittest.TestCase):
    def test_shortest(self):
        self.assertEqual(at.f32(0.09999999999999998), 0.1)
        self.assertEqual(at.f32(0.0010000000000000009), 0.001)
        self.assertEqual(at.f32(1e-08), 1e-08)
        self.assertEqual(at.f32(0.999), 0.999)
        with self.assertRaises(at.TranslationError):
            at.f32(float("nan"))

    def test_extremes(self):
        # torch.finfo(torch.float32).min, Hugging Face's attention-mask fill:
        # its short decimals round past float32's range (an OverflowError
        # once lost every graph of a T5 trace).
        low = -3.4028234663852886e38  # torch.finfo(torch.float32).min
        for x in (low, -low):  # the shortest decimal that reads back to it
            self.assertEqual(struct.pack("<f", at.f32(x)), struct.pack("<f", x))
            self.assertLess(len(repr(at.f32(x))), len(repr(x)))
        with self.assertRaises(at.TranslationError):
            at.f32(-1.7976931348623157e308)  # torch.finfo(torch.float64).min


if __name__ == "__main__":
    unittest.main()
