"""What record()'s CPU form (recording.py) holds while its block runs: the
writer, the recorder, the optimizer watch, the limits, and the failures
that must not reach the script.

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

import sys
from typing import Any, Callable, Optional

from ..graph_walk import walk
from .failures import MAX_STDERR_NOTES, raised_by_script, say, why


class RecordingSession:
    """What record() holds while its block runs (one at a time)."""

    def __init__(self, writer: Any, recorder: Any, max_steps: Optional[int], max_bytes: int,
                 dynamic: bool) -> None:
        from .optimizer import OptimizerWatch

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

    # -- backwards -------------------------------------------------------------------

    def after_backward(self) -> None:
        """Any backward of the script: the grads it left, for the followed
        optimizers."""
        if not self.busy and self.live():
            self.watched("following the grads after a backward", self.optimizers.synced_all)

    def record_backward(self, root: Any, call: Callable[[], Any], kwargs: dict) -> Any:
        """A one-root backward of the script, recorded (see the module's
        docstring for what a failure does); `call()` runs it as without the
        recorder."""
        rec = self.recorder
        k = rec.backwards
        self.busy = True
        state = {"ran": False}
        rec.capture.backward_done = False
        try:
            with self.writer.atomic():
                index = rec.write_graph(walk(root, rec.notes), self.dynamic)
                state["ran"] = True
                result = rec.capture.backward(root, dynamic=self.dynamic, **kwargs)
                state["captured"] = True
                rec.write_capture(index, result, on_note=self.note)
            return None
        except Exception as e:
            state["done"] = rec.capture.backward_done
            retry = self._backward_failed(k, e, state)
            if retry is None:
                raise
        except BaseException as e:  # KeyboardInterrupt, SystemExit: the script's
            self.stop(f"backward {k} was interrupted ({why(e)})")
            raise
        finally:
            self.busy = False
        return call() if retry else None

    def _backward_failed(self, k: int, e: Exception, state: dict) -> Optional[bool]:
        """Whether the backward runs again unrecorded (False: it ran; None:
        the exception is the script's, and goes on to it)."""
        if not state["ran"]:
            self.note(f"backward {k}: not recorded ({why(e)}): its autograd_graph and"
                      " compiled_backward are left out, and it ran as without the recorder")
            return True
        if state.get("captured") or state["done"]:
            self.stop(f"backward {k}: its ca_graph event could not be written ({why(e)})")
            return False
        if raised_by_script(e):
            self.stop(f"backward {k} raised in the script's own code ({why(e)})")
            return None
        self.stop(f"backward {k}: compiled autograd failed ({why(e)}); it ran again as without"
                  " the recorder")
        return True

    def unrecorded_line(self) -> Optional[str]:
        counts = {**self.unrecorded, **self.optimizers.unrecorded()}
        if not counts:
            return None
        parts = [f"{n} {kind}" for kind, n in sorted(counts.items())]
        return (f"capsim_recorder: ran unrecorded (capsim models one-root backward() and "
                f"SGD/Adam/AdamW steps only): {', '.join(parts)} ({self.writer.path})")

    def notes_line(self) -> Optional[str]:
        left = self.stderr_notes - MAX_STDERR_NOTES
        if left <= 0:
            return None
        return f"capsim_recorder: {left} more notes in the trace's x_notes ({self.writer.path})"

    @property
    def steps(self) -> int:
        return self.recorder.backwards

    def script_failed(self, e: BaseException) -> None:
        """The script raised: what was recorded before is in the trace
        already (written line by line); the exception goes on to the script's
        caller unchanged (the command line says so on stderr)."""
        self.x_notes.append(f"the script raised {why(e)}")

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
