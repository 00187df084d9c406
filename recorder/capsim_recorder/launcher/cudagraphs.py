"""The cudagraph trees of any script: record(path, cudagraphs=True) and
`python -m capsim_recorder run --cudagraphs`. The recording runs on the one
cudagraph driver (cudagraph/driver.py) that the built-in programs run on:
the same session, compile hooks and tree observer, the same failures in
x_notes. The script's own plain PyTorch statements drive the program API
(cudagraph/program_api.py) through the wraps (cudagraph_wraps.py) and
cudagraph_script.py, where the built-in programs call it by hand:

  Tensor.backward(), torch.autograd.backward(t) (one root)
      the compiled backward's calls, then accumulate_grad per parameter
  an exception out of the script            an error event (PyTorch's text)
  (and cudagraph_script.py's statements)

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

Not written, and counted on stderr at the end: backwards with several roots
(their calls are in the trace, their grads are not followed),
torch.autograd.grad, optimizers of other kinds, `p.data = t`, and reads of a
tensor (an overwritten output that the script reads raises in PyTorch; the
error event is there, the read is not), and eager optimizer steps.

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
from .patching import called_by_torch
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
            self.read_watch = ReadWatch(self.script.reads)
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

    def _close(self) -> None:
        """The last write; from here on the script runs without the recorder."""
        self.write()
        self.session.closed = True
        self.uninstall()

    def stop(self, why: str) -> None:
        """A limit ended the recording before the block did."""
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

    def script_failed(self, e: BaseException) -> None:
        """The script raised. An exception PyTorch raised (the innermost
        frame is torch's: an overwritten output read, say) is an error event
        with PyTorch's text; the script's own is a note, since capsim's model
        has nothing to compare it with."""
        if not self.live():
            return
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None and called_by_torch(tb.tb_frame):
            self.rec.record_error(e)
            self.session.program_error = (type(e).__name__, str(e))
        else:
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"
            text = str(e).splitlines()[0][:200] if str(e) else ""
            self.session.notes.append(f"the script raised {type(e).__name__} at "
                                      f"{os.path.basename(where)}: {text}")

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
        self.busy = True
        try:
            return self.rec.run_backward(run)
        finally:
            self.busy = False
            self.after_step()

    def after_step(self) -> None:
        self.steps += 1
        if self.rewritable and len(self.session.items) >= 2 * max(1, self.checkpoint_actions):
            self.write()

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
