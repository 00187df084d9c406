"""The one table of the plain PyTorch API that record() wraps, for both of
its forms: each entry names where the wrap goes (an owner and an attribute,
looked up when it is installed) and how to make it from the original. A
wrap forwards what it sees to the active recording's sink (sink.py) and
otherwise runs the statement as PyTorch would; what a statement becomes in
a trace is the sink's to decide, so the two forms share every wrap.

A recording installs the entries its sink names (`Sink.WRAPS`) for the
length of its block (`installed`), and only one recording runs at a time:
with none active, every wrap passes straight through. PyTorch looks each
of these up at call time, so a wrap sees every call made while it is
installed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import torch
import torch.autograd.function as autograd_function

from .. import torch_compat
from . import patching
from .sink import BackwardArgs, Sink

_active: Optional[Sink] = None


def active() -> Optional[Sink]:
    """The sink of the recording running now, or None."""
    return _active


@contextlib.contextmanager
def installed(sink: Sink) -> Iterator[None]:
    """`sink` active and the wraps it names (`sink.WRAPS`) installed for
    the block; the originals restored, then no sink active, on exit."""
    global _active
    assert _active is None, "record() lets one recording run at a time"
    chosen = [entry for entry in TABLE if entry.name in sink.WRAPS]
    unknown = set(sink.WRAPS) - {entry.name for entry in chosen}
    assert not unknown, f"no such wraps: {sorted(unknown)}"
    _active = sink
    try:
        with patching.patched([(*entry.target(), entry.factory) for entry in chosen]):
            yield
    finally:
        _active = None


def reported_calls(compiled: Any) -> Any:
    """A torch.compile'd function whose every call the active sink sees
    (on_compiled_call), for a sink's on_compile to return."""

    @functools.wraps(compiled)
    def call(*args, **kw):
        sink = _active
        if sink is None:
            return compiled(*args, **kw)
        return sink.on_compiled_call(compiled, args, kw)

    return call


def _wrapped(wrap: Any, original: Any) -> Any:
    wrap.__wrapped__ = original
    return wrap


# -- the wraps -----------------------------------------------------------------------


def _tensor_backward(original: Any) -> Any:
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        run = functools.partial(original, self, gradient, retain_graph, create_graph, inputs)
        sink = _active
        if sink is None:
            return run()
        return sink.on_tensor_backward(self, run, BackwardArgs(gradient, retain_graph, create_graph,
                                                               inputs))

    return _wrapped(backward, original)


def _autograd_backward(original: Any) -> Any:
    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                 grad_variables=None, inputs=None):
        run = functools.partial(original, tensors, grad_tensors, retain_graph, create_graph,
                                grad_variables, inputs)
        sink = _active
        if sink is None:
            return run()
        args = BackwardArgs(grad_tensors, retain_graph, create_graph, inputs, grad_variables)
        return sink.on_autograd_backward(tensors, run, args)

    return _wrapped(backward, original)


def _autograd_grad(original: Any) -> Any:
    def grad(*args, **kwargs):
        sink = _active
        if sink is not None:
            sink.on_autograd_grad(sys._getframe(1))
        return original(*args, **kwargs)

    return _wrapped(grad, original)


def _optimizer_init(original: Any) -> Any:
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        sink = _active
        if sink is not None:
            sink.on_optimizer_made(self, sys._getframe())

    return _wrapped(__init__, original)


def _optimizer_zero_grad(original: Any) -> Any:
    def on_call(opt: Any, frame: Any, set_to_none: bool, run: Callable[[], Any]) -> Any:
        sink = _active
        if sink is None:
            return patching.NOT_OURS
        return sink.on_optimizer_zero_grad(opt, frame, set_to_none, run)

    return patching.zero_grad_wrap(original, on_call)


def _module_zero_grad(original: Any) -> Any:
    def on_call(module: Any, frame: Any, set_to_none: bool, run: Callable[[], Any]) -> Any:
        sink = _active
        if sink is None:
            return patching.NOT_OURS
        return sink.on_module_zero_grad(module, frame, set_to_none, run)

    return patching.zero_grad_wrap(original, on_call)


def _parameter_grad(original: Any) -> Any:
    def on_set_none(param: Any, frame: Any, set_it: Callable[[], Any]) -> Any:
        sink = _active
        if sink is None:
            return patching.NOT_OURS
        return sink.on_parameter_grad_set_none(param, frame, set_it)

    return patching.parameter_grad_property(original, on_set_none)


def _parameter_data(original: Any) -> Any:
    def on_set(param: Any, frame: Any, new: Any, set_it: Callable[[], Any]) -> Any:
        sink = _active
        if sink is None:
            return patching.NOT_OURS
        return sink.on_parameter_data(param, frame, new, set_it)

    return patching.parameter_data_property(original, on_set)


def _compile(original: Any) -> Any:
    def compile(model=None, **kwargs):
        if model is None:
            return lambda fn: compile(fn, **kwargs)
        compiled = original(model, **kwargs)
        sink = _active
        return compiled if sink is None else sink.on_compile(model, compiled)

    return _wrapped(compile, original)


def _compiled_autograd_enable(original: Any) -> Any:
    """Compiled autograd entered by the script: the sink's compiler
    function sees each graph before the script's own does."""
    def _enable(compiler_fn, *args, **kwargs):
        sink = _active
        if sink is not None:
            compiler_fn = sink.on_compiled_autograd_enable(compiler_fn)
        return original(compiler_fn, *args, **kwargs)

    return _wrapped(_enable, original)


def _mark_static_address(original: Any) -> Any:
    """With the release's own default for `guard` (True up to 2.9, False
    from 2.11)."""
    default = inspect.signature(original).parameters["guard"].default

    def mark_static_address(t, guard=default):
        run = functools.partial(original, t, guard=guard)
        sink = _active
        return run() if sink is None else sink.on_mark_static_address(t, guard, run)

    return _wrapped(mark_static_address, original)


def _mark_step_begin(original: Any) -> Any:
    def cudagraph_mark_step_begin():
        sink = _active
        return original() if sink is None else sink.on_mark_step_begin(original)

    return _wrapped(cudagraph_mark_step_begin, original)


def _hook_registration(kind: str) -> Callable[[Any], Any]:
    """The wrap of a hook registration method: `kind` told to the sink with
    the handle the registration returned."""
    def factory(original: Any) -> Any:
        def register(self, *args, **kwargs):
            handle = original(self, *args, **kwargs)
            sink = _active
            if sink is not None:
                sink.on_hook_registered(kind, self, handle)
            return handle

        return _wrapped(register, original)

    return factory


# -- the table -----------------------------------------------------------------------


@dataclass(frozen=True)
class Wrap:
    """One entry: `target()` -> (owner, attribute); `factory(original)` -> the wrap."""

    name: str
    target: Callable[[], tuple[Any, str]]
    factory: Callable[[Any], Any]


# What on_hook_registered's `kind` names: Tensor.register_hook,
# Tensor.register_post_accumulate_grad_hook, and a Python Function node's
# register_hook and register_prehook.
HOOK_KINDS = ("tensor_hook", "post_accumulate_grad_hook", "post_hook", "pre_hook")

# A Python class: the nodes of Python Functions (a module's full backward hooks hang there).
_NODE = autograd_function.BackwardCFunction

TABLE = (
    Wrap("optimizer_init", lambda: (torch.optim.Optimizer, "__init__"), _optimizer_init),
    Wrap("optimizer_zero_grad", lambda: (torch.optim.Optimizer, "zero_grad"), _optimizer_zero_grad),
    Wrap("module_zero_grad", lambda: (torch.nn.Module, "zero_grad"), _module_zero_grad),
    Wrap("parameter_grad", lambda: (torch.nn.Parameter, "grad"), _parameter_grad),
    Wrap("parameter_data", lambda: (torch.nn.Parameter, "data"), _parameter_data),
    Wrap("compile", lambda: (torch, "compile"), _compile),
    Wrap("compiled_autograd_enable",
         lambda: (torch_compat.compiled_autograd_module(), "_enable"), _compiled_autograd_enable),
    Wrap("mark_static_address",
         lambda: (torch_compat.dynamo_module(), torch_compat.MARK_STATIC_ADDRESS),
         _mark_static_address),
    Wrap("mark_step_begin", lambda: (torch.compiler, "cudagraph_mark_step_begin"), _mark_step_begin),
    Wrap("tensor_backward", lambda: (torch.Tensor, "backward"), _tensor_backward),
    Wrap("autograd_backward", lambda: (torch.autograd, "backward"), _autograd_backward),
    Wrap("autograd_grad", lambda: (torch.autograd, "grad"), _autograd_grad),
    Wrap("tensor_hook", lambda: (torch.Tensor, "register_hook"), _hook_registration("tensor_hook")),
    Wrap("post_accumulate_grad_hook",
         lambda: (torch.Tensor, "register_post_accumulate_grad_hook"),
         _hook_registration("post_accumulate_grad_hook")),
    Wrap("post_hook", lambda: (_NODE, "register_hook"), _hook_registration("post_hook")),
    Wrap("pre_hook", lambda: (_NODE, "register_prehook"), _hook_registration("pre_hook")),
)
