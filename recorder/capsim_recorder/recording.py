"""Recording any PyTorch program, unchanged:

    import capsim_recorder
    with capsim_recorder.record("run.jsonl", max_steps=20):
        train()                      # any code that calls loss.backward()

or, for a script, `python -m capsim_recorder run -o run.jsonl -- train.py ARGS`
(like TORCH_TRACE=...). While the block runs, every backward with one root
(`Tensor.backward()`, `torch.autograd.backward(t)`) is recorded as the
programs of programs.py record theirs: the autograd graph walked from the
loss (`autograd_graph`), the backward run under compiled autograd
(`compiled_backward`, with the recorder's own compiler function), and what
compiled autograd captured, node for node (`ca_graph`, with PyTorch's
cache-miss text in `x_message`). `capsim replay` compares the trace with
capsim's model and `capsim explain` says why each capture happened.

Hooks registered with the plain API while the block runs are part of the
walked graph, as compiled autograd keys them: `Tensor.register_hook`,
`Tensor.register_post_accumulate_grad_hook`, and `register_hook` and
`register_prehook` on the node of a Python autograd.Function (which includes
the nodes that `nn.Module.register_full_backward_hook` and
`register_full_backward_pre_hook` hang their hooks on). A hook removed
through its handle drops out. The nodes of PyTorch's built-in ops
(MulBackward0, ...) are C++ types that cannot be wrapped and keep their
hooks where Python cannot read them: register those through
`session.notes.pre_hook(node, fn)` / `post_hook(node, fn)` (annotations.py),
or they are missing from the graph, as are hooks registered before the
block began.

A compiled optimizer step (`torch.compile` of a function that calls
`opt.step()`, for SGD, Adam and AdamW) is recorded too, in the actions of
optimizer/recorder.py's programs: the optimizer, its grads, `zero_grad`,
`mark_static_address` and each step's static input indices
(launcher/optimizer.py says how a step is found). Inductor's FX graph cache
and AOTAutograd's cache are off while the block runs, as for those programs.

Not recorded, and counted in one line on stderr at the end: backwards with
several roots, `torch.autograd.grad` (capsim models `backward()` only), and
the optimizers launcher/optimizer.py does not follow.

`record(path, cudagraphs=True)` (the launcher's `--cudagraphs`) records the
other half instead: what the cudagraph trees did with the script's
torch.compile(mode="reduce-overhead") graphs, on a GPU (on a CPU, Inductor
hands no graph to a tree, and every call is written as an eager call).
launcher/cudagraphs.py says what it writes and why it is a form of its own.

`model.zero_grad(set_to_none)`, the script's own `p.grad = None` (of an
nn.Parameter) and `opt.zero_grad(set_to_none)` of an optimizer the trace
does not follow (stepped eagerly, as pytorch/examples' mnist steps its
Adadelta, or compiled but not stepped yet) are clear_grads actions with
their zero_grad events (launcher/params.py; named after the module's or the
optimizer's variable); the optimizer's and the module's own `p.grad = None`
inside them are not.

Limits: `max_steps` backwards are recorded, later ones run as they would
without the recorder; past `max_bytes` the recording stops with one message on
stderr. The trace is written in place and flushed line by line, so a script
that raises or is killed leaves the valid prefix of its trace.

Failures: the recorder never raises into the script. What it cannot write or
fails at is left out whole, with a note that joins the header's x_notes when
the block ends (launcher/session.py lists the cases).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator, Optional

from . import operands, torch_compat
from .launcher import wraps
from .launcher.session import RecordingSession, end_lines

DEFAULT_MAX_BYTES = 256 << 20
PRODUCER = "pytorch"
# Compiled autograd's captures, and the compiled optimizer's events.
OBSERVES = ["ca_graph", "optimizer", "compile", "zero_grad"]
# What the compiled-autograd form needs of PyTorch's internals (torch_compat.py).
NEEDS = (torch_compat.AUTOGRAD, torch_compat.OPTIMIZER, torch_compat.LAUNCHER)


@contextlib.contextmanager
def record(path: str, *, max_steps: Optional[int] = None, max_bytes: int = DEFAULT_MAX_BYTES,
           dynamic: bool = True, name: Optional[str] = None, command: Optional[str] = None,
           reset: bool = False, cudagraphs: bool = False) -> Iterator[Any]:
    """Records every one-root backward of the block into the trace at `path`
    (see the module's docstring). `dynamic` is compiled autograd's flag;
    `name` the trace's name (default: the file's stem); `reset` clears
    Dynamo's caches and counters first (the launcher does; the program's RNG
    is never touched). `cudagraphs` records the cudagraph trees instead, with
    the backwards run as the script runs them (launcher/cudagraphs.py)."""
    import os

    import torch

    if wraps.active() is not None:
        raise RuntimeError("capsim_recorder.record(): a recording is already running")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be at least 0, got {max_steps}")
    if reset:
        torch.compiler.reset()
        torch_compat.counters().clear()
    trace_name = name or os.path.splitext(os.path.basename(path))[0] or "run"
    if cudagraphs:
        with _record_cudagraphs(path, max_steps, max_bytes, trace_name, command) as recording:
            yield recording
        return
    with _record_compiled_autograd(path, max_steps, max_bytes, dynamic, trace_name,
                                   command) as session:
        yield session


@contextlib.contextmanager
def _record_compiled_autograd(path: str, max_steps: Optional[int], max_bytes: int, dynamic: bool,
                              name: str, command: Optional[str]) -> Iterator[RecordingSession]:
    """The CPU form of record(): compiled autograd and the compiled optimizer.
    What the recording noted on the way (launcher/session.py) joins the
    header's x_notes when the block ends."""
    import torch

    from .capture import CompiledAutogradCapture
    from .optimizer.recorder import inductor_hooks
    from .recorder import Recorder, SEED, torch_config
    from .trace_writer import TraceWriter
    capture = CompiledAutogradCapture()
    session: Optional[RecordingSession] = None
    try:
        with TraceWriter(path, log=True) as writer:
            extensions = {"x_torch_version": torch.__version__, "x_device": "cpu"}
            if command:
                extensions["x_command"] = command
            missing = torch_compat.announce(NEEDS)
            if missing:
                extensions["x_notes"] = missing
            # A CPU run makes no CUDA graphs: capsim's model runs each compiled
            # graph without a tree, as Inductor did here.
            config = {**torch_config(), "cudagraphs": False}
            writer.header(producer=PRODUCER, seed=SEED, config=config, observes=OBSERVES,
                          name=name,
                          extensions=extensions)
            session = RecordingSession(writer, Recorder(writer, capture), max_steps, max_bytes,
                                       dynamic)
            try:
                # operands.py: the dtypes of operands the nodes do not keep (`h + 1`).
                with wraps.installed(session), \
                        inductor_hooks(_on_compiled(session)), operands.watching(session.live):
                    yield session
            finally:
                for line in end_lines(session):
                    print(line, file=sys.stderr)
    finally:
        capture.close()
        if session is not None and session.x_notes:
            _amend(path, session.x_notes)


@contextlib.contextmanager
def _record_cudagraphs(path: str, max_steps: Optional[int], max_bytes: int, name: str,
                       command: Optional[str]) -> Iterator[Any]:
    """The cudagraph form of record() (launcher/cudagraphs.py): its trace
    written first when it can be rewritten (a valid trace from the start;
    a bad path fails here), and last when the block ends, however it ends."""
    from .launcher.cudagraphs import CudagraphRecording

    recording = CudagraphRecording(path, name, max_steps, max_bytes, command)
    if recording.trace.rewritable:
        recording.trace.write()
    error: Optional[BaseException] = None
    with torch_compat.fresh_compile_patches(), wraps.installed(recording):
        try:
            recording.install()
            yield recording
        except BaseException as e:
            error = e
            raise
        finally:
            recording.finish(error)


def _on_compiled(session: RecordingSession) -> Callable[[list], Callable[[Any], None]]:
    """The optimizer watch's Inductor hook, its failures kept from PyTorch."""
    def on_compiled(static: list) -> Callable[[Any], None]:
        on_call = session.watched("an Inductor compile", session.optimizers.on_compiled, static)
        if on_call is None:
            return lambda inputs: None
        return lambda inputs: session.watched("a compiled graph's call", on_call, inputs)

    return on_compiled


def _amend(path: str, notes: list) -> None:
    """The notes into the finished trace's header (a regular file only)."""
    from .trace_writer import amend_header

    try:
        amend_header(path, notes)
    except Exception as e:  # the trace stays as it was; the notes were on stderr
        print(f"capsim_recorder: could not add the notes to {path}'s header: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
