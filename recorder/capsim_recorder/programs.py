"""The compiled-autograd programs (program_registry.py's `autograd` kind):
small real PyTorch training loops.

Each program takes a Recorder and runs 2-3 training steps on the CPU, calling
rec.backward(loss) instead of loss.backward() so that each backward is walked,
run under compiled autograd and written to the trace. Sizes stay below 16 and
graphs to a few nodes, so that a trace is readable and the run is quick.

The trace records graph structure, shapes and capture decisions, not values,
so the programs do not check numbers; the seed only makes them reproducible.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import program_registry, torch_compat
from .recorder import Recorder


def program(description: str):
    return program_registry.program("autograd", description)


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
    TwoTensor = torch_compat.two_tensor()

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


def _scaled_by() -> type:
    """A fresh autograd.Function class, as a program that defines its
    Function inside the training loop makes one every step."""

    class ScaledBy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor, scale: float) -> torch.Tensor:
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, grad: torch.Tensor):
            return grad * ctx.scale, None

    return ScaledBy


@program("a custom Function whose ctx keeps a float that changes every step: one capture")
def custom_function_varying_scalar(rec: Recorder) -> None:
    scaled_by = _scaled_by()
    w = torch.randn(4, requires_grad=True)
    for step in range(3):
        loss = scaled_by.apply(w * torch.randn(4), 0.5 + step).sum()
        rec.backward(loss)
        w.grad = None


@program("a custom Function class defined inside the loop (pytorch/pytorch#155105): a miss every step")
def custom_function_redefined(rec: Recorder) -> None:
    w = torch.randn(4, requires_grad=True)
    for _ in range(3):
        loss = _scaled_by().apply(w * torch.randn(4), 0.5).sum()
        rec.backward(loss)
        w.grad = None


@program("backward(retain_graph=True) twice over one graph per step, then zero_grad")
def retain_graph(rec: Recorder) -> None:
    lin = torch.nn.Linear(3, 2)
    for _ in range(3):
        loss = lin(torch.randn(4, 3)).tanh().sum()
        rec.backward(loss, retain_graph=True)
        rec.backward(loss)
        lin.zero_grad()


@program("a module with buffers (BatchNorm1d running stats) and a frozen parameter")
def module_buffers_frozen(rec: Recorder) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                                torch.nn.Linear(6, 2))
    model[0].bias.requires_grad_(False)  # frozen: no AccumulateGrad for it
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(5, 4)).pow(2).mean()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("nn.Embedding(sparse=False) feeding a Linear: EmbeddingBackward0 with its int64 indices")
def embedding_dense(rec: Recorder) -> None:
    emb = torch.nn.Embedding(10, 4, sparse=False)
    lin = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(list(emb.parameters()) + list(lin.parameters()), lr=0.1)
    for _ in range(3):
        idx = torch.randint(0, 10, (3, 2))
        loss = lin(emb(idx)).sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("Conv2d, BatchNorm2d, ReLU, flatten, Linear, cross-entropy")
def conv_batchnorm(rec: Recorder) -> None:
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(2 * 4 * 4, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(2, 1, 6, 6), torch.randint(0, 3, (2,))
        loss = F.cross_entropy(model(x), y)
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("LayerNorm, GELU, a residual add, softmax over the output")
def layernorm_gelu_residual(rec: Recorder) -> None:
    norm, lin1, lin2 = torch.nn.LayerNorm(6), torch.nn.Linear(6, 12), torch.nn.Linear(12, 6)
    params = [*norm.parameters(), *lin1.parameters(), *lin2.parameters()]
    opt = torch.optim.AdamW(params, lr=0.01)
    for _ in range(3):
        x = torch.randn(3, 6)
        h = x + lin2(F.gelu(lin1(norm(x))))
        loss = -F.log_softmax(h, dim=-1)[:, 0].mean()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("a 4-layer TransformerEncoder (d_model 8, 2 heads, no dropout): a graph of over 200 autograd nodes")
def transformer_encoder(rec: Recorder) -> None:
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        loss = model(torch.randn(2, 3, 8)).pow(2).mean()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("a detached copy of a parameter used in the loss: no grad flows through the copy")
def detach_in_loss(rec: Recorder) -> None:
    w = torch.randn(3, 3, requires_grad=True)
    for _ in range(3):
        x = torch.randn(2, 3)
        target = x @ w.detach()
        loss = F.mse_loss(x @ w, target + 1.0)
        rec.backward(loss)
        w.grad = None


@program("a loss over two model outputs that share a trunk (two heads, summed losses)")
def two_heads(rec: Recorder) -> None:
    trunk, head_a, head_b = torch.nn.Linear(4, 5), torch.nn.Linear(5, 2), torch.nn.Linear(5, 1)
    params = [*trunk.parameters(), *head_a.parameters(), *head_b.parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    for _ in range(3):
        h = torch.relu(trunk(torch.randn(3, 4)))
        loss = head_a(h).square().mean() + head_b(h).abs().sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("torch.utils.checkpoint around a block (non-reentrant): the recompute happens inside backward")
def activation_checkpoint(rec: Recorder) -> None:
    from torch.utils.checkpoint import checkpoint

    block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(block.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(2, 4, requires_grad=True)
        loss = checkpoint(block, x, use_reentrant=False).sum()
        rec.backward(loss)
        opt.step()
        opt.zero_grad()


@program("backward(create_graph=True), then a gradient penalty backward through the grads (double backward)")
def create_graph_double_backward(rec: Recorder) -> None:
    import warnings

    w = torch.randn(3, requires_grad=True)
    for _ in range(3):
        x = torch.randn(3)
        loss = (w * x).tanh().sum()
        with warnings.catch_warnings():
            # backward(create_graph=True) warns of the .grad reference cycle,
            # which the program breaks by resetting w.grad below.
            warnings.simplefilter("ignore")
            rec.backward(loss, create_graph=True)
        penalty = w.grad.pow(2).sum()
        w.grad = None
        rec.backward(penalty)
        w.grad = None


@program("torch.autograd.graph.saved_tensors_hooks around the forward: every saved tensor is packed (packed_data)")
def saved_tensor_hooks(rec: Recorder) -> None:
    w = torch.randn(4, requires_grad=True)
    for _ in range(3):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 1.0, lambda t: t):
            loss = (w * torch.randn(4)).sin().sum()
        rec.backward(loss)
        w.grad = None
