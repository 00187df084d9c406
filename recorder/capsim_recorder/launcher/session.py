"""What record()'s CPU form (recording.py) holds while its block runs: the
writer, the recorder, the optimizer watch, the limits, and the failures
that must not reach the script. The session is the sink its wraps report
to (wraps.py, sink.py), and makes of the statements they see:

  Tensor.backward(), torch.autograd.backward(t) (one root)
      recorded: walked, run under compiled autograd (record_backward);
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

The recorder never harms the script. An exception inside the recorder's own
code (a wrap's bookkeeping, a graph it cannot walk, a line over the format's
limit) is caught here: it becomes a note (the trace header's `x_notes`,
written when the block ends, and one line on stderr), and what it concerned
is left out of the trace whole, so that the trace stays what PyTorch did:

  a backward whose graph cannot be written (a dtype or a node the format has
  no name for, a line over 1 MiB)
      runs as without the recorder; neither its autograd_graph nor its
      compiled_backward is written (compiled autograd never sees it either)
  a ca_graph event over 1 MiB
      written without fx_nodes, then without targets and uses
  compiled autograd (or the recorder) failing inside a recorded backward
      the backward's lines are dropped, the recording stops there (compiled
      autograd's cache may hold what the trace does not), and the backward
      runs again as without the recorder
  the optimizer watch failing
      it stops following optimizers (the lines of the failed step dropped)
  anything else
      the recording stops there

The script's own exceptions pass through unchanged.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Optional

from .. import operands
from ..graph_walk import walk
from . import wraps
from .failures import MAX_STDERR_NOTES, raised_by_script, say, why
from .optimizer import OptimizerWatch, optimizer_params
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


def _compiling() -> bool:
    """Whether Dynamo is tracing the statement: one of its own, not the
    script's (torch imported where it is used, as patching.py does)."""
    import torch

    return torch.compiler.is_compiling()


class RecordingSession(Sink):
    """What record() holds while its block runs (one at a time), and the
    sink of its wraps."""

    WRAPS = ("optimizer_init", "optimizer_zero_grad", "module_zero_grad", "parameter_grad",
             "compile", "compiled_autograd_enable", "mark_static_address", "tensor_backward", "autograd_backward",
             "autograd_grad", "tensor_hook", "post_accumulate_grad_hook", "post_hook", "pre_hook")

    def __init__(self, writer: Any, recorder: Any, max_steps: Optional[int], max_bytes: int,
                 dynamic: bool) -> None:
        self.writer = writer
        self.recorder = recorder
        self.optimizers_ok = True  # False once the optimizer watch failed
        self.optimizers = OptimizerWatch(writer, lambda: self.live() and self.optimizers_ok)
        self.max_steps = max_steps
        self.max_bytes = max_bytes
        self.dynamic = dynamic
        self.stopped: Optional[str] = None  # why recording stopped early
        self.busy = False  # inside a recorded backward: its own loss.backward() passes through
        self.clearing = False  # inside a grad clear the trace has: PyTorch's own part passes
        self.unrecorded: dict[str, int] = {}  # what ran unrecorded, by kind
        self.x_notes: list[str] = []  # for the header's x_notes, at the end
        self.stderr_notes = 0

    @property
    def notes(self) -> Any:
        """The Annotations the graph walk reads (hooks on built-in nodes)."""
        return self.recorder.notes

    def noting(self) -> bool:
        """Whether a hook registered now should be noted: not one the
        recorder's own backward or an Annotations helper registers."""
        return not self.busy and not self.recorder.notes.registering

    def skip(self, kind: str) -> None:
        self.unrecorded[kind] = self.unrecorded.get(kind, 0) + 1

    def live(self) -> bool:
        """Whether the trace still takes lines (the limits are not reached)."""
        return self.stopped is None and self.writer.bytes_written < self.max_bytes

    # -- failures --------------------------------------------------------------------

    def note(self, text: str) -> None:
        """A note for x_notes, and one line on stderr (the first few)."""
        if text in self.x_notes:
            return
        self.x_notes.append(text)
        self.stderr_notes = say(text, self.stderr_notes)

    def stop(self, why_text: str) -> None:
        """The recording ends here; the trace stays valid up to this point."""
        if self.stopped is None:
            self.stopped = why_text
            self.note(f"recording stopped: {why_text}")

    def guarded(self, what: str, fn: Callable[..., Any], *args: Any,
                on_failure: Optional[Callable[[], None]] = None) -> Any:
        """fn(*args) in the recorder's name: an exception becomes a note and
        `on_failure()` (default: the recording stops), and None is returned."""
        try:
            with self.writer.atomic():
                return fn(*args)
        except Exception as e:  # the recorder's own failure: never the script's
            if on_failure is None:
                self.stop(f"{what} failed ({why(e)})")
            else:
                self.note(f"{what} failed ({why(e)})")
                on_failure()
            return None

    def optimizers_failed(self) -> None:
        if self.optimizers_ok:
            self.optimizers_ok = False
            self.note("the optimizer watch stops: no more optimizer steps, grads or zero_grads"
                      " in the trace")

    def watched(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """guarded() for the optimizer watch: a failure ends the watch only."""
        return self.guarded(what, fn, *args, on_failure=self.optimizers_failed)

    def script_failed(self, e: BaseException) -> None:
        """The script raised: what was recorded before is in the trace
        already (written line by line); the exception goes on to the script's
        caller unchanged (the command line says so on stderr)."""
        self.x_notes.append(f"the script raised {why(e)}")

    # -- limits ------------------------------------------------------------------------

    @property
    def steps(self) -> int:
        return self.recorder.backwards

    def wants(self) -> bool:
        if self.stopped is not None:
            return False
        if self.max_steps is not None and self.steps >= self.max_steps:
            self.stopped = f"--max-steps {self.max_steps} reached"
            return False
        if self.writer.bytes_written >= self.max_bytes:
            self.stopped = f"the size cap of {self.max_bytes} bytes reached"
            print(f"capsim_recorder: {self.stopped}; the trace holds the first {self.steps}"
                  f" backwards ({self.writer.path})", file=sys.stderr)
            return False
        return True

    # -- the sink: backwards and hooks ---------------------------------------------------

    def after_backward(self) -> None:
        """Any backward of the script: the grads it left, for the followed
        optimizers."""
        if not self.busy and self.live():
            self.watched("following the grads after a backward", self.optimizers.synced_all)

    def on_tensor_backward(self, root: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        call = functools.partial(operands.run_aside, run)
        if self.busy or root.grad_fn is None or not self.wants():
            result = call()
        else:
            result = record_backward(self, root, call, args.given(args.gradient))
        self.after_backward()
        return result

    def on_autograd_backward(self, tensors: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        call = functools.partial(operands.run_aside, run)
        if self.busy or args.grad_variables is not None:
            return call()
        one = one_root(tensors, args.gradient)
        if one is None:
            self.skip("backwards with several roots")
            result = call()
        elif getattr(one[0], "grad_fn", None) is None or not self.wants():
            result = call()
        else:
            result = record_backward(self, one[0], call, args.given(one[1]))
        self.after_backward()
        return result

    def on_autograd_grad(self, frame: Any) -> None:
        if not self.busy and not called_by_torch(frame):
            self.skip("torch.autograd.grad calls")

    def on_hook_registered(self, kind: str, owner: Any, handle: Any) -> None:
        if self.noting():
            self.guarded("noting a hook", NOTE_HOOK[kind], self.notes, owner, handle)

    # -- the sink: optimizers and grad clears ----------------------------------------------

    def on_optimizer_made(self, opt: Any, frame: Any) -> None:
        self.watched("an optimizer made", self.optimizers.created, opt)

    def on_optimizer_zero_grad(self, opt: Any, frame: Any, set_to_none: bool,
                               run: Callable[[], Any]) -> Any:
        """A followed optimizer's (a compiled one's, optimizer.py) is
        zero_grad; the script's call of any other's (stepped eagerly, or of
        a kind capsim does not model) is a clear_grads of its params, named
        after the optimizer's variable."""
        if _compiling():
            return NOT_OURS
        if self.optimizers.follows(opt):
            after = self.watched("zero_grad", self.optimizers.zero_grad, opt, set_to_none)
            result = run()
            if after is not None:
                self.watched("zero_grad", after)
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
        self.watched("mark_static_address", self.optimizers.marked, t, guard)
        return result

    def _clearing(self, frame: Any) -> bool:
        """Whether a grad clear at `frame` is the script's to record."""
        return (not self.clearing and not self.busy and not _compiling()
                and not called_by_torch(frame))

    def _clear(self, name: Optional[str], params: list, set_to_none: bool,
               run: Callable[[], Any]) -> Any:
        """A grad clear of the script's (params.py's clear_grads)."""
        after = self.watched("a grad clear", self.optimizers.clear_grads, name, params,
                             set_to_none, sys._getframe(1))
        self.clearing = True
        try:
            result = run()
        finally:
            self.clearing = False
        if after is not None:
            self.watched("a grad clear", after)
        return result

    def _named_clear(self, owner: Any, params: list, set_to_none: bool,
                     run: Callable[[], Any]) -> Any:
        """_clear of `owner`'s params (an nn.Module's or an optimizer's),
        named after the script's variable that holds `owner`."""
        name = self.guarded("naming a grad clear", variable_name, owner, sys._getframe(1))
        return self._clear(name or type(owner).__name__, params, set_to_none, run)

    # -- the sink: compiled functions ----------------------------------------------------

    def on_compile(self, model: Any, compiled: Any) -> Any:
        """The same compiled function, each call of which the optimizer
        watch sees (an nn.Module is left as it is). Either runs with the
        operand watch off the mode stack (operands.py)."""
        import torch

        if isinstance(model, torch.nn.Module):
            operands.forward_aside(compiled)
            return compiled
        if not callable(compiled):
            return compiled
        return wraps.reported_calls(compiled)

    def on_compiled_call(self, compiled: Any, args: Any, kwargs: Any) -> Any:
        return operands.run_aside(lambda: self._run_watched(compiled, args, kwargs))

    def on_compiled_autograd_enable(self, compiler_fn: Any) -> Any:
        return self.recorder.capture.observing(compiler_fn)

    def _run_watched(self, compiled: Any, args: Any, kw: Any) -> Any:
        """One call of a torch.compile'd function, the optimizer watch
        around it (optimizer.py), its failures kept from the call."""
        state = self.watched("a compiled call", self.optimizers.begin_call)
        if state is None:
            return compiled(*args, **kw)
        ran = False
        try:
            result = compiled(*args, **kw)
            ran = True
        finally:
            self.watched("a compiled call", self.optimizers.end_call, state, ran)
        return result


def record_backward(s: RecordingSession, root: Any, call: Callable[[], Any], kwargs: dict) -> Any:
    """A one-root backward of the script, recorded in session `s` (see the
    module's docstring for what a failure does); `call()` runs it as
    without the recorder."""
    rec = s.recorder
    k = rec.backwards
    s.busy = True
    state = {"ran": False}
    rec.capture.backward_done = False
    try:
        with s.writer.atomic():
            index = rec.write_graph(walk(root, rec.notes), s.dynamic)
            state["ran"] = True
            result = rec.capture.backward(root, dynamic=s.dynamic, **kwargs)
            state["captured"] = True
            rec.write_capture(index, result, on_note=s.note)
        return None
    except Exception as e:
        state["done"] = rec.capture.backward_done
        retry = _backward_failed(s, k, e, state)
        if retry is None:
            raise
    except BaseException as e:  # KeyboardInterrupt, SystemExit: the script's
        s.stop(f"backward {k} was interrupted ({why(e)})")
        raise
    finally:
        s.busy = False
    return call() if retry else None


def _backward_failed(s: RecordingSession, k: int, e: Exception, state: dict) -> Optional[bool]:
    """Whether the backward runs again unrecorded (False: it ran; None:
    the exception is the script's, and goes on to it)."""
    if not state["ran"]:
        s.note(f"backward {k}: not recorded ({why(e)}): its autograd_graph and"
               " compiled_backward are left out, and it ran as without the recorder")
        return True
    if state.get("captured") or state["done"]:
        s.stop(f"backward {k}: its ca_graph event could not be written ({why(e)})")
        return False
    if raised_by_script(e):
        s.stop(f"backward {k} raised in the script's own code ({why(e)})")
        return None
    s.stop(f"backward {k}: compiled autograd failed ({why(e)}); it ran again as without"
           " the recorder")
    return True


def end_lines(s: RecordingSession) -> list[str]:
    """What session `s` says on stderr when its block ends: what ran
    unrecorded, and how many notes stderr did not show."""
    lines = []
    counts = {**s.unrecorded, **s.optimizers.unrecorded()}
    if counts:
        parts = [f"{n} {kind}" for kind, n in sorted(counts.items())]
        lines.append(f"capsim_recorder: ran unrecorded (capsim models one-root backward() and "
                     f"SGD/Adam/AdamW steps only): {', '.join(parts)} ({s.writer.path})")
    left = s.stderr_notes - MAX_STDERR_NOTES
    if left > 0:
        lines.append(f"capsim_recorder: {left} more notes in the trace's x_notes ({s.writer.path})")
    return lines
