"""Recording any PyTorch program, unchanged:

    import capsim_recorder
    with capsim_recorder.record("run.jsonl", max_steps=20):
        train()                      # any code that calls loss.backward()

or, for a script, `python -m capsim_recorder run -o run.jsonl -- train.py ARGS`
(like TORCH_TRACE=...). While the block runs, every `Tensor.backward()` is
recorded as the programs of programs.py record theirs: the autograd graph
walked from the loss (`autograd_graph`), the backward run under compiled
autograd (`compiled_backward`, with the recorder's own compiler function), and
what compiled autograd captured, node for node (`ca_graph`, with PyTorch's
cache-miss text in `x_message`). `capsim replay` compares the trace with
capsim's model and `capsim explain` says why each capture happened.

This is what a CPU allows; the cudagraph-tree decisions need the GPU half
(cudagraph_recorder.py) and are not recorded here yet, nor are hooks that the
program registers with the plain PyTorch API (a hook changes the graph's key;
programs.py records them through rec.notes).

Limits: `max_steps` backwards are recorded, later ones run as they would
without the recorder; past `max_bytes` the recording stops with one message on
stderr. The trace is written in place and flushed line by line, so a script
that raises or is killed leaves the valid prefix of its trace.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, Optional

DEFAULT_MAX_BYTES = 256 << 20
PRODUCER = "pytorch"


class RecordingSession:
    """What record() holds while its block runs (one at a time)."""

    def __init__(self, writer: Any, recorder: Any, max_steps: Optional[int], max_bytes: int,
                 dynamic: bool) -> None:
        self.writer = writer
        self.recorder = recorder
        self.max_steps = max_steps
        self.max_bytes = max_bytes
        self.dynamic = dynamic
        self.stopped: Optional[str] = None  # why recording stopped early
        self.busy = False  # inside a recorded backward: its own loss.backward() passes through

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


_active: Optional[RecordingSession] = None


def _patched_backward(original: Any) -> Any:
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        session = _active
        if session is None or session.busy or self.grad_fn is None or not session.wants():
            return original(self, gradient, retain_graph, create_graph, inputs)
        kwargs: dict[str, Any] = {}
        if gradient is not None:
            kwargs["gradient"] = gradient
        if retain_graph is not None:
            kwargs["retain_graph"] = retain_graph
        if create_graph:
            kwargs["create_graph"] = create_graph
        if inputs is not None:
            kwargs["inputs"] = inputs
        session.busy = True
        try:
            return session.recorder.backward(self, dynamic=session.dynamic, **kwargs)
        finally:
            session.busy = False

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


@contextlib.contextmanager
def record(path: str, *, max_steps: Optional[int] = None, max_bytes: int = DEFAULT_MAX_BYTES,
           dynamic: bool = True, name: Optional[str] = None, command: Optional[str] = None,
           reset: bool = False) -> Iterator[RecordingSession]:
    """Records every Tensor.backward() of the block into the trace at `path`
    (see the module's docstring). `dynamic` is compiled autograd's flag;
    `name` the trace's name (default: the file's stem); `reset` clears
    Dynamo's caches and counters first (the launcher does; the program's RNG
    is never touched)."""
    global _active
    import os

    import torch

    from .capture import CompiledAutogradCapture
    from .recorder import Recorder, SEED, torch_config
    from .trace_writer import TraceWriter

    if _active is not None:
        raise RuntimeError("capsim_recorder.record(): a recording is already running")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be at least 0, got {max_steps}")
    if reset:
        from torch._dynamo.utils import counters

        torch.compiler.reset()
        counters.clear()
    capture = CompiledAutogradCapture()
    original = torch.Tensor.backward
    try:
        with TraceWriter(path, log=True) as writer:
            extensions = {"x_torch_version": torch.__version__, "x_device": "cpu"}
            if command:
                extensions["x_command"] = command
            writer.header(producer=PRODUCER, seed=SEED, config=torch_config(), observes=["ca_graph"],
                          name=name or os.path.splitext(os.path.basename(path))[0] or "run",
                          extensions=extensions)
            session = RecordingSession(writer, Recorder(writer, capture), max_steps, max_bytes,
                                       dynamic)
            _active = session
            torch.Tensor.backward = _patched_backward(original)
            try:
                yield session
            finally:
                torch.Tensor.backward = original
                _active = None
    finally:
        capture.close()
