"""Plain PyTorch programs (program_registry.py's `launcher` kind) recorded
the way the launcher records a user's script: under
capsim_recorder.record() (recording.py), with no recorder calls in them.
They are the corpus's check that what the wraps see (hooks registered with
the plain API, `torch.autograd.backward`, a hook removed through its
handle) is what compiled autograd keys and lifts, on each release
(data/corpus/torch/RELEASE/launcher_*.jsonl).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from .. import program_registry, torch_compat

SEED = 0
COMMAND = "python -m capsim_recorder --out data/corpus/torch/{release} --program {name}"


def record_launcher_program(prog: Any, path: str, release: str) -> int:
    """Runs one program under record() into `path`; returns its backwards."""
    from ..recording import record

    torch.manual_seed(SEED)
    with record(path, name=prog.name, reset=True, cudagraphs=prog.cudagraphs,
                command=COMMAND.format(release=release, name=prog.name)) as session:
        prog.run()
        return session.steps


def program(description: str, *, cudagraphs: bool = False):
    """Registered as `launcher_<function>`; `cudagraphs`: recorded as `run
    --cudagraphs` records a script."""
    return program_registry.program("launcher", description, prefix="launcher_",
                                    cudagraphs=cudagraphs)


# Their traces hold the source lines of their compiled code (stack_traces in
# data/corpus/torch/*/launcher_reduce_overhead.jsonl): the programs keep their lines.
@program("module full backward hooks, a post-accumulate-grad hook, a tensor hook "
         "registered and removed per step, torch.autograd.backward")
def hooks() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    # Both land on the BackwardHookFunctionBackward nodes the module adds
    # around its forward: a post hook and a pre hook of a Python Function.
    model[2].register_full_backward_hook(lambda m, grad_in, grad_out: None)
    model[0].register_full_backward_pre_hook(lambda m, grad_out: None)
    model[0].weight.register_post_accumulate_grad_hook(lambda p: None)
    # The module's input needs no grad, so PyTorch warns that the full hook
    # fires on the outputs' grads; that is what this program wants.
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    for step in range(3):
        hidden = model[0](torch.randn(5, 4))
        # Step 1 has no tensor hook: the key changes, and compiled autograd
        # captures again; step 2 has it back.
        handle = hidden.register_hook(lambda g: g * 2) if step != 1 else None
        loss = model[2](torch.relu(hidden)).square().mean()
        torch.autograd.backward(loss)
        if handle is not None:
            handle.remove()


@program("a compiled Adam step (torch.compile of opt.step) and a compiled SGD-with-momentum "
         "step whose grads the script marks static after the first backward and keeps with "
         "zero_grad(set_to_none=False); no recorder calls")
def compiled_optimizer() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    head = torch.nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sgd = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    adam_step = torch.compile(opt.step)

    @torch.compile
    def sgd_step() -> None:
        sgd.step()

    for step in range(3):
        x = torch.randn(5, 4)
        model(x).square().mean().backward()
        adam_step()
        opt.zero_grad()
        head(x).square().mean().backward()
        if step == 0:
            for p in head.parameters():
                torch_compat.mark_static_address(p.grad)
        sgd_step()
        sgd.zero_grad(set_to_none=False)


@program("the cudagraph trees' half of a plain training loop under "
         "torch.compile(mode=\"reduce-overhead\"): an MLP with biases and a mean-squared loss "
         "(mean, pow, sums over some dims and views in its graphs), SGD stepped eagerly, the loss "
         "logged each step, then predictions under no_grad at three batch sizes (a dynamic "
         "recompile) kept and read at the end", cudagraphs=True)
def reduce_overhead() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # (Two outputs, not one: on the CPU, 2.8's Inductor unrolls an mm whose
    # inner size is 1 into selects and a cat, which capsim cannot express.)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile(mode="reduce-overhead")
    def loss_of(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (model(x) - y).pow(2).mean()

    @torch.compile(mode="reduce-overhead")
    def predict(x: torch.Tensor) -> torch.Tensor:
        return model(x)

    logged = []
    for _ in range(3):
        loss = loss_of(torch.randn(4, 8, device=device), torch.randn(4, 2, device=device))
        logged.append(loss.item())  # a read right after the call: fine
        loss.backward()
        opt.step()
        opt.zero_grad()
    with torch.no_grad():
        kept = [predict(torch.randn(batch, 8, device=device)) for batch in (2, 3, 5)]
        # Read after later calls: on a GPU, E1 for those overwritten since.
        torch.cat(kept)
