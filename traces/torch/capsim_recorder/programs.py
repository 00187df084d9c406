"""The registry of recorded programs: small real PyTorch training loops.

Each program takes a Recorder and runs 2-3 training steps on the CPU, calling
rec.backward(loss) instead of loss.backward() so that each backward is walked,
run under compiled autograd and written to the trace. Sizes stay below 16 and
graphs to a few nodes, so that a trace is readable and the run is quick.

The trace records graph structure, shapes and capture decisions, not values,
so the programs do not check numbers; the seed only makes them reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from .recorder import Recorder


@dataclass(frozen=True)
class Program:
    name: str
    run: Callable[[Recorder], None]
    description: str


PROGRAMS: dict[str, Program] = {}


def program(description: str):
    def register(fn: Callable[[Recorder], None]) -> Callable[[Recorder], None]:
        PROGRAMS[fn.__name__] = Program(fn.__name__, fn, description)
        return fn

    return register


def _mlp() -> torch.nn.Module:
    # LeakyReLU rather than ReLU: its node saves a float (negative_slope), so
    # the trace shows saved_scalars.
    return torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.LeakyReLU(0.1), torch.nn.Linear(8, 2)
    )


@program("2-layer MLP (LeakyReLU), MSE loss, Adam step and zero_grad after each backward")
def mlp_adam(rec: Recorder) -> None:
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(3):
        x, target = torch.randn(3, 4), torch.randn(3, 2)
        loss = F.mse_loss(model(x), target)
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("an in-place mul into a slice of a non-leaf: the non-leaf's grad_fn becomes CopySlices wrapping MulBackward0")
def inplace_view_copyslices(rec: Recorder) -> None:
    w = torch.randn(6, requires_grad=True)
    for _ in range(3):
        scale = torch.randn(2)
        y = w * 2.0
        view = y[1:3]
        view.mul_(scale)  # the view's in-place op rebases y's history
        # What CopySlices keeps in C++: the base and view geometries, and the
        # inner MulBackward0's saved tensors (scale as `other`; `self` is not
        # saved, since scale does not require grad).
        rec.notes.copyslices_inner(
            y.grad_fn, "MulBackward0", base=y, view=view, saved={"other": scale, "self": None}
        )
        loss = y.sum()
        rec.backward(loss)
        w.grad = None


@program("z.copy_(x) into a float64 buffer (CopyBackwards) and w.to(float64) (ToCopyBackward0)")
def dtype_cast_copybackwards(rec: Recorder) -> None:
    x = torch.randn(4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    for _ in range(3):
        z = torch.zeros(4, dtype=torch.float64)
        z.copy_(x)  # z did not require grad; copy_ gives it CopyBackwards
        loss = (z * w.to(torch.float64)).sum()
        rec.backward(loss)
        x.grad = None
        w.grad = None


@program("one leaf used three times: several edges into one AccumulateGrad")
def fan_in_accumulation(rec: Recorder) -> None:
    w = torch.randn(5, requires_grad=True)
    for _ in range(3):
        x = torch.randn(5)
        loss = (w * x + w.sin() + w * w).sum()
        rec.backward(loss)
        w.grad = None


class ScaledSquare(torch.autograd.Function):
    """y = scale * x**2 with a hand-written backward: a PyNode in the graph."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.scale = scale
        return scale * x * x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        return grad * 2.0 * ctx.scale * x, None


@program("a torch.autograd.Function (ScaledSquare) between two codegen'd ops")
def custom_function(rec: Recorder) -> None:
    w = torch.randn(3, 4, requires_grad=True)
    for _ in range(3):
        x = torch.randn(3, 4)
        loss = ScaledSquare.apply(w * x, 0.5).sum()
        rec.backward(loss)
        w.grad = None


@program("TwoTensor parameters through a torch.compile(backend='aot_eager') region: CompiledFunctionBackward")
def twotensor_compiled_region(rec: Recorder) -> None:
    from torch.testing._internal.two_tensor import TwoTensor

    def region(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).sin()

    compiled = torch.compile(region, backend="aot_eager")
    w = TwoTensor(torch.randn(4), torch.randn(4)).requires_grad_()
    for _ in range(3):
        x = TwoTensor(torch.randn(4), torch.randn(4))
        # PyTorch asks for the forward of a compiled region to run inside the
        # compiled-autograd context as well.
        with rec.compiled_autograd():
            out = compiled(w, x)
            rec.notes.subclass_output(out)  # a TwoTensor: its InputMetadata says so
            loss = out.sum()
            rec.backward(loss)
        w.grad = None


@program("a tensor hook on a non-leaf and on a leaf, a pre-hook, a post-hook, a post-accumulate-grad hook")
def hooks(rec: Recorder) -> None:
    w = torch.randn(4, requires_grad=True)
    # Hooks on a leaf stay on it across steps, as in PyTorch.
    rec.notes.tensor_hook(w, lambda g: g * 0.5)
    rec.notes.post_accumulate_grad_hook(w, lambda p: None)
    for _ in range(3):
        x = torch.randn(4)
        h = w * x
        rec.notes.tensor_hook(h, lambda g: g + 1.0)
        rec.notes.post_hook(h.grad_fn, lambda grad_inputs, grad_outputs: None)
        loss = h.sum()
        rec.notes.pre_hook(loss.grad_fn, lambda grad_outputs: None)
        rec.backward(loss)
        w.grad = None


@program("a Linear layer's weight.data replaced by a new tensor between steps (SGD)")
def param_reassigned(rec: Recorder) -> None:
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    for step in range(3):
        if step > 0:
            # Same shape, new storage: the Parameter object (and its
            # AccumulateGrad variable) stays, its data does not.
            lin.weight.data = torch.randn(2, 3)
        loss = lin(torch.randn(5, 3)).sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


def _linear_steps(rec: Recorder, set_to_none: bool) -> None:
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    for _ in range(3):
        loss = lin(torch.randn(5, 3)).sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)


@program("Linear + SGD with optimizer.zero_grad(set_to_none=True): every backward starts from .grad None")
def zero_grad_set_to_none(rec: Recorder) -> None:
    _linear_steps(rec, set_to_none=True)


@program("Linear + SGD with optimizer.zero_grad(set_to_none=False): later backwards accumulate into zeroed grads")
def zero_grad_keep(rec: Recorder) -> None:
    _linear_steps(rec, set_to_none=False)


def _batch_steps(rec: Recorder, dynamic: bool) -> None:
    lin = torch.nn.Linear(3, 2)
    for batch in (4, 6, 8):
        loss = lin(torch.randn(batch, 3)).relu().sum()
        rec.backward(loss, dynamic=dynamic)
        lin.zero_grad()


@program("batch size 4, 6, 8 across steps, compiled autograd dynamic=True (PyTorch's default)")
def dynamic_shapes(rec: Recorder) -> None:
    _batch_steps(rec, dynamic=True)


@program("batch size 4, 6, 8 across steps, compiled autograd dynamic=False: a changed size recaptures")
def static_shapes(rec: Recorder) -> None:
    _batch_steps(rec, dynamic=False)


@program("the output of one step, detached, is an input of the next step")
def output_kept_across_steps(rec: Recorder) -> None:
    lin = torch.nn.Linear(3, 3)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    kept = torch.randn(2, 3)
    for _ in range(3):
        out = lin(kept)
        loss = (out * out).sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()
        kept = out.detach()  # out stays alive through `kept` into the next step


@program("SGD with momentum; after the second step the optimizer is deleted and a new one made")
def optimizer_dropped(rec: Recorder) -> None:
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        if step == 2:
            del opt
            opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
        loss = lin(torch.randn(4, 3)).sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()
