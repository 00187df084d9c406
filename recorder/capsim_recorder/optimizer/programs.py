"""The compiled-optimizer programs (program_registry.py's `optimizer`
kind): small CPU loops whose `opt.step()` goes through torch.compile,
recorded by optimizer/recorder.py. Each shows one rule of the compiled
optimizer (docs/cudagraph-trees.md section 6): which inputs of the step
are static, which guard makes Dynamo trace the step again, and what the
finalizer releases.
"""

from __future__ import annotations

import gc

import torch

from .. import program_registry
from .recorder import OptimizerRecorder


def program(description: str):
    return program_registry.program("optimizer", description)


def _linear(rec: OptimizerRecorder) -> torch.nn.Linear:
    lin = torch.nn.Linear(4, 3)
    rec.param("w", lin.weight)
    rec.param("b", lin.bias)
    return lin


def _loss(lin: torch.nn.Linear) -> torch.Tensor:
    return lin(torch.randn(2, 4)).square().sum()


def _loop(rec: OptimizerRecorder, lin: torch.nn.Linear, opt: torch.optim.Optimizer, steps: int,
          set_to_none: bool = True, mark: "bool | None" = None) -> None:
    step = torch.compile(opt.step)
    params = [lin.weight, lin.bias]
    for k in range(steps):
        rec.grads_from(_loss(lin), params)
        if k == 0 and mark is not None:
            rec.mark_static("w.grad", lin.weight.grad, mark)
            rec.mark_static("b.grad", lin.bias.grad, mark)
        rec.step("opt", step)
        rec.zero_grad("opt", set_to_none)


@program("Adam over a Linear, 3 compiled steps: params and state static, grads copied")
def compiled_adam_static_inputs(rec: OptimizerRecorder) -> None:
    lin = _linear(rec)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    rec.optimizer("opt", opt)
    _loop(rec, lin, opt, 3)


@program("AdamW, grads kept by zero_grad(set_to_none=False) and marked with mark_static_address(guard=False)")
def compiled_adamw_marked_grads(rec: OptimizerRecorder) -> None:
    lin = _linear(rec)
    opt = torch.optim.AdamW(lin.parameters(), lr=0.01)
    rec.optimizer("opt", opt)
    _loop(rec, lin, opt, 3, set_to_none=False, mark=False)


@program("Adam, grads kept and marked with mark_static_address(guard=True), 2.8's default")
def compiled_adam_marked_grads_guarded(rec: OptimizerRecorder) -> None:
    lin = _linear(rec)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    rec.optimizer("opt", opt)
    _loop(rec, lin, opt, 3, set_to_none=False, mark=True)


@program("SGD with momentum: the first step makes the buffers in its graph, the second is traced again with them static")
def compiled_sgd_momentum(rec: OptimizerRecorder) -> None:
    lin = _linear(rec)
    opt = torch.optim.SGD(lin.parameters(), lr=0.01, momentum=0.9)
    rec.optimizer("opt", opt)
    _loop(rec, lin, opt, 3)


@program("SGD without momentum: the first step has only the weight's grad, the second both (a p.grad is None guard)")
def compiled_sgd_grad_none_guard(rec: OptimizerRecorder) -> None:
    lin = _linear(rec)
    opt = torch.optim.SGD(lin.parameters(), lr=0.01)
    rec.optimizer("opt", opt)
    step = torch.compile(opt.step)
    params = [lin.weight, lin.bias]
    rec.grads_from((torch.randn(2, 4) @ lin.weight.t()).sum(), params)
    rec.step("opt", step)
    rec.zero_grad("opt", True)
    for _ in range(2):
        rec.grads_from(_loss(lin), params)
        rec.step("opt", step)
        rec.zero_grad("opt", True)


@program("Adam for 2 steps, then the optimizer and its compiled step deleted (the finalizer), then SGD with momentum for 2")
def compiled_adam_dropped(rec: OptimizerRecorder) -> None:
    lin = _linear(rec)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    rec.optimizer("opt", opt)
    _loop(rec, lin, opt, 2)
    del opt
    gc.collect()
    rec.drop("opt")
    opt2 = torch.optim.SGD(lin.parameters(), lr=0.01, momentum=0.9)
    rec.optimizer("opt2", opt2)
    step = torch.compile(opt2.step)
    for _ in range(2):
        rec.grads_from(_loss(lin), [lin.weight, lin.bias])
        rec.step("opt2", step)
        rec.zero_grad("opt2", True)
