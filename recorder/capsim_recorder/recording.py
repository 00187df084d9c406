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
import functools
import sys
from typing import Any, Callable, Iterator, Optional

from . import operands, torch_compat
from .launcher import patching
from .launcher.patching import called_by_torch, one_root, patched
from .launcher.session import RecordingSession

DEFAULT_MAX_BYTES = 256 << 20
PRODUCER = "pytorch"
# Compiled autograd's captures, and the compiled optimizer's events.
OBSERVES = ["ca_graph", "optimizer", "compile", "zero_grad"]
# What the compiled-autograd form needs of PyTorch's internals (torch_compat.py).
NEEDS = (torch_compat.AUTOGRAD, torch_compat.OPTIMIZER, torch_compat.LAUNCHER)


_active: Optional[RecordingSession] = None


def _record_backward(session: RecordingSession, root: Any, call: Callable[[], Any], gradient: Any,
                     retain_graph: Any, create_graph: bool, inputs: Any) -> Any:
    kwargs: dict[str, Any] = {}
    if gradient is not None:
        kwargs["gradient"] = gradient
    if retain_graph is not None:
        kwargs["retain_graph"] = retain_graph
    if create_graph:
        kwargs["create_graph"] = create_graph
    if inputs is not None:
        kwargs["inputs"] = inputs
    return session.record_backward(root, call, kwargs)


def _patched_backward(original: Any) -> Any:
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        session = _active
        # Compiled autograd's compile must not see the operand watch (operands.py).
        call = functools.partial(operands.run_aside,
                                 functools.partial(original, self, gradient, retain_graph,
                                                   create_graph, inputs))
        if session is None or session.busy or self.grad_fn is None or not session.wants():
            result = call()
        else:
            result = _record_backward(session, self, call, gradient, retain_graph, create_graph,
                                      inputs)
        if session is not None:
            session.after_backward()
        return result

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_autograd_backward(original: Any) -> Any:
    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                 grad_variables=None, inputs=None):
        session = _active
        call = functools.partial(operands.run_aside,
                                 functools.partial(original, tensors, grad_tensors, retain_graph,
                                                   create_graph, grad_variables, inputs))
        if session is None or session.busy or grad_variables is not None:
            return call()
        one = one_root(tensors, grad_tensors)
        if one is None:
            session.skip("backwards with several roots")
            result = call()
        elif getattr(one[0], "grad_fn", None) is None or not session.wants():
            result = call()
        else:
            result = _record_backward(session, one[0], call, one[1], retain_graph, create_graph,
                                      inputs)
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
            session.guarded("noting a hook", note, session.notes, self, handle)
        return handle

    register.__wrapped__ = original  # type: ignore[attr-defined]
    return register


def _patched_optimizer_init(original: Any) -> Any:
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        session = _active
        if session is not None:
            session.watched("an optimizer made", session.optimizers.created, self)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


def _patched_zero_grad(original: Any) -> Any:
    """torch.optim.Optimizer.zero_grad: a followed optimizer's (a compiled
    one's, launcher/optimizer.py) is zero_grad; the script's call of any
    other's (stepped eagerly, or of a kind capsim does not model) is a
    clear_grads of its params, named after the optimizer's variable."""
    import torch

    from .launcher.optimizer import optimizer_params

    def on_call(opt: Any, frame: Any, set_to_none: bool, run: Callable[[], Any]) -> Any:
        session = _active
        if session is None or torch.compiler.is_compiling():
            return patching.NOT_OURS
        if session.optimizers.follows(opt):
            after = session.watched("zero_grad", session.optimizers.zero_grad, opt, set_to_none)
            result = run()
            if after is not None:
                session.watched("zero_grad", after)
            return result
        if not _clearing(session, frame):
            return patching.NOT_OURS
        return _named_clear(session, opt, optimizer_params(opt), set_to_none, run)

    return patching.zero_grad_wrap(original, on_call)


def _clear(session: RecordingSession, name: Optional[str], params: list, set_to_none: bool,
           run: Callable[[], Any]) -> Any:
    """A grad clear of the script's (launcher/params.py's clear_grads)."""
    after = session.watched("a grad clear", session.optimizers.clear_grads, name, params,
                            set_to_none, sys._getframe(1))
    session.clearing = True
    try:
        result = run()
    finally:
        session.clearing = False
    if after is not None:
        session.watched("a grad clear", after)
    return result


def _named_clear(session: RecordingSession, owner: Any, params: list, set_to_none: bool,
                 run: Callable[[], Any]) -> Any:
    """_clear of `owner`'s params (an nn.Module's or an optimizer's),
    named after the script's variable that holds `owner`."""
    from .launcher.script_names import variable_name

    name = session.guarded("naming a grad clear", variable_name, owner, sys._getframe(1))
    return _clear(session, name or type(owner).__name__, params, set_to_none, run)


def _clearing(session: Optional[RecordingSession], frame: Any) -> bool:
    """Whether a grad clear at `frame` is the script's to record."""
    import torch

    return (session is not None and not session.clearing and not session.busy
            and not torch.compiler.is_compiling() and not called_by_torch(frame))


def _patched_module_zero_grad(original: Any) -> Any:
    """nn.Module.zero_grad: clear_grads named after the module's variable."""

    def on_call(module: Any, frame: Any, set_to_none: bool, run: Callable[[], Any]) -> Any:
        session = _active
        if not _clearing(session, frame):
            return patching.NOT_OURS
        return _named_clear(session, module, list(module.parameters()), set_to_none, run)

    return patching.zero_grad_wrap(original, on_call)


def _patched_parameter_grad(original: Any) -> Any:
    """nn.Parameter.grad: the script's `p.grad = None` is a clear_grads of p."""

    def on_set_none(param: Any, frame: Any, set_it: Any) -> Any:
        recording = _active
        if not _clearing(recording, frame):
            return patching.NOT_OURS
        return _clear(recording, None, [param], True, set_it)

    return patching.parameter_grad_property(original, on_set_none)


def _run_watched(session: RecordingSession, compiled: Any, args: Any, kw: Any) -> Any:
    """One call of a torch.compile'd function, the optimizer watch around it
    (launcher/optimizer.py), its failures kept from the call."""
    watch = session.optimizers
    state = session.watched("a compiled call", watch.begin_call)
    if state is None:
        return compiled(*args, **kw)
    ran = False
    try:
        result = compiled(*args, **kw)
        ran = True
    finally:
        session.watched("a compiled call", watch.end_call, state, ran)
    return result


def _patched_compile(original: Any) -> Any:
    """torch.compile of a function: the same compiled function, each call of
    which the optimizer watch sees (an nn.Module is left as it is). Either
    runs with the operand watch off the mode stack, where Dynamo would trace
    it (operands.py)."""
    import torch

    def compile(model=None, **kwargs):
        if model is None:
            return lambda fn: compile(fn, **kwargs)
        compiled = original(model, **kwargs)
        if isinstance(model, torch.nn.Module):
            operands.forward_aside(compiled)
            return compiled
        if not callable(compiled):
            return compiled

        @functools.wraps(compiled)
        def call(*args, **kw):
            session = _active
            if session is None:
                return compiled(*args, **kw)
            return operands.run_aside(lambda: _run_watched(session, compiled, args, kw))

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
            session.watched("mark_static_address", session.optimizers.marked, t, guard)
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
        (torch.nn.Module, "zero_grad", _patched_module_zero_grad),
        (torch.nn.Parameter, "grad", _patched_parameter_grad),
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
    """The CPU form of record(): compiled autograd and the compiled optimizer.
    What the recording noted on the way (launcher/session.py) joins the
    header's x_notes when the block ends."""
    global _active
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
            _active = session
            try:
                # operands.py: the dtypes of operands the nodes do not keep (`h + 1`).
                with patched(_patch_targets()), inductor_hooks(_on_compiled(session)), \
                        operands.watching(session.live):
                    yield session
            finally:
                _active = None
                for line in (session.unrecorded_line(), session.notes_line()):
                    if line is not None:
                        print(line, file=sys.stderr)
    finally:
        capture.close()
        if session is not None and session.x_notes:
            _amend(path, session.x_notes)


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
