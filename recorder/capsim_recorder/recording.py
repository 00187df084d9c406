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

Limits: `max_steps` backwards are recorded, later ones run as they would
without the recorder; past `max_bytes` the recording stops with one message on
stderr. The trace is written in place and flushed line by line, so a script
that raises or is killed leaves the valid prefix of its trace.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, Optional

from . import torch_compat
from .launcher.patching import called_by_torch, one_root, patched

DEFAULT_MAX_BYTES = 256 << 20
PRODUCER = "pytorch"
# Compiled autograd's captures, and the compiled optimizer's events.
OBSERVES = ["ca_graph", "optimizer", "compile", "zero_grad"]
# What the compiled-autograd form needs of PyTorch's internals (torch_compat.py).
NEEDS = (torch_compat.AUTOGRAD, torch_compat.OPTIMIZER, torch_compat.LAUNCHER)


class RecordingSession:
    """What record() holds while its block runs (one at a time)."""

    def __init__(self, writer: Any, recorder: Any, max_steps: Optional[int], max_bytes: int,
                 dynamic: bool) -> None:
        from .launcher.optimizer import OptimizerWatch

        self.writer = writer
        self.recorder = recorder
        self.optimizers = OptimizerWatch(writer, self.live)
        self.max_steps = max_steps
        self.max_bytes = max_bytes
        self.dynamic = dynamic
        self.stopped: Optional[str] = None  # why recording stopped early
        self.busy = False  # inside a recorded backward: its own loss.backward() passes through
        self.unrecorded: dict[str, int] = {}  # what ran unrecorded, by kind

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

    def after_backward(self) -> None:
        """Any backward of the script: the grads it left, for the followed
        optimizers."""
        if not self.busy and self.live():
            self.optimizers.synced_all()

    def unrecorded_line(self) -> Optional[str]:
        counts = {**self.unrecorded, **self.optimizers.unrecorded()}
        if not counts:
            return None
        parts = [f"{n} {kind}" for kind, n in sorted(counts.items())]
        return (f"capsim_recorder: ran unrecorded (capsim models one-root backward() and "
                f"SGD/Adam/AdamW steps only): {', '.join(parts)} ({self.writer.path})")

    @property
    def steps(self) -> int:
        return self.recorder.backwards

    def script_failed(self, e: BaseException) -> None:
        """The script raised: what was recorded before is in the trace
        already (written line by line); nothing to add."""

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


def _record_backward(session: RecordingSession, root: Any, gradient: Any, retain_graph: Any,
                     create_graph: bool, inputs: Any) -> None:
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
        session.recorder.backward(root, dynamic=session.dynamic, **kwargs)
    finally:
        session.busy = False


def _patched_backward(original: Any) -> Any:
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        session = _active
        if session is None or session.busy or self.grad_fn is None or not session.wants():
            result = original(self, gradient, retain_graph, create_graph, inputs)
        else:
            result = _record_backward(session, self, gradient, retain_graph, create_graph, inputs)
        if session is not None:
            session.after_backward()
        return result

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_autograd_backward(original: Any) -> Any:
    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                 grad_variables=None, inputs=None):
        session = _active
        call = lambda: original(tensors, grad_tensors, retain_graph, create_graph,  # noqa: E731
                                grad_variables, inputs)
        if session is None or session.busy or grad_variables is not None:
            return call()
        one = one_root(tensors, grad_tensors)
        if one is None:
            session.skip("backwards with several roots")
            result = call()
        elif getattr(one[0], "grad_fn", None) is None or not session.wants():
            result = call()
        else:
            result = _record_backward(session, one[0], one[1], retain_graph, create_graph, inputs)
        session.after_backward()
        return result

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_grad(original: Any) -> Any:
    def grad(*args, **kwargs):
        session = _active
        if session is not None and not session.busy and not called_by_torch(sys._getframe(1)):
            session.skip("torch.autograd.grad calls")
        return original(*args, **kwargs)

    grad.__wrapped__ = original  # type: ignore[attr-defined]
    return grad


def _noting(original: Any, note: Any) -> Any:
    """`original` (a hook registration method), then `note(self, handle)`
    while a recording wants it."""
    def register(self, *args, **kwargs):
        handle = original(self, *args, **kwargs)
        session = _active
        if session is not None and session.noting():
            note(session.notes, self, handle)
        return handle

    register.__wrapped__ = original  # type: ignore[attr-defined]
    return register


def _patched_optimizer_init(original: Any) -> Any:
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        session = _active
        if session is not None:
            session.optimizers.created(self)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


def _patched_zero_grad(original: Any) -> Any:
    import torch

    def zero_grad(self, set_to_none: bool = True):
        session = _active
        if session is None or torch.compiler.is_compiling():
            return original(self, set_to_none)
        after = session.optimizers.zero_grad(self, set_to_none)
        result = original(self, set_to_none)
        after()
        return result

    zero_grad.__wrapped__ = original  # type: ignore[attr-defined]
    return zero_grad


def _patched_compile(original: Any) -> Any:
    """torch.compile of a function: the same compiled function, each call of
    which the optimizer watch sees (an nn.Module is left as it is)."""
    import functools

    import torch

    def compile(model=None, **kwargs):
        if model is None:
            return lambda fn: compile(fn, **kwargs)
        compiled = original(model, **kwargs)
        if isinstance(model, torch.nn.Module) or not callable(compiled):
            return compiled

        @functools.wraps(compiled)
        def call(*args, **kw):
            session = _active
            if session is None:
                return compiled(*args, **kw)
            return session.optimizers.run_compiled(compiled, args, kw)

        return call

    compile.__wrapped__ = original  # type: ignore[attr-defined]
    return compile


def _patched_mark_static_address(original: Any) -> Any:
    """mark_static_address with the release's own default for `guard`
    (True up to 2.9, False from 2.11)."""
    import inspect

    default = inspect.signature(original).parameters["guard"].default

    def mark_static_address(t, guard=default):
        result = original(t, guard=guard)
        session = _active
        if session is not None:
            session.optimizers.marked(t, guard)
        return result

    mark_static_address.__wrapped__ = original  # type: ignore[attr-defined]
    return mark_static_address


def _patch_targets() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, wrapper factory) for every entry point record()
    replaces while its block runs; all looked up by PyTorch at call time."""
    import torch
    import torch.autograd.function as autograd_function

    node = autograd_function.BackwardCFunction  # a Python class: Function nodes
    return [
        (torch.optim.Optimizer, "__init__", _patched_optimizer_init),
        (torch.optim.Optimizer, "zero_grad", _patched_zero_grad),
        (torch, "compile", _patched_compile),
        (torch_compat.dynamo_module(), torch_compat.MARK_STATIC_ADDRESS, _patched_mark_static_address),
        (torch.Tensor, "backward", _patched_backward),
        (torch.autograd, "backward", _patched_autograd_backward),
        (torch.autograd, "grad", _patched_grad),
        (torch.Tensor, "register_hook",
         lambda o: _noting(o, lambda notes, t, h: notes.note_tensor_hook(t, h))),
        (torch.Tensor, "register_post_accumulate_grad_hook",
         lambda o: _noting(o, lambda notes, t, h: notes.note_post_accumulate_grad_hook(t, h))),
        (node, "register_hook",
         lambda o: _noting(o, lambda notes, n, h: notes.note_node_hook(n, "post_hook", h))),
        (node, "register_prehook",
         lambda o: _noting(o, lambda notes, n, h: notes.note_node_hook(n, "pre_hook", h))),
    ]


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

    from .launcher import cudagraph_wraps

    if _active is not None or cudagraph_wraps.active() is not None:
        raise RuntimeError("capsim_recorder.record(): a recording is already running")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be at least 0, got {max_steps}")
    if reset:
        torch.compiler.reset()
        torch_compat.counters().clear()
    trace_name = name or os.path.splitext(os.path.basename(path))[0] or "run"
    if cudagraphs:
        from .launcher.cudagraph_wraps import record_cudagraphs

        with record_cudagraphs(path, max_steps=max_steps, max_bytes=max_bytes, name=trace_name,
                               command=command) as recording:
            yield recording
        return
    with _record_compiled_autograd(path, max_steps, max_bytes, dynamic, trace_name,
                                   command) as session:
        yield session


@contextlib.contextmanager
def _record_compiled_autograd(path: str, max_steps: Optional[int], max_bytes: int, dynamic: bool,
                              name: str, command: Optional[str]) -> Iterator[RecordingSession]:
    """The CPU form of record(): compiled autograd and the compiled optimizer."""
    global _active
    import torch

    from .capture import CompiledAutogradCapture
    from .optimizer.recorder import inductor_hooks
    from .recorder import Recorder, SEED, torch_config
    from .trace_writer import TraceWriter
    capture = CompiledAutogradCapture()
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
            _active = session
            try:
                with patched(_patch_targets()), inductor_hooks(session.optimizers.on_compiled):
                    yield session
            finally:
                _active = None
                line = session.unrecorded_line()
                if line is not None:
                    print(line, file=sys.stderr)
    finally:
        capture.close()
