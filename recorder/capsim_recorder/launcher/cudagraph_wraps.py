"""The wraps of the plain PyTorch API for record(cudagraphs=True) (the
recording: cudagraphs.py): each reports the script's statement to the
running recording, then runs it as PyTorch would. Patched for the length of
the block (patching.patched), all looked up by PyTorch at call time.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any, Iterator, Optional

import torch

from .. import torch_compat
from .cudagraphs import CudagraphRecording
from . import patching
from .optimizer import optimizer_params
from .patching import called_by_torch, patched


_active: Optional[CudagraphRecording] = None


def active() -> Optional[CudagraphRecording]:
    """The recording running now, or None."""
    return _active


def _idle(recording: Optional[CudagraphRecording]) -> bool:
    return recording is None or not recording.live() or torch.compiler.is_compiling()


def _patched_backward(original: Any) -> Any:
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        call = functools.partial(original, self, gradient, retain_graph, create_graph, inputs)
        r = _active
        if _idle(r) or r.busy or self.grad_fn is None or not r.wants():
            return call()
        return r.backward(call)

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_autograd_backward(original: Any) -> Any:
    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                 grad_variables=None, inputs=None):
        call = functools.partial(original, tensors, grad_tensors, retain_graph, create_graph,
                                 grad_variables, inputs)
        r = _active
        if _idle(r) or r.busy:
            return call()
        # One root or several (two losses in one call): the grads are
        # followed the same way, from the graphs the backward ran.
        roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        if all(getattr(t, "grad_fn", None) is None for t in roots) or not r.wants():
            return call()
        return r.backward(call)

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_grad(original: Any) -> Any:
    def grad(*args, **kwargs):
        r = _active
        if not _idle(r) and not r.busy and not called_by_torch(sys._getframe(1)):
            r.skip("torch.autograd.grad calls")
        return original(*args, **kwargs)

    grad.__wrapped__ = original  # type: ignore[attr-defined]
    return grad


def _patched_optimizer_init(original: Any) -> Any:
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        r = _active
        if not _idle(r):
            r.guarded("an optimizer made", r.script.created, self, sys._getframe())

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


def _patched_zero_grad(original: Any) -> Any:
    """torch.optim.Optimizer.zero_grad: an optimizer's in the trace
    (create_optimizer) is zero_grad; the script's call of any other's (of a
    kind capsim does not model, stepped eagerly) is a clear_grads of its
    params, named after the optimizer's variable."""

    def on_call(opt: Any, frame: Any, set_to_none: bool, run: Any) -> Any:
        r = _active
        if _idle(r):
            return patching.NOT_OURS
        if r.script.follows(opt):
            r.guarded("zero_grad", r.script.zero_grad, opt, set_to_none)
            return run()
        if not _clearing(r, frame):
            return patching.NOT_OURS
        return _clear(r, opt, optimizer_params(opt), set_to_none, run)

    return patching.zero_grad_wrap(original, on_call)


def _patched_mark_static_address(original: Any) -> Any:
    """With the release's own default for `guard` (True up to 2.9, False
    from 2.11), as the CPU form's wrap."""
    import inspect

    default = inspect.signature(original).parameters["guard"].default

    def mark_static_address(t, guard=default):
        r = _active
        if not _idle(r):
            r.guarded("mark_static_address", r.script.marked, t, guard)
        return original(t, guard=guard)

    mark_static_address.__wrapped__ = original  # type: ignore[attr-defined]
    return mark_static_address


def _patched_mark_step_begin(original: Any) -> Any:
    def cudagraph_mark_step_begin():
        r = _active
        if not _idle(r):
            r.guarded("cudagraph_mark_step_begin", r.script.step_begin)
        return original()

    cudagraph_mark_step_begin.__wrapped__ = original  # type: ignore[attr-defined]
    return cudagraph_mark_step_begin


def _clearing(r: Optional[CudagraphRecording], frame: Any) -> bool:
    """Whether a grad clear at `frame` is the script's to record."""
    return not _idle(r) and not r.busy and not r.script.clearing and not called_by_torch(frame)


def _clear(r: CudagraphRecording, owner: Any, params: list, set_to_none: bool, run: Any) -> Any:
    """A grad clear of the script's (cudagraph_script.py's clear_grads;
    `owner`: the module or optimizer, None for `p.grad = None`)."""
    r.guarded("a grad clear", r.script.clear_grads, owner, params, set_to_none, sys._getframe(1))
    r.script.clearing = True
    try:
        return run()
    finally:
        r.script.clearing = False


def _patched_module_zero_grad(original: Any) -> Any:
    """nn.Module.zero_grad: clear_grads named after the module's variable."""

    def on_call(module: Any, frame: Any, set_to_none: bool, run: Any) -> Any:
        r = _active
        if not _clearing(r, frame):
            return patching.NOT_OURS
        return _clear(r, module, list(module.parameters()), set_to_none, run)

    return patching.zero_grad_wrap(original, on_call)


def _patched_parameter_grad(original: Any) -> Any:
    """nn.Parameter.grad: the script's `p.grad = None` is a clear_grads of p."""

    def on_set_none(param: Any, frame: Any, set_it: Any) -> Any:
        recording = _active
        if not _clearing(recording, frame):
            return patching.NOT_OURS
        return _clear(recording, None, [param], True, set_it)

    return patching.parameter_grad_property(original, on_set_none)


def _patched_parameter_data(original: Any) -> Any:
    """nn.Parameter.data: the script's `p.data = t` is a reassign_data of p
    (the same sizes and dtype; another shape is a note)."""

    def on_set(param: Any, frame: Any, new: Any, set_it: Any) -> Any:
        r = _active
        if not _clearing(r, frame):
            return patching.NOT_OURS
        same = isinstance(new, torch.Tensor) and new.shape == param.shape and new.dtype == param.dtype
        result = set_it()
        if same:
            r.guarded("a data rebinding", r.script.reassigned, param, new, frame)
        else:
            r.note("p.data = t with another shape or dtype: not in the trace")
        return result

    return patching.parameter_data_property(original, on_set)


def _patch_targets() -> list[tuple[Any, str, Any]]:
    return [
        (torch.optim.Optimizer, "__init__", _patched_optimizer_init),
        (torch.optim.Optimizer, "zero_grad", _patched_zero_grad),
        (torch.nn.Module, "zero_grad", _patched_module_zero_grad),
        (torch.nn.Parameter, "grad", _patched_parameter_grad),
        (torch.nn.Parameter, "data", _patched_parameter_data),
        (torch_compat.dynamo_module(), torch_compat.MARK_STATIC_ADDRESS, _patched_mark_static_address),
        (torch.compiler, "cudagraph_mark_step_begin", _patched_mark_step_begin),
        (torch.Tensor, "backward", _patched_backward),
        (torch.autograd, "backward", _patched_autograd_backward),
        (torch.autograd, "grad", _patched_grad),
    ]


@contextlib.contextmanager
def record_cudagraphs(path: str, *, max_steps: Optional[int], max_bytes: int, name: str,
                      command: Optional[str]) -> Iterator[CudagraphRecording]:
    """The body of record(cudagraphs=True) (recording.py checks the
    arguments and that no other recording runs)."""
    global _active
    assert _active is None, "record() lets one recording run at a time"
    recording = CudagraphRecording(path, name, max_steps, max_bytes, command)
    if recording.rewritable:
        recording.write()  # a valid trace from the start; a bad path fails here
    error: Optional[BaseException] = None
    _active = recording
    try:
        with torch_compat.fresh_compile_patches(), patched(_patch_targets()):
            try:
                recording.install()
                yield recording
            except BaseException as e:
                error = e
                raise
            finally:
                recording.finish(error)
    finally:
        _active = None
