"""Which mode Inductor compiles a compiled-autograd graph in, on the CPU.

The cudagraph tree manager runs a function in the CompilationMode its compile
had: BACKWARD only for AOTAutograd's backward compiler (is_backward), INFERENCE
for an inference compile (is_inference), FORWARD otherwise
(torch/_inductor/cudagraph_trees.py, cudagraphify_impl / CUDAGraphTreeManager
.run; torch/_inductor/output_code.py, maybe_handle_backward_generation). Those
flags do not depend on the device, so this CPU run reads them for the graph
compiled autograd hands to `torch.compile(backend="inductor")`: it wraps
CompiledFxGraph.post_compile (internal) and prints, per compile, is_inference,
is_backward and the grad mode. docs/compiled-autograd.md keeps the result per
release; scripts/gpu-check.sh's step 7 checks the tree itself on a GPU.

    build/torch-venv/bin/python scripts/ca-compile-mode.py
"""

import torch
import torch._inductor.output_code as output_code
from torch._dynamo import compiled_autograd

seen = []
post_compile = output_code.CompiledFxGraph.post_compile


def spy(self, *args, **kwargs):
    seen.append((self.fx_kwargs.get("is_inference"), self.fx_kwargs.get("is_backward"),
                 torch.is_grad_enabled()))
    return post_compile(self, *args, **kwargs)


output_code.CompiledFxGraph.post_compile = spy
torch.manual_seed(0)
lin = torch.nn.Linear(4, 3)
for _ in range(2):
    loss = lin(torch.randn(2, 4)).sum()
    with compiled_autograd._enable(lambda gm: torch.compile(gm, backend="inductor", fullgraph=True)):
        loss.backward()
print(f"torch {torch.__version__}")
for is_inference, is_backward, grad in seen:
    print(f"compiled-autograd graph: is_inference={is_inference} is_backward={is_backward} "
          f"grad_enabled={grad}")
