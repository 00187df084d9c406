"""What the wraps of the plain PyTorch API (wraps.py) report to: a sink,
which each recording form's session is. The compiled-autograd form's
(session.py's RecordingSession) and the cudagraph form's (cudagraphs.py's
CudagraphRecording) each decide what a statement becomes in their trace;
the wraps themselves only see the call and forward it, so that both forms
share one set of wraps.

`Sink`'s own methods run each statement as PyTorch would, unrecorded: a
form overrides the statements it records and inherits the rest, so that a
wrap whose form does not record its statement (a function compiled under
one recording and called under another) leaves the script alone.

Methods given `run` (or `set_it`) call it to run the statement itself and
return what the statement returns; those that may return NOT_OURS instead
(patching.py) leave the statement to run unrecorded, without having called
it. No torch import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .patching import NOT_OURS


@dataclass(frozen=True)
class BackwardArgs:
    """A backward's arguments besides its roots: Tensor.backward's, or
    torch.autograd.backward's (`gradient`: its grad_tensors)."""

    gradient: Any = None
    retain_graph: Any = None
    create_graph: bool = False
    inputs: Any = None
    grad_variables: Any = None  # torch.autograd.backward's deprecated alias

    def given(self, gradient: Any) -> dict[str, Any]:
        """The keyword arguments the script gave (`gradient`: its one
        root's), to run the same backward again under compiled autograd."""
        kwargs: dict[str, Any] = {}
        if gradient is not None:
            kwargs["gradient"] = gradient
        if self.retain_graph is not None:
            kwargs["retain_graph"] = self.retain_graph
        if self.create_graph:
            kwargs["create_graph"] = self.create_graph
        if self.inputs is not None:
            kwargs["inputs"] = self.inputs
        return kwargs


class Sink:
    """A recording form's side of the wraps (see the module's docstring)."""

    # The wraps.py entries this form installs, by name.
    WRAPS: tuple[str, ...] = ()

    def on_tensor_backward(self, root: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        """`root.backward(...)`."""
        return run()

    def on_autograd_backward(self, tensors: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        """`torch.autograd.backward(tensors, ...)`."""
        return run()

    def on_autograd_grad(self, frame: Any) -> None:
        """`torch.autograd.grad(...)` called from `frame`, before it runs."""

    def on_optimizer_made(self, opt: Any, frame: Any) -> None:
        """After torch.optim.Optimizer.__init__ (`frame`: the wrap's own)."""

    def on_optimizer_zero_grad(self, opt: Any, frame: Any, set_to_none: bool,
                               run: Callable[[], Any]) -> Any:
        return NOT_OURS

    def on_module_zero_grad(self, module: Any, frame: Any, set_to_none: bool,
                            run: Callable[[], Any]) -> Any:
        return NOT_OURS

    def on_parameter_grad_set_none(self, param: Any, frame: Any, set_it: Callable[[], Any]) -> Any:
        """The script's `p.grad = None` of an nn.Parameter."""
        return NOT_OURS

    def on_parameter_data(self, param: Any, frame: Any, new: Any, set_it: Callable[[], Any]) -> Any:
        """The script's `p.data = new` of an nn.Parameter."""
        return NOT_OURS

    def on_compile(self, model: Any, compiled: Any) -> Any:
        """What torch.compile(model) returns, given what PyTorch's returned."""
        return compiled

    def on_compiled_autograd_enable(self, compiler_fn: Any) -> Any:
        """The compiler function compiled autograd's `_enable` gets when the
        script enables it itself (its own `_enable`, or
        `torch._dynamo.config.compiled_autograd` inside torch.compile)."""
        return compiler_fn

    def on_compiled_call(self, compiled: Any, args: Any, kwargs: Any) -> Any:
        """A call of a function whose compiled form on_compile wrapped
        (wraps.reported_calls)."""
        return compiled(*args, **kwargs)

    def on_mark_static_address(self, t: Any, guard: Any, run: Callable[[], Any]) -> Any:
        return run()

    def on_mark_step_begin(self, run: Callable[[], Any]) -> Any:
        return run()

    def on_hook_registered(self, kind: str, owner: Any, handle: Any) -> None:
        """After a hook registration (`kind`: wraps.HOOK_KINDS) on `owner`
        (a tensor, or a Python Function's node) returned `handle`."""
