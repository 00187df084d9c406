"""What the compiled-autograd form of record() (recording.py) makes of the
statements its wraps see (wraps.py, sink.py), written through the form's
RecordingSession (session.py), which keeps the recorder's failures from
the script:

  Tensor.backward(), torch.autograd.backward(t) (one root)
      recorded: walked, run under compiled autograd (session.record_backward);
      any backward then lets the optimizer watch follow the grads it left
  torch.autograd.backward of several roots, torch.autograd.grad
      run unrecorded, counted
  hook registrations                 noted for the graph walk (annotations.py)
  torch.compile of a function        each call seen by the optimizer watch
                                     (optimizer.py); of an nn.Module, its
                                     forward run with the operand watch aside
  SGD/Adam/AdamW made, zero_grad and mark_static_address of a followed one
                                     the optimizer watch's
  model.zero_grad(), p.grad = None, zero_grad of an unfollowed optimizer
                                     clear_grads (params.py)

Backwards and compiled calls run with the operand watch off the mode stack,
where compiled autograd and Dynamo would trace it (operands.py).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Optional

import torch

from .. import operands
from . import wraps
from .optimizer import optimizer_params
from .patching import NOT_OURS, called_by_torch, one_root
from .script_names import variable_name
from .sink import BackwardArgs, Sink


def _note_tensor_hook(notes: Any, t: Any, handle: Any) -> None:
    notes.note_tensor_hook(t, handle)


def _note_post_accumulate_grad_hook(notes: Any, t: Any, handle: Any) -> None:
    notes.note_post_accumulate_grad_hook(t, handle)


def _note_post_hook(notes: Any, node: Any, handle: Any) -> None:
    notes.note_node_hook(node, "post_hook", handle)


def _note_pre_hook(notes: Any, node: Any, handle: Any) -> None:
    notes.note_node_hook(node, "pre_hook", handle)


# How each of wraps.HOOK_KINDS is noted.
NOTE_HOOK = {
    "tensor_hook": _note_tensor_hook,
    "post_accumulate_grad_hook": _note_post_accumulate_grad_hook,
    "post_hook": _note_post_hook,
    "pre_hook": _note_pre_hook,
}


class AutogradSink(Sink):
    """The compiled-autograd form's sink (`session`: its RecordingSession)."""

    WRAPS = ("optimizer_init", "optimizer_zero_grad", "module_zero_grad", "parameter_grad",
             "compile", "mark_static_address", "tensor_backward", "autograd_backward",
             "autograd_grad", "tensor_hook", "post_accumulate_grad_hook", "post_hook", "pre_hook")

    def __init__(self, session: Any) -> None:
        self.session = session

    # -- backwards -----------------------------------------------------------------

    def on_tensor_backward(self, root: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        s = self.session
        call = functools.partial(operands.run_aside, run)
        if s.busy or root.grad_fn is None or not s.wants():
            result = call()
        else:
            result = s.record_backward(root, call, args.given(args.gradient))
        s.after_backward()
        return result

    def on_autograd_backward(self, tensors: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        s = self.session
        call = functools.partial(operands.run_aside, run)
        if s.busy or args.grad_variables is not None:
            return call()
        one = one_root(tensors, args.gradient)
        if one is None:
            s.skip("backwards with several roots")
            result = call()
        elif getattr(one[0], "grad_fn", None) is None or not s.wants():
            result = call()
        else:
            result = s.record_backward(one[0], call, args.given(one[1]))
        s.after_backward()
        return result

    def on_autograd_grad(self, frame: Any) -> None:
        if not self.session.busy and not called_by_torch(frame):
            self.session.skip("torch.autograd.grad calls")

    def on_hook_registered(self, kind: str, owner: Any, handle: Any) -> None:
        s = self.session
        if s.noting():
            s.guarded("noting a hook", NOTE_HOOK[kind], s.notes, owner, handle)

    # -- optimizers and grad clears -------------------------------------------------

    def on_optimizer_made(self, opt: Any, frame: Any) -> None:
        self.session.watched("an optimizer made", self.session.optimizers.created, opt)

    def on_optimizer_zero_grad(self, opt: Any, frame: Any, set_to_none: bool,
                               run: Callable[[], Any]) -> Any:
        """A followed optimizer's (a compiled one's, optimizer.py) is
        zero_grad; the script's call of any other's (stepped eagerly, or of
        a kind capsim does not model) is a clear_grads of its params, named
        after the optimizer's variable."""
        s = self.session
        if torch.compiler.is_compiling():
            return NOT_OURS
        if s.optimizers.follows(opt):
            after = s.watched("zero_grad", s.optimizers.zero_grad, opt, set_to_none)
            result = run()
            if after is not None:
                s.watched("zero_grad", after)
            return result
        if not self._clearing(frame):
            return NOT_OURS
        return self._named_clear(opt, optimizer_params(opt), set_to_none, run)

    def on_module_zero_grad(self, module: Any, frame: Any, set_to_none: bool,
                            run: Callable[[], Any]) -> Any:
        if not self._clearing(frame):
            return NOT_OURS
        return self._named_clear(module, list(module.parameters()), set_to_none, run)

    def on_parameter_grad_set_none(self, param: Any, frame: Any, set_it: Callable[[], Any]) -> Any:
        if not self._clearing(frame):
            return NOT_OURS
        return self._clear(None, [param], True, set_it)

    def on_mark_static_address(self, t: Any, guard: Any, run: Callable[[], Any]) -> Any:
        result = run()
        self.session.watched("mark_static_address", self.session.optimizers.marked, t, guard)
        return result

    def _clearing(self, frame: Any) -> bool:
        """Whether a grad clear at `frame` is the script's to record."""
        s = self.session
        return (not s.clearing and not s.busy and not torch.compiler.is_compiling()
                and not called_by_torch(frame))

    def _clear(self, name: Optional[str], params: list, set_to_none: bool,
               run: Callable[[], Any]) -> Any:
        """A grad clear of the script's (params.py's clear_grads)."""
        s = self.session
        after = s.watched("a grad clear", s.optimizers.clear_grads, name, params, set_to_none,
                          sys._getframe(1))
        s.clearing = True
        try:
            result = run()
        finally:
            s.clearing = False
        if after is not None:
            s.watched("a grad clear", after)
        return result

    def _named_clear(self, owner: Any, params: list, set_to_none: bool,
                     run: Callable[[], Any]) -> Any:
        """_clear of `owner`'s params (an nn.Module's or an optimizer's),
        named after the script's variable that holds `owner`."""
        name = self.session.guarded("naming a grad clear", variable_name, owner, sys._getframe(1))
        return self._clear(name or type(owner).__name__, params, set_to_none, run)

    # -- compiled functions ------------------------------------------------------------

    def on_compile(self, model: Any, compiled: Any) -> Any:
        """The same compiled function, each call of which the optimizer
        watch sees (an nn.Module is left as it is). Either runs with the
        operand watch off the mode stack (operands.py)."""
        if isinstance(model, torch.nn.Module):
            operands.forward_aside(compiled)
            return compiled
        if not callable(compiled):
            return compiled
        return wraps.reported_calls(compiled)

    def on_compiled_call(self, compiled: Any, args: Any, kwargs: Any) -> Any:
        return operands.run_aside(lambda: self._run_watched(compiled, args, kwargs))

    def _run_watched(self, compiled: Any, args: Any, kw: Any) -> Any:
        """One call of a torch.compile'd function, the optimizer watch
        around it (optimizer.py), its failures kept from the call."""
        s = self.session
        watch = s.optimizers
        state = s.watched("a compiled call", watch.begin_call)
        if state is None:
            return compiled(*args, **kw)
        ran = False
        try:
            result = compiled(*args, **kw)
            ran = True
        finally:
            s.watched("a compiled call", watch.end_call, state, ran)
        return result
