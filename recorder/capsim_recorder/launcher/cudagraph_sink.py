"""What the cudagraph form of record() (record(cudagraphs=True):
cudagraphs.py) makes of the statements its wraps see (wraps.py, sink.py):
each is reported to the recording's ScriptStatements (cudagraph_script.py),
which turns it into the program API's actions, then run as PyTorch would.
The recording's `guarded` keeps the recorder's failures from the script.

The backward runs as the script runs it (never under compiled autograd, as
cudagraphs.py says why), with one root or several: the grads are followed
from the graphs it ran. Nothing is reported while Dynamo compiles, nor once
the recording stopped.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch

from .optimizer import optimizer_params
from .patching import NOT_OURS, called_by_torch
from .sink import BackwardArgs, Sink


class CudagraphSink(Sink):
    """The cudagraph form's sink (`recording`: its CudagraphRecording)."""

    WRAPS = ("optimizer_init", "optimizer_zero_grad", "module_zero_grad", "parameter_grad",
             "parameter_data", "mark_static_address", "mark_step_begin", "tensor_backward",
             "autograd_backward", "autograd_grad")

    def __init__(self, recording: Any) -> None:
        self.recording = recording

    def _idle(self) -> bool:
        return not self.recording.live() or torch.compiler.is_compiling()

    # -- backwards -----------------------------------------------------------------

    def on_tensor_backward(self, root: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        r = self.recording
        if self._idle() or r.busy or root.grad_fn is None or not r.wants():
            return run()
        return r.backward(run)

    def on_autograd_backward(self, tensors: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        r = self.recording
        if self._idle() or r.busy:
            return run()
        roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        if all(getattr(t, "grad_fn", None) is None for t in roots) or not r.wants():
            return run()
        return r.backward(run)

    def on_autograd_grad(self, frame: Any) -> None:
        if not self._idle() and not self.recording.busy and not called_by_torch(frame):
            self.recording.skip("torch.autograd.grad calls")

    # -- optimizers and grad clears -------------------------------------------------

    def on_optimizer_made(self, opt: Any, frame: Any) -> None:
        r = self.recording
        if not self._idle():
            r.guarded("an optimizer made", r.script.created, opt, frame)

    def on_optimizer_zero_grad(self, opt: Any, frame: Any, set_to_none: bool,
                               run: Callable[[], Any]) -> Any:
        """An optimizer's in the trace (create_optimizer) is zero_grad; the
        script's call of any other's (of a kind capsim does not model,
        stepped eagerly) is a clear_grads of its params, named after the
        optimizer's variable."""
        r = self.recording
        if self._idle():
            return NOT_OURS
        if r.script.follows(opt):
            r.guarded("zero_grad", r.script.zero_grad, opt, set_to_none)
            return run()
        if not self._clearing(frame):
            return NOT_OURS
        return self._clear(opt, optimizer_params(opt), set_to_none, run)

    def on_module_zero_grad(self, module: Any, frame: Any, set_to_none: bool,
                            run: Callable[[], Any]) -> Any:
        if not self._clearing(frame):
            return NOT_OURS
        return self._clear(module, list(module.parameters()), set_to_none, run)

    def on_parameter_grad_set_none(self, param: Any, frame: Any, set_it: Callable[[], Any]) -> Any:
        if not self._clearing(frame):
            return NOT_OURS
        return self._clear(None, [param], True, set_it)

    def on_parameter_data(self, param: Any, frame: Any, new: Any, set_it: Callable[[], Any]) -> Any:
        """A reassign_data of `param` (the same sizes and dtype; another
        shape is a note)."""
        r = self.recording
        if not self._clearing(frame):
            return NOT_OURS
        same = isinstance(new, torch.Tensor) and new.shape == param.shape and new.dtype == param.dtype
        result = set_it()
        if same:
            r.guarded("a data rebinding", r.script.reassigned, param, new, frame)
        else:
            r.note("p.data = t with another shape or dtype: not in the trace")
        return result

    def _clearing(self, frame: Any) -> bool:
        """Whether a grad clear (or a data rebinding) at `frame` is the
        script's to record."""
        r = self.recording
        return not self._idle() and not r.busy and not r.script.clearing and not called_by_torch(frame)

    def _clear(self, owner: Any, params: list, set_to_none: bool, run: Callable[[], Any]) -> Any:
        """A grad clear of the script's (cudagraph_script.py's clear_grads;
        `owner`: the module or optimizer, None for `p.grad = None`)."""
        r = self.recording
        r.guarded("a grad clear", r.script.clear_grads, owner, params, set_to_none, sys._getframe(1))
        r.script.clearing = True
        try:
            return run()
        finally:
            r.script.clearing = False

    # -- marks ---------------------------------------------------------------------------

    def on_mark_static_address(self, t: Any, guard: Any, run: Callable[[], Any]) -> Any:
        r = self.recording
        if not self._idle():
            r.guarded("mark_static_address", r.script.marked, t, guard)
        return run()

    def on_mark_step_begin(self, run: Callable[[], Any]) -> Any:
        r = self.recording
        if not self._idle():
            r.guarded("cudagraph_mark_step_begin", r.script.step_begin)
        return run()
