"""The cudagraph trees of any script: record(path, cudagraphs=True) and
`python -m capsim_recorder run --cudagraphs`. The recording runs on the one
cudagraph driver (cudagraph/driver.py) that the built-in programs run on:
the same session, compile hooks and tree observer, the same failures in
x_notes. The script's own plain PyTorch statements drive the program API
(cudagraph/program_api.py) through the wraps (wraps.py, whose sink the
recording is) and cudagraph_script.py, where the built-in programs call it
by hand; nothing is reported while Dynamo compiles, nor once the recording
stopped:

  Tensor.backward(), torch.autograd.backward(t) (one root)
      the compiled backward's calls, then accumulate_grad per parameter
  an exception out of the script            an error event (PyTorch's text) when
                                            PyTorch's cudagraph code raised it, else
                                            a note; it goes on to the script unchanged
  (and cudagraph_script.py's statements)

The recorder's own failures never reach the script: a wrap that fails drops
what it buffered, says so in x_notes (and on stderr), and ends the
recording; a line over the format's limit is left out with a note
(cudagraph/output.py).

Calls of compiled graphs need no wrap: the compile hooks and the tree
observer see them (call, or eager_call where Inductor handed the graph to no
tree: on a CPU, every one). The backward runs as the script runs it, never
under compiled autograd: compiled autograd would change the graphs the trees
see. That is why this is a form of its own, not an addition to the CPU form.

Writing. A cudagraph trace's function lines precede every action, and
Inductor compiles a graph at its first call, so the trace is buffered and the
whole file rewritten (a temporary beside it, then a rename) at checkpoints:
after a recorded backward once the actions have doubled since the last one,
and when the block ends. A killed run leaves the last checkpoint, a valid
trace of its first steps; the rewrites cost at most twice the final size.

A parameter's `p.data = t` (same sizes and dtype) is a reassign_data action:
on a GPU the static input moved, and the tree records again.

A backward with several roots (`torch.autograd.backward([l1, l2])`) is
followed as one with one root: the grads come from the graphs it ran.

Not written, and counted on stderr at the end: torch.autograd.grad,
optimizers of other kinds, `p.data = t` of another shape or dtype, and eager
optimizer steps.

A compiled optimizer step (SGD, Adam, AdamW) is found at its graph's first
call: the graph takes one followed optimizer's params, grads and state, by
identity (optimizer.py's rule), and reads a grad. From then on each call of
that graph is an optimizer_step action, with the tree's events, as in the
built-in programs (cudagraph/program_api.py's rec.optimizer_step).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional

import torch

from .. import torch_compat
from ..cudagraph.driver import CudagraphDriver, torch_driver
from ..cudagraph.program_api import CudagraphRecorder
from ..cudagraph.runner import write_driver
from .cudagraph_script import ScriptStatements
from .failures import say, why
from .optimizer import optimizer_params
from .patching import NOT_OURS, called_by_torch
from .reads import ReadWatch, pop_or_mute, supported
from .sink import BackwardArgs, Sink

# Bytes per buffered action before the first checkpoint measured them.
FIRST_BYTES_PER_ACTION = 256
# What this form needs of PyTorch's internals (torch_compat.self_check).
NEEDS = (torch_compat.CUDAGRAPHS, torch_compat.LAUNCHER, torch_compat.READS)


class TraceFile:
    """The trace at `path`, written whole from the driver's session (the
    module's docstring says why): at checkpoints, and last when the block
    ends."""

    def __init__(self, path: str, name: str, command: Optional[str], driver: CudagraphDriver,
                 device: Any) -> None:
        self.path = path
        self.name = name
        self.command = command
        self.driver = driver
        self.device = device
        self.untranslated: list[str] = []  # the last write's x_untranslated
        self.checkpoint_actions = 0
        self.bytes_per_action = float(FIRST_BYTES_PER_ACTION)
        # A FIFO, a device or `-` takes one trace: the final one, no checkpoints.
        self.rewritable = path != "-" and (not os.path.exists(path) or os.path.isfile(path))

    def write(self) -> int:
        """The whole trace, as it stands, at `path` (temporary, then rename),
        with the driver's failures in x_notes. Returns its size in bytes."""
        from ..recorder import torch_config

        config = torch_config()
        if self.device.type != "cuda":
            # No CUDA device: Inductor handed no graph to a tree, so capsim
            # runs each compiled graph without one, as the CPU form says.
            config["cudagraphs"] = False
        counts = write_driver(self.driver, self.path, self.name, self.device, command=self.command,
                              config=config)
        self.untranslated = list(counts.get("untranslated", []))
        size = int(counts.get("bytes", 0))
        items = self.driver.session.items
        self.bytes_per_action = max(1.0, size / max(1, len(items)))
        self.checkpoint_actions = len(items)
        return size

    def due(self) -> bool:
        """Whether a checkpoint is due: the buffered actions doubled since
        the last write, so that the rewrites cost at most twice the final
        size."""
        actions = len(self.driver.session.items)
        return self.rewritable and actions >= 2 * max(1, self.checkpoint_actions)


class CudagraphRecording(Sink):
    """What record(cudagraphs=True) holds while its block runs, and the sink
    of its wraps. `driver`: a CudagraphDriver not installed yet (default:
    PyTorch's, with the release's self-check in x_notes)."""

    WRAPS = ("optimizer_init", "optimizer_zero_grad", "module_zero_grad", "parameter_grad",
             "parameter_data", "mark_static_address", "mark_step_begin", "tensor_backward",
             "autograd_backward", "autograd_grad")

    def __init__(self, path: str, name: str, max_steps: Optional[int], max_bytes: int,
                 command: Optional[str], driver: Optional[CudagraphDriver] = None,
                 device: Optional[Any] = None) -> None:
        self.path = path
        self.max_steps = max_steps
        self.max_bytes = max_bytes
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if driver is None:
            driver = torch_driver(name, self.device.type)
            driver.self_check(NEEDS)
        self.driver = driver
        self.trace = TraceFile(path, name, command, driver, self.device)
        self.session = driver.session
        self.session.no_cudagraphs = self.device.type != "cuda"
        self.rec = CudagraphRecorder(self.session, driver.observer, self.device)
        self.script = ScriptStatements(self)
        self.session.on_unnamed = self.script.name_parameter
        self.session.on_graph_call = self.script.graph_call
        self.steps = 0  # recorded backwards
        self.busy = False  # inside a recorded backward
        self.read_watch: Optional[Any] = None  # reads.ReadWatch, while installed
        self.stderr_notes = 0  # notes said on stderr (failures.say)
        self.stopped: Optional[str] = None
        self.unrecorded: dict[str, int] = {}

    # -- lifetime ------------------------------------------------------------

    def install(self) -> None:
        self.driver.install()
        if supported():
            self.read_watch = ReadWatch(
                lambda func, tensors: self.guarded("a read", self.script.reads, func, tensors))
            self.read_watch.__enter__()
        else:
            self.session.notes.append("reads not recorded: this release's TorchDispatchMode has no "
                                      "ignore_compile_internals (2.11 on)")

    def uninstall(self) -> None:
        if self.read_watch is not None:
            pop_or_mute(self.read_watch)
            self.read_watch = None
        self.driver.uninstall()

    def live(self) -> bool:
        return self.stopped is None

    def _safe_write(self) -> None:
        """The trace written, its failure a note: the last checkpoint stays
        at `path`."""
        try:
            self.trace.write()
        except Exception as e:  # the recorder's own failure: never the script's
            self.note(f"the trace could not be written ({why(e)}); {self.path} keeps the last"
                      " checkpoint")

    def _close(self) -> None:
        """The last write; from here on the script runs without the recorder."""
        self._safe_write()
        self.session.closed = True
        self.uninstall()

    def stop(self, why: str) -> None:
        """A limit (or a failure of the recorder) ended the recording before
        the block did."""
        if self.stopped is None:
            self._close()
            self.stopped = why

    def finish(self, error: Optional[BaseException]) -> None:
        if self.live():
            if error is not None:
                self.script_failed(error)
            self._close()
        for line in end_lines(self):
            print(line, file=sys.stderr)

    # -- failures --------------------------------------------------------------

    def note(self, text: str) -> None:
        """A note for x_notes, and one line on stderr (the first few)."""
        if text not in self.session.notes:
            self.session.notes.append(text)
            self.stderr_notes = say(text, self.stderr_notes)

    def guarded(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) in the recorder's name: an exception drops what it
        buffered, becomes a note, and ends the recording (the names the
        trace knows may no longer be what the script holds); None then."""
        mark = self.session.buffer.mark()
        try:
            return fn(*args)
        except Exception as e:  # the recorder's own failure: never the script's
            self.session.buffer.rollback(mark)
            self.note(f"recording stopped: {what} failed ({why(e)})")
            self.stop(f"{what} failed")
            return None

    def script_failed(self, e: BaseException) -> None:
        """The script raised: an error event or a note (cudagraph_script.py's
        raised), once; it goes on to the script unchanged."""
        if self.live() and not getattr(e, "_capsim_recorded", False):
            self.script.raised(e)

    # -- limits and checkpoints ----------------------------------------------

    def wants(self) -> bool:
        """Whether the next backward is recorded (the limits)."""
        if self.stopped is not None:
            return False
        if self.max_steps is not None and self.steps >= self.max_steps:
            self.stop(f"--max-steps {self.max_steps} reached")
            return False
        if len(self.session.items) * self.trace.bytes_per_action >= self.max_bytes:
            self.stop(f"the size cap of {self.max_bytes} bytes reached")
            print(f"capsim_recorder: {self.stopped}; the trace holds the first {self.steps}"
                  f" backwards ({self.path})", file=sys.stderr)
            return False
        return True

    def after_step(self) -> None:
        self.steps += 1
        if self.trace.due():
            self._safe_write()

    def skip(self, kind: str) -> None:
        self.unrecorded[kind] = self.unrecorded.get(kind, 0) + 1

    # -- the sink: backwards -------------------------------------------------------

    def _idle(self) -> bool:
        return not self.live() or torch.compiler.is_compiling()

    def on_tensor_backward(self, root: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        if self._idle() or self.busy or root.grad_fn is None or not self.wants():
            return run()
        return record_backward(self, run)

    def on_autograd_backward(self, tensors: Any, run: Callable[[], Any], args: BackwardArgs) -> Any:
        if self._idle() or self.busy:
            return run()
        roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        if all(getattr(t, "grad_fn", None) is None for t in roots) or not self.wants():
            return run()
        return record_backward(self, run)

    def on_autograd_grad(self, frame: Any) -> None:
        if not self._idle() and not self.busy and not called_by_torch(frame):
            self.skip("torch.autograd.grad calls")

    # -- the sink: optimizers, grad clears and data --------------------------------

    def on_optimizer_made(self, opt: Any, frame: Any) -> None:
        if not self._idle():
            self.guarded("an optimizer made", self.script.created, opt, frame)

    def on_optimizer_zero_grad(self, opt: Any, frame: Any, set_to_none: bool,
                               run: Callable[[], Any]) -> Any:
        """An optimizer's in the trace (create_optimizer) is zero_grad; the
        script's call of any other's (of a kind capsim does not model,
        stepped eagerly) is a clear_grads of its params, named after the
        optimizer's variable."""
        if self._idle():
            return NOT_OURS
        if self.script.follows(opt):
            self.guarded("zero_grad", self.script.zero_grad, opt, set_to_none)
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
        if not self._clearing(frame):
            return NOT_OURS
        same = isinstance(new, torch.Tensor) and new.shape == param.shape and new.dtype == param.dtype
        result = set_it()
        if same:
            self.guarded("a data rebinding", self.script.reassigned, param, new, frame)
        else:
            self.note("p.data = t with another shape or dtype: not in the trace")
        return result

    def _clearing(self, frame: Any) -> bool:
        """Whether a grad clear (or a data rebinding) at `frame` is the
        script's to record."""
        return (not self._idle() and not self.busy and not self.script.clearing
                and not called_by_torch(frame))

    def _clear(self, owner: Any, params: list, set_to_none: bool, run: Callable[[], Any]) -> Any:
        """A grad clear of the script's (cudagraph_script.py's clear_grads;
        `owner`: the module or optimizer, None for `p.grad = None`)."""
        self.guarded("a grad clear", self.script.clear_grads, owner, params, set_to_none,
                     sys._getframe(1))
        self.script.clearing = True
        try:
            return run()
        finally:
            self.script.clearing = False

    # -- the sink: marks -----------------------------------------------------------

    def on_mark_static_address(self, t: Any, guard: Any, run: Callable[[], Any]) -> Any:
        if not self._idle():
            self.guarded("mark_static_address", self.script.marked, t, guard)
        return run()

    def on_mark_step_begin(self, run: Callable[[], Any]) -> Any:
        if not self._idle():
            self.guarded("cudagraph_mark_step_begin", self.script.step_begin)
        return run()


def record_backward(r: CudagraphRecording, run: Callable[[], Any]) -> Any:
    """A backward of the script, recorded in `r`: `run()` (the script's),
    then the grads it left (the program API's accumulate_grad). A failure
    of the latter is the recorder's (guarded); the backward's own exception
    is the script's, and goes on to it."""
    done: list = []

    def backward() -> Any:
        result = run()
        done.append(result)
        return result

    r.busy = True
    try:
        return r.rec.run_backward(backward)
    except Exception as e:
        if not done:
            raise
        r.note(f"recording stopped: following the grads of a backward failed ({why(e)})")
        r.stop("following the grads of a backward failed")
        return done[0]
    finally:
        r.busy = False
        if r.live():
            r.after_step()


def end_lines(r: CudagraphRecording) -> list[str]:
    """What recording `r` says on stderr when its block ends: the ops of its
    graphs capsim cannot express (the trace then has no function lines and
    no calls: cudagraph/output.plan), what it left out, and its first note."""
    lines = []
    untranslated = r.trace.untranslated
    if untranslated:
        lines.append(f"capsim_recorder: no compiled calls in the trace: its graphs use "
                     f"{len(untranslated)} op(s) capsim cannot express: {', '.join(untranslated)} "
                     f"(the header's x_untranslated; recorder/README.md lists the ops it can)")
    if r.unrecorded:
        parts = [f"{n} {kind}" for kind, n in sorted(r.unrecorded.items())]
        lines.append(f"capsim_recorder: not in the trace: {', '.join(parts)} ({r.path})")
    notes = r.driver.notes()
    if notes:
        lines.append(f"capsim_recorder: {len(notes)} notes in the trace's x_notes, first: {notes[0]}")
    return lines
