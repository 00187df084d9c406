#!/usr/bin/env python3
"""Probe real PyTorch for the facts that capsim's models claim.

Runs the forward programs of capsim's built-in capture scenarios
(`capsim capture --list`) under PyTorch's compiled autograd and prints, for
each one, the captured FX graph, the number of captures (compiler calls) over
the scenario's iterations, and the shapes of the placeholders' example values.
It then runs one small cudagraph-tree program (mode="reduce-overhead") and
prints what the tree manager reports.

This is a probe, not the trace recorder (recorder/capsim_recorder): its
output is plain text that a person compares with `capsim capture NAME`. It
needs PyTorch and, for the cudagraph part, a CUDA device; nothing in the build
depends on it.

Usage: python3 scripts/pytorch-probe.py [--device cuda|cpu] > probe.txt
"""

import argparse
import contextlib
import sys
import traceback

import torch
from torch._dynamo import compiled_autograd


def iota(n, start=1.0, device="cpu"):
    return torch.tensor([start + 0.25 * i for i in range(n)], device=device)


class Probe:
    """Collects the graphs that compiled autograd hands to its compiler."""

    def __init__(self):
        self.graphs = []

    def compiler_fn(self, gm):
        self.graphs.append(gm)
        return gm  # run the captured graph as it is: no dynamo, no inductor


@contextlib.contextmanager
def compiled_autograd_enabled(compiler_fn):
    enable = getattr(compiled_autograd, "_enable", None) or compiled_autograd.enable
    with enable(compiler_fn):
        yield


def describe_graph(gm):
    lines = [str(gm.graph).rstrip()]
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        ev = node.meta.get("example_value")
        if isinstance(ev, (list, tuple)):
            shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__ for t in ev]
            lines.append(f"  placeholder {node.name}: {shapes}")
        elif ev is not None:
            lines.append(f"  placeholder {node.name}: {type(ev).__name__}")
    return "\n".join(lines)


def run_scenario(name, iterations, forward, device):
    probe = Probe()
    grads = []
    with compiled_autograd_enabled(probe.compiler_fn):
        for i in range(iterations):
            leaves, loss = forward(i, device)
            loss.backward()
            grads.append([None if p.grad is None else p.grad.tolist() for p in leaves])
    print(f"== scenario {name}: iterations={iterations} captures={len(probe.graphs)}")
    for k, gm in enumerate(probe.graphs):
        print(f"-- graph {k}")
        print(describe_graph(gm))
    print(f"-- grads of the last iteration: {grads[-1]}")


def mlp(n, device):
    w = iota(n * n, device=device).reshape(n, n).requires_grad_()
    x = iota(n * n, -1.0, device=device).reshape(n, n)
    return [w], torch.relu(x @ w).sum()


def implicit_add(_, device):
    x = iota(4, device=device).requires_grad_()
    return [x], (x * x + x).sum()


def tensor_grad_hook(_, device):
    x = iota(4, device=device).requires_grad_()
    y = x * x
    y.register_hook(lambda g: g * 2.0)
    y.grad_fn.register_prehook(lambda gs: tuple(g * 3.0 for g in gs))
    y.grad_fn.register_hook(lambda gi, go: tuple(None if g is None else g * 0.5 for g in gi))
    return [x], y.sum()


class MyFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2


def custom_fn_saved_tensors(_, device):
    x = iota(4, device=device).requires_grad_()
    return [x], MyFn.apply(x).sum()


def setitem(_, device):
    x = iota(4, device=device).requires_grad_()
    base = x.clone()
    base[1:3].mul_(torch.full((2,), 2.0, device=device))
    return [x], base.sum()


def custom_fn_output_metadata(_, device):
    x = iota(4, device=device).requires_grad_()
    y = torch.zeros(4, dtype=torch.float64, device=device)
    y.copy_(x)
    return [x], y.sum()


def tensor_subclass_basic(_, device):
    # As PyTorch's test: the TwoTensor is built outside the compiled region and
    # is the leaf; the region's output is a subclass too.
    from torch.testing._internal.two_tensor import TwoTensor

    a = TwoTensor(iota(4, device=device), iota(4, 2.0, device=device)).requires_grad_()

    @torch.compile(backend="aot_eager", fullgraph=True)
    def f(p):
        return p * 2

    z = f(a)
    return [a], z.sum()


SCENARIOS = [
    ("basic", 3, lambda i, d: mlp(4, d)),
    ("implicit_add", 2, implicit_add),
    ("tensor_grad_hook", 2, tensor_grad_hook),
    ("dynamic_shapes", 3, lambda i, d: mlp(4 + i, d)),
    ("custom_fn_saved_tensors", 2, custom_fn_saved_tensors),
    ("setitem", 2, setitem),
    ("custom_fn_output_metadata", 1, custom_fn_output_metadata),
    ("tensor_subclass_basic", 1, tensor_subclass_basic),
]


def cudagraph_tree_probe():
    """One function, three calls, reduce-overhead: warmup, record, replay."""
    from torch._inductor import cudagraph_trees

    @torch.compile(mode="reduce-overhead")
    def f(x):
        return x * 2 + 1

    x = torch.ones(8, device="cuda")
    outs = []
    for _ in range(3):
        outs.append(f(x).sum().item())
    print(f"== cudagraph tree: outputs={outs}")
    mgr = cudagraph_trees.get_container(x.device.index).tree_manager
    for attr in ("graph_counter", "warmed_up_functions", "roots", "debug_fail_counter",
                 "num_rerecord", "warmup_node_counter"):
        if hasattr(mgr, attr):
            val = getattr(mgr, attr)
            if isinstance(val, dict):
                val = {str(k): (len(v) if hasattr(v, "__len__") else v) for k, v in val.items()}
            elif isinstance(val, (set, list)):
                val = len(val)
            print(f"  tree_manager.{attr} = {val}")


def describe_tree(mgr):
    """Every recorded node of the tree: its function and input classes."""
    stack = [(str(k), n) for k, nodes in getattr(mgr, "roots", {}).items() for n in nodes]
    while stack:
        key, node = stack.pop()
        fields = []
        for attr in ("static_input_idxs", "non_static_input_idx", "cudagraph_managed_idxs",
                     "expanded_dims"):
            if hasattr(node, attr):
                val = getattr(node, attr)
                fields.append(f"{attr}={sorted(val) if isinstance(val, (set, list, tuple)) else val}")
        wrapped = getattr(node, "wrapped_function", None)
        fid = getattr(wrapped, "id", "?")
        print(f"  node {type(node).__name__} function={fid} " + " ".join(fields))
        for kids in getattr(node, "children", {}).values():
            stack.extend((key, k) for k in kids)


def compiled_optimizer_probe():
    """PR 107504's first case on the real system: a cudagraphed backward (the
    forward compiled with reduce-overhead), then a compiled Adam step."""
    from torch._inductor import cudagraph_trees

    w1 = torch.randn(4, 4, device="cuda", requires_grad=True)
    w2 = torch.randn(4, 4, device="cuda", requires_grad=True)
    opt = torch.optim.Adam([w1, w2], lr=0.01, capturable=True)

    @torch.compile(mode="reduce-overhead")
    def fwd(x):
        return x * w1 + x * w2

    @torch.compile(mode="reduce-overhead")
    def step():
        opt.step()

    for _ in range(5):
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(4, 4, device="cuda")
        fwd(x).backward(torch.ones(4, 4, device="cuda"))
        step()
        opt.zero_grad(set_to_none=True)
    mgr = cudagraph_trees.get_container(0).tree_manager
    print(f"== compiled optimizer: graphs recorded={next(mgr.graph_counter)}")
    describe_tree(mgr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    print(f"torch {torch.__version__} cuda={torch.version.cuda} device={args.device}")
    if args.device == "cuda":
        print(f"gpu {torch.cuda.get_device_name(0)}")
    failures = 0
    for name, iterations, forward in SCENARIOS:
        try:
            torch._dynamo.reset()
            run_scenario(name, iterations, forward, args.device)
        except Exception:  # a probe reports and goes on
            failures += 1
            print(f"== scenario {name}: FAILED")
            print(traceback.format_exc().rstrip())
        sys.stdout.flush()
    if args.device == "cuda":
        try:
            torch._dynamo.reset()
            cudagraph_tree_probe()
        except Exception:
            failures += 1
            print("== cudagraph tree: FAILED")
            print(traceback.format_exc().rstrip())
        try:
            torch._dynamo.reset()
            compiled_optimizer_probe()
        except Exception:
            failures += 1
            print("== compiled optimizer: FAILED")
            print(traceback.format_exc().rstrip())
    print(f"== probe done: {failures} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
