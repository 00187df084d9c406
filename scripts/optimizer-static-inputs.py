"""What Inductor hands cudagraphify as static inputs when torch.compile traces
opt.step, on the CPU: evidence for the static-address rules of the compiled
optimizer (PyTorch PR 107504; docs/cudagraph-trees.md section 6).

It compiles Adam's step over a Linear(3, 2) and reads the `static_input_idxs`
of the compiled graph (CompiledFxGraph.post_compile's fx_kwargs, internal),
printing for each input whether it is static. A static input is one the
cudagraph tree never copies in; a non-static one is copied on every replay.

Two parts:
  cold: each variant in a process of its own with an empty cache folder
        (grads as they are, marked with mark_static_address(guard=False),
        marked with guard=True);
  warm: in one process, grads unmarked then marked with guard=False, with
        Inductor's FX graph cache and AOTAutograd's cache as configured (on by
        default; --no-caches turns both off). On 2.8.0 and 2.11.0 the second
        compile hits the caches and carries the first compile's indices; the
        same happens across processes that share a cache folder on disk.

    build/torch-venv/bin/python scripts/optimizer-static-inputs.py [--no-caches]
"""

import os
import subprocess
import sys
import tempfile

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


def compiled_step(mark) -> list:
    torch.manual_seed(0)
    torch._dynamo.reset()
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    lin(torch.randn(4, 3)).sum().backward()
    if mark is not None:
        for p in lin.parameters():
            torch._dynamo.mark_static_address(p.grad, guard=mark)
    before = len(seen)
    torch.compile(opt.step)()
    return seen[before:]


def shown(inputs) -> str:
    return ", ".join(f"{shape}{' static' if s else ''}" for shape, s in inputs)


LABELS = {"none": None, "unguarded": False, "guarded": True}

if len(sys.argv) > 2 and sys.argv[1] == "--one":
    for inputs in compiled_step(LABELS[sys.argv[2]]):
        print(f"  cold, grads {sys.argv[2]}: {len(inputs)} inputs: {shown(inputs)}")
    sys.exit(0)

print(f"torch {torch.__version__}")
for label in LABELS:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, __file__, "--one", label], capture_output=True,
                             text=True, env=env)
    print(out.stdout, end="")
if "--no-caches" in sys.argv:
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
for label in ("none", "unguarded"):
    for inputs in compiled_step(LABELS[label]):
        print(f"  warm, grads {label}: {len(inputs)} inputs: {shown(inputs)}")
