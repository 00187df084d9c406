"""What Inductor receives as static inputs when torch.compile traces opt.step,
on the CPU: evidence for the static-address rules of the compiled optimizer
(PyTorch PR 107504; docs/cudagraph-trees.md) without a GPU.

It compiles Adam's step over a Linear(3, 2) with the default backend, wraps
CompiledFxGraph.post_compile (internal) and prints the graph's inputs in order
(shape, and whether Inductor's `static_input_idxs` holds it), once with the
grads as they are and once with torch._dynamo.mark_static_address on each
grad. A static input is one the cudagraph tree never copies in; a non-static
one is copied on every replay.

    build/torch-venv/bin/python scripts/optimizer-static-inputs.py
"""

import torch
import torch._inductor.output_code as output_code

seen = []
post_compile = output_code.CompiledFxGraph.post_compile


def spy(self, example_inputs, *args, **kwargs):
    static = set(self.fx_kwargs.get("static_input_idxs") or ())
    seen.append([(tuple(e.shape) if isinstance(e, torch.Tensor) else type(e).__name__, i in static)
                 for i, e in enumerate(example_inputs)])
    return post_compile(self, example_inputs, *args, **kwargs)


output_code.CompiledFxGraph.post_compile = spy


def compiled_step(mark_grads: bool) -> None:
    torch.manual_seed(0)
    torch._dynamo.reset()
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    lin(torch.randn(4, 3)).sum().backward()
    if mark_grads:
        for p in lin.parameters():
            torch._dynamo.mark_static_address(p.grad)
    torch.compile(opt.step)()


print(f"torch {torch.__version__}")
for label, mark in (("grads as they are", False), ("grads marked static", True)):
    before = len(seen)
    compiled_step(mark)
    for inputs in seen[before:]:
        shown = ", ".join(f"{shape}{' static' if s else ''}" for shape, s in inputs)
        print(f"{label}: {len(inputs)} inputs: {shown}")
