"""The cudagraph trees of any script: record(path, cudagraphs=True) and
`python -m capsim_recorder run --cudagraphs`. The recording runs on the one
cudagraph driver (cudagraph/driver.py) that the built-in programs run on:
the same session, compile hooks and tree observer, the same failures in
x_notes. The script's own plain PyTorch statements drive the program API
(cudagraph/program_api.py) through the wraps (wraps.py, cudagraph_sink.py)
and cudagraph_script.py, where the built-in programs call it by hand:

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
from .failures import raised_by_cudagraphs, say, script_frame, why
from .reads import ReadWatch, pop_or_mute, supported

# Bytes per buffered action before the first checkpoint measured them.
FIRST_BYTES_PER_ACTION = 256
# What this form needs of PyTorch's internals (torch_compat.self_check).
NEEDS = (torch_compat.CUDAGRAPHS, torch_compat.LAUNCHER, torch_compat.READS)


class CudagraphRecording:
    """What record(cudagraphs=True) holds while its block runs. `driver`:
    a CudagraphDriver not installed yet (default: PyTorch's, with the
    release's self-check in x_notes)."""

    def __init__(self, path: str, name: str, max_steps: Optional[int], max_bytes: int,
                 command: Optional[str], driver: Optional[CudagraphDriver] = None,
                 device: Optional[Any] = None) -> None:
        self.path = path
        self.name = name
        self.max_steps = max_steps
        self.max_bytes = max_bytes
        self.command = command
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if driver is None:
            driver = torch_driver(name, self.device.type)
            driver.self_check(NEEDS)
        self.driver = driver
        self.session = driver.session
        self.session.no_cudagraphs = self.device.type != "cuda"
        self.rec = CudagraphRecorder(self.session, driver.observer, self.device)
        self.script = ScriptStatements(self)
        self.session.on_unnamed = self.script.name_parameter
        self.session.on_graph_call = self.script.graph_call
        self.steps = 0  # recorded backwards
        self.busy = False  # inside a recorded backward
        self.read_watch: Optional[Any] = None  # reads.ReadWatch, while installed
        self.untranslated: list[str] = []  # the last write's x_untranslated
        self.stderr_notes = 0  # notes said on stderr (failures.say)
        self.stopped: Optional[str] = None
        self.unrecorded: dict[str, int] = {}
        self.checkpoint_actions = 0
        self.bytes_per_action = float(FIRST_BYTES_PER_ACTION)
        # A FIFO, a device or `-` takes one trace: the final one, no checkpoints.
        self.rewritable = path != "-" and (not os.path.exists(path) or os.path.isfile(path))

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
        actions = max(1, len(self.session.items))
        self.bytes_per_action = max(1.0, size / actions)
        self.checkpoint_actions = len(self.session.items)
        return size

    def _safe_write(self) -> None:
        """write(), its failure a note: the last checkpoint stays at `path`."""
        try:
            self.write()
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
        for line in (self.untranslated_line(), self.unrecorded_line()):
            if line is not None:
                print(line, file=sys.stderr)
        for note in self.notes_line():
            print(note, file=sys.stderr)

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
        """The script raised. An exception of PyTorch's cudagraph code (on
        its traceback, or one the observer classifies: E1, E3, E4, A1) is an
        error event with PyTorch's text; any other (the script's own, or
        PyTorch's outside the cudagraph code, say a torch.load that fails) is
        a note with its type and message, since capsim's model has nothing
        to compare it with. Either way it goes on to the script unchanged."""
        if not self.live() or getattr(e, "_capsim_recorded", False):
            return
        try:
            observer = self.driver.observer
            classified = observer is not None and "id" in observer.error_fields(e, None)
            if classified or raised_by_cudagraphs(e):
                self.rec.record_error(e)
                self.session.program_error = (type(e).__name__, str(e))
                return
            where = script_frame(e)
            at = f" at {os.path.basename(where.f_code.co_filename)}:{where.f_lineno}" if where else ""
            self.session.notes.append(f"the script raised {why(e)}{at}")
        except Exception as failure:  # the recorder's own: the script's exception goes on
            self.note(f"the script's exception could not be recorded ({why(failure)})")

    # -- limits and checkpoints ----------------------------------------------

    def wants(self) -> bool:
        """Whether the next backward is recorded (the limits)."""
        if self.stopped is not None:
            return False
        if self.max_steps is not None and self.steps >= self.max_steps:
            self.stop(f"--max-steps {self.max_steps} reached")
            return False
        if len(self.session.items) * self.bytes_per_action >= self.max_bytes:
            self.stop(f"the size cap of {self.max_bytes} bytes reached")
            print(f"capsim_recorder: {self.stopped}; the trace holds the first {self.steps}"
                  f" backwards ({self.path})", file=sys.stderr)
            return False
        return True

    def backward(self, run: Callable[[], Any]) -> Any:
        """A recorded backward: `run()` (the script's), then the grads it
        left (the program API's accumulate_grad). A failure of the latter
        is the recorder's (guarded); the backward's own exception is the
        script's, and goes on to it."""
        done: list = []

        def backward() -> Any:
            result = run()
            done.append(result)
            return result

        self.busy = True
        try:
            return self.rec.run_backward(backward)
        except Exception as e:
            if not done:
                raise
            self.note(f"recording stopped: following the grads of a backward failed ({why(e)})")
            self.stop("following the grads of a backward failed")
            return done[0]
        finally:
            self.busy = False
            if self.live():
                self.after_step()

    def after_step(self) -> None:
        self.steps += 1
        if self.rewritable and len(self.session.items) >= 2 * max(1, self.checkpoint_actions):
            self._safe_write()

    def skip(self, kind: str) -> None:
        self.unrecorded[kind] = self.unrecorded.get(kind, 0) + 1

    def untranslated_line(self) -> Optional[str]:
        """Said when some graph used an op capsim cannot express: the trace
        then has no function lines and no calls (cudagraph/output.plan)."""
        if not self.untranslated:
            return None
        return (f"capsim_recorder: no compiled calls in the trace: its graphs use "
                f"{len(self.untranslated)} op(s) capsim cannot express: {', '.join(self.untranslated)} "
                f"(the header's x_untranslated; recorder/README.md lists the ops it can)")

    def unrecorded_line(self) -> Optional[str]:
        if not self.unrecorded:
            return None
        parts = [f"{n} {kind}" for kind, n in sorted(self.unrecorded.items())]
        return f"capsim_recorder: not in the trace: {', '.join(parts)} ({self.path})"

    def notes_line(self) -> list[str]:
        notes = self.driver.notes()
        if not notes:
            return []
        return [f"capsim_recorder: {len(notes)} notes in the trace's x_notes, first: {notes[0]}"]
