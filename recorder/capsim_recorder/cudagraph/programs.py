"""The cudagraph programs (program_registry.py's `cudagraph` kind): small
torch.compile(mode="reduce-overhead") training loops, run on `rec.device`
(cuda on the GPU machine; `--device cpu` runs them without cudagraphs, to
check the recorder itself).

Each program states its actions through the program API (program_api.py)
and lets the compiled calls be seen by the hooks. Sizes stay tiny so that a
trace reads easily and compiles are quick. The model has no biases: the
gradient of a bias is a sum over the batch, which capsim's `sum` (over every
dim) cannot express, so a biased model is untranslated (that is what
`mlp_bias_adam` shows).
"""

from __future__ import annotations

from typing import Optional

import torch

from .. import program_registry
from .program_api import CudagraphRecorder

MODE = "reduce-overhead"


def program(description: str, inductor_config: Optional[dict] = None):
    """Registers a program function under its own name, as the `cudagraph`
    kind of program_registry.py: `python -m capsim_recorder --cudagraphs`
    runs it on the one cudagraph driver (runner.py), with a
    CudagraphRecorder as `rec`.

    `description`: the program's line in `--cudagraphs --list`.

    `inductor_config`: torch._inductor.config settings for this program
    only, set around its run alone (torch_compat.fresh_compile_patches) and
    written to the header as x_inductor_config; None: PyTorch's defaults."""
    return program_registry.program("cudagraph", description, inductor_config=inductor_config)


# A GPU trace of these programs holds the source lines of their compiled
# code (a function line's stack_traces, as PyTorch's E1 names them), so the
# helpers and programs below keep their lines: a trace recorded again then
# reads the same, and a new helper or program goes after the last one.


def _mlp(rec: CudagraphRecorder, bias: bool = False) -> torch.nn.Module:
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8, bias=bias), torch.nn.ReLU(), torch.nn.Linear(8, 2, bias=bias)
    ).to(rec.device)
    names = ["w1", "b1", "w2", "b2"] if bias else ["w1", "w2"]
    rec.params(model, names)
    return model


def _adam(rec: CudagraphRecorder, model: torch.nn.Module, name: str = "opt"):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    names = [rec.session.registry.lookup(p) for p in model.parameters()]
    rec.create_optimizer(name, opt, names)

    def step() -> None:
        opt.step()

    return opt, torch.compile(step, mode=MODE)


def _train_step(rec: CudagraphRecorder, fmodel, opt, step, batch: int = 3, set_to_none: bool = True,
                name: str = "opt"):
    x = rec.tensor("x", torch.randn(batch, 4, device=rec.device))
    out = fmodel(x)
    loss = out.sum()
    rec.backward(loss)
    rec.optimizer_step(name, step)
    rec.zero_grad(name, opt, set_to_none=set_to_none)
    return out


@program("MLP 4-8-2 (no bias, ReLU), compiled forward and backward, compiled Adam step, zero_grad(set_to_none=True); 4 steps")
def mlp_adam(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    for _ in range(4):
        _train_step(rec, fmodel, opt, step)


@program(
    "mlp_adam with Inductor's graph partitions off (graph_partition=False): the tree manager gets each whole"
    " graph, as in the classic manager capsim models; 4 steps",
    inductor_config={"graph_partition": False},
)
def mlp_adam_whole_graphs(rec: CudagraphRecorder) -> None:
    mlp_adam(rec)


@program("mlp_adam with w1.data replaced by a new tensor before step 3: the forward re-records, the Adam step recompiles; 5 steps")
def param_reassigned(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    w1 = model[0].weight
    for k in range(5):
        if k == 3:
            rec.reassign_data("w1", w1, torch.randn(8, 4, device=rec.device))
        _train_step(rec, fmodel, opt, step)


@program("mlp_adam keeping each step's output alive into the next step and reading it after the next forward; 4 steps")
def output_kept_across_steps(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    prev = None
    for _ in range(4):
        x = rec.tensor("x", torch.randn(3, 4, device=rec.device))
        out = fmodel(x)
        if prev is not None:
            rec.read(prev)  # the previous step's output, after this forward
        loss = out.sum()
        rec.backward(loss)
        rec.optimizer_step("opt", step)
        rec.zero_grad("opt", opt, set_to_none=True)
        prev = out
        del out, loss


@program("mlp_adam with the grads marked static (mark_static_address) after the first backward, zero_grad(set_to_none=True); 5 steps")
def zero_grad_static_grads(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    for k in range(5):
        x = rec.tensor("x", torch.randn(3, 4, device=rec.device))
        loss = fmodel(x).sum()
        rec.backward(loss)
        if k == 0:
            for name, p in zip(["w1", "w2"], model.parameters()):
                rec.mark_static(f"{name}.grad", p.grad)
        rec.optimizer_step("opt", step)
        rec.zero_grad("opt", opt, set_to_none=True)
        del loss


@program("mlp_adam with zero_grad(set_to_none=False): the grads stay and later backwards accumulate into them; 4 steps")
def zero_grad_keep(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    for _ in range(4):
        _train_step(rec, fmodel, opt, step, set_to_none=False)


@program("mlp_adam with batch sizes 4, 4, 4, 6, 6, 6, 8, 8 (automatic dynamic shapes: a recompile with a SymInt, then one FunctionID per size)")
def dynamic_shapes(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    for batch in (4, 4, 4, 6, 6, 6, 8, 8):
        _train_step(rec, fmodel, opt, step, batch=batch)


@program("mlp_adam for 3 steps, then the optimizer and its compiled step are deleted (drop_optimizer) and an SGD with momentum takes over for 3 steps")
def optimizer_dropped(rec: CudagraphRecorder) -> None:
    model = _mlp(rec)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    for _ in range(3):
        _train_step(rec, fmodel, opt, step)
    del opt, step
    rec.drop_optimizer("opt")
    opt2 = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rec.create_optimizer("opt2", opt2, ["w1", "w2"])

    def sgd_step() -> None:
        opt2.step()

    step2 = torch.compile(sgd_step, mode=MODE)
    for _ in range(3):
        _train_step(rec, fmodel, opt2, step2, name="opt2")


@program("mlp_adam with biases: the backward sums over the batch, which capsim cannot express (x_untranslated; events kept); 3 steps")
def mlp_bias_adam(rec: CudagraphRecorder) -> None:
    model = _mlp(rec, bias=True)
    fmodel = torch.compile(model, mode=MODE)
    opt, step = _adam(rec, model)
    for _ in range(3):
        _train_step(rec, fmodel, opt, step)
