"""The cudagraph trees of any script: record(path, cudagraphs=True) and
`python -m capsim_recorder run --cudagraphs`. The script's own plain PyTorch
statements drive the cudagraph half's session (cudagraph_session.py), which
the program API of cudagraph_recorder.py drives for the built-in programs:

  an nn.Parameter, first seen as an optimizer's or a compiled graph's
      new_tensor parameter=true, named after the nn.Module attribute that
      holds it in a frame of the script (`model_0_weight`), else `p<k>`
  any other tensor a compiled graph receives
      new_tensor `t<k>` (the session's own rule)
  Tensor.backward(), torch.autograd.backward(t) (one root)
      the compiled backward's calls, then accumulate_grad per parameter
  torch.optim SGD, Adam, AdamW made         create_optimizer
  opt.zero_grad(set_to_none=...)            zero_grad
  torch._dynamo.mark_static_address(t)      mark_static
  torch.compiler.cudagraph_mark_step_begin  mark_step_begin
  an exception out of the script            an error event (PyTorch's text)

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
identity (launcher_optimizer.py's rule), and reads a grad. From then on each
call of that graph is an optimizer_step action, with the tree's events, as in
the built-in programs (cudagraph_recorder.py's rec.optimizer_step).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import weakref
from typing import Any, Callable, Iterator, Optional

import torch

# Bytes per buffered action before the first checkpoint measured them.
FIRST_BYTES_PER_ACTION = 256


class CudagraphRecording:
    """What record(cudagraphs=True) holds while its block runs."""

    def __init__(self, path: str, name: str, max_steps: Optional[int], max_bytes: int,
                 command: Optional[str]) -> None:
        from torch._inductor import compile_fx

        from .cudagraph_hooks import CompileHooks
        from .cudagraph_recorder import CudagraphRecorder, _generation, make_observer
        from .cudagraph_session import Session

        self.path = path
        self.name = name
        self.max_steps = max_steps
        self.max_bytes = max_bytes
        self.command = command
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.session = Session(name, generation_fn=_generation)
        self.session.no_cudagraphs = self.device.type != "cuda"
        self.session.on_unnamed = self._name_parameter
        self.session.on_graph_call = self._graph_call
        self.hooks = CompileHooks(self.session, compile_fx)
        self.observer = make_observer(self.session, self.device)
        self.rec = CudagraphRecorder(self.session, self.observer, self.device)
        self.optimizer_refs: list[tuple[Any, str, str]] = []  # (weakref, name in the trace, kind)
        self.stepped: set[str] = set()  # optimizers whose step graph was found
        self.names: set[str] = set()
        self.steps = 0  # recorded backwards
        self.busy = False  # inside a recorded backward
        self.read_watch: Optional[Any] = None  # launcher_reads.ReadWatch, while installed
        self.read_since_call: set[str] = set()  # names read since the last graph call
        self.untranslated: list[str] = []  # the last write's x_untranslated
        self.stopped: Optional[str] = None
        self.unrecorded: dict[str, int] = {}
        self.checkpoint_actions = 0
        self.bytes_per_action = float(FIRST_BYTES_PER_ACTION)
        # A FIFO, a device or `-` takes one trace: the final one, no checkpoints.
        self.rewritable = path != "-" and (not os.path.exists(path) or os.path.isfile(path))

    # -- lifetime ------------------------------------------------------------

    def install(self) -> None:
        from .launcher_reads import ReadWatch, supported

        self.hooks.install()
        self.observer.install()
        if supported():
            self.read_watch = ReadWatch(self._reads)
            self.read_watch.__enter__()
        else:
            self.session.notes.append("reads not recorded: this release's TorchDispatchMode has no "
                                      "ignore_compile_internals (2.11 on)")

    def uninstall(self) -> None:
        if self.read_watch is not None:
            from .launcher_reads import pop_or_mute

            pop_or_mute(self.read_watch)
            self.read_watch = None
        self.observer.uninstall()
        self.hooks.uninstall()

    def _reads(self, func: Any, tensors: list) -> None:
        """The script's op `func` read `tensors`: a `read` of each that is a
        bound output of a compiled graph, once between two graph calls
        (launcher_reads.py). Not inside a graph's call or a backward."""
        s = self.session
        if not self.live() or self.busy or s.closed or getattr(s.tls, "tree_runs", None) is not None:
            return
        for t in tensors:
            # (By memory and layout too: AOTAutograd's wrappers hand the
            # script a detached alias of the graph's output, not the object.)
            for e in s.registry.entries(t):
                if e.kind == "output" and not e.dropped and e.name not in self.read_since_call:
                    self.read_since_call.add(e.name)
                    s.action("read", {"name": e.name}, note=f"read {e.name}")

    def live(self) -> bool:
        return self.stopped is None

    def write(self) -> int:
        """The whole trace, as it stands, at `path` (temporary, then rename).
        Returns its size in bytes."""
        from .cudagraph_recorder import write_session

        from .recorder import torch_config

        config = torch_config()
        if self.device.type != "cuda":
            # No CUDA device: Inductor handed no graph to a tree, so capsim
            # runs each compiled graph without one, as the CPU form says.
            config["cudagraphs"] = False
        counts = write_session(self.session, self.path, self.name, self.device, command=self.command,
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
        from .recording import called_by_torch

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

    def after_step(self) -> None:
        self.steps += 1
        if self.rewritable and len(self.session.items) >= 2 * max(1, self.checkpoint_actions):
            self.write()

    def skip(self, kind: str) -> None:
        self.unrecorded[kind] = self.unrecorded.get(kind, 0) + 1

    def untranslated_line(self) -> Optional[str]:
        """Said when some graph used an op capsim cannot express: the trace
        then has no function lines and no calls (cudagraph_session.plan)."""
        if not self.untranslated:
            return None
        return (f"capsim_recorder: no compiled calls in the trace: its graphs use "
                f"{len(self.untranslated)} op(s) capsim cannot express: {', '.join(self.untranslated)} "
                f"(the header's x_untranslated; traces/torch/README.md lists the ops it can)")

    def unrecorded_line(self) -> Optional[str]:
        if not self.unrecorded:
            return None
        parts = [f"{n} {kind}" for kind, n in sorted(self.unrecorded.items())]
        return f"capsim_recorder: not in the trace: {', '.join(parts)} ({self.path})"

    def notes_line(self) -> list[str]:
        notes = list(dict.fromkeys(self.session.notes))
        if not notes:
            return []
        return [f"capsim_recorder: {len(notes)} notes in the trace's x_notes, first: {notes[0]}"]

    # -- names ---------------------------------------------------------------

    def _unique(self, name: str) -> str:
        base, n = name, 2
        while name in self.names or name in self.session.registry.names:
            name = f"{base}{n}"
            n += 1
        self.names.add(name)
        return name

    def _name_parameter(self, t: Any) -> Optional[str]:
        """The session's on_unnamed: an nn.Parameter becomes a parameter of
        the trace; anything else is left to the session (`t<k>`)."""
        if not isinstance(t, torch.nn.Parameter):
            return None
        from .launcher_optimizer import _module_names

        return self._new_parameter(t, _module_names(sys._getframe(1)))

    def _new_parameter(self, p: Any, module_names: dict[int, str]) -> str:
        """`p`'s new_tensor parameter=true, named after the module attribute
        that holds it (`module_names`: launcher_optimizer._module_names)."""
        return self.rec.param(self._unique(module_names.get(id(p)) or "p"), p)

    # -- what the wraps report -------------------------------------------------

    def backward(self, run: Callable[[], Any]) -> Any:
        self.busy = True
        try:
            return self.rec.run_backward(run)
        finally:
            self.busy = False
            self.after_step()

    def created(self, opt: Any) -> None:
        from .launcher_optimizer import _module_names, _params, _variable_name
        from .optimizer_recorder import STATE_KEYS

        kind = type(opt).__name__.lower()
        if kind not in STATE_KEYS:
            self.skip(f"{type(opt).__name__} optimizers (capsim models SGD, Adam, AdamW)")
            return
        frame = sys._getframe(1)
        module_names = _module_names(frame)
        params = []
        for p in _params(opt):
            params.append(self.session.registry.lookup(p) or self._new_parameter(p, module_names))
        opt_name = self._unique(_variable_name(opt, frame) or "opt")
        self.rec.create_optimizer(opt_name, opt, params)
        self.optimizer_refs.append((weakref.ref(opt), opt_name, kind))

    def _graph_call(self, g: Any, inputs: Any) -> None:
        """The session's on_graph_call. A graph whose first call takes one
        followed optimizer's params, grads and state (by identity, as
        launcher_optimizer.py finds steps), and reads a grad, is its
        compiled step: capsim's optimizer_step, once per call."""
        from .launcher_optimizer import _params, _reads_a_grad
        from .optimizer_recorder import capsim_order, step_compile_fields

        self.read_since_call.clear()
        compile_event = None
        if g.calls == 0 and g.builtin is None and g.mode != "backward":
            for ref, name, kind in self.optimizer_refs:
                opt = ref()
                mapping = capsim_order(opt, kind, inputs) if opt is not None else None
                if not mapping or not _reads_a_grad(opt, mapping):
                    continue
                if name in self.stepped:
                    self.session.notes.append(f"{name}: a second graph of its step (a graph break?),"
                                              f" written as a graph of its own")
                    break
                self.stepped.add(name)
                self.session.make_step(g, name)
                with_grad = [p.grad is not None for p in _params(opt)]
                compile_event = step_compile_fields(name, with_grad, g.static_input_idxs, mapping)
                break
        if g.builtin is not None:  # (only make_step sets it in this form)
            self.session.action("optimizer_step", {"name": g.builtin})
            if compile_event is not None and not g.cudagraphed:
                # A tree announces the step's compile when it binds the graph
                # (cudagraph_events.py); a graph no tree takes has only this.
                self.session.event("compile", compile_event)

    def zero_grad(self, opt: Any, set_to_none: bool) -> None:
        name = next((n for ref, n, _kind in self.optimizer_refs if ref() is opt), None)
        if name is not None:
            self.session.action("zero_grad", {"name": name, "set_to_none": bool(set_to_none)})

    def marked(self, t: Any, guard: bool) -> None:
        fields: dict = {"name": self.session.name_of(t)}
        if guard:
            fields["guard"] = True
        self.session.action("mark_static", fields)

    def step_begin(self) -> None:
        self.session.action("mark_step_begin", {})


# -- the wraps -------------------------------------------------------------------

_active: Optional[CudagraphRecording] = None


def _idle(recording: Optional[CudagraphRecording]) -> bool:
    return recording is None or not recording.live() or torch.compiler.is_compiling()


def _patched_backward(original: Any) -> Any:
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        call = functools.partial(original, self, gradient, retain_graph, create_graph, inputs)
        r = _active
        if _idle(r) or r.busy or self.grad_fn is None or not r.wants():
            return call()
        return r.backward(call)

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_autograd_backward(original: Any) -> Any:
    from .recording import _one_root

    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                 grad_variables=None, inputs=None):
        call = functools.partial(original, tensors, grad_tensors, retain_graph, create_graph,
                                 grad_variables, inputs)
        r = _active
        if _idle(r) or r.busy:
            return call()
        one = _one_root(tensors, grad_tensors)
        if one is None:
            r.skip("backwards with several roots (calls written, grads not followed)")
            return call()
        if getattr(one[0], "grad_fn", None) is None or not r.wants():
            return call()
        return r.backward(call)

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _patched_grad(original: Any) -> Any:
    from .recording import called_by_torch

    def grad(*args, **kwargs):
        r = _active
        if not _idle(r) and not r.busy and not called_by_torch(sys._getframe(1)):
            r.skip("torch.autograd.grad calls")
        return original(*args, **kwargs)

    grad.__wrapped__ = original  # type: ignore[attr-defined]
    return grad


def _patched_optimizer_init(original: Any) -> Any:
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        r = _active
        if not _idle(r):
            r.created(self)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


def _patched_zero_grad(original: Any) -> Any:
    def zero_grad(self, set_to_none: bool = True):
        r = _active
        if not _idle(r):
            r.zero_grad(self, set_to_none)
        return original(self, set_to_none)

    zero_grad.__wrapped__ = original  # type: ignore[attr-defined]
    return zero_grad


def _patched_mark_static_address(original: Any) -> Any:
    """With the release's own default for `guard` (True up to 2.9, False
    from 2.11), as the CPU form's wrap."""
    import inspect

    default = inspect.signature(original).parameters["guard"].default

    def mark_static_address(t, guard=default):
        r = _active
        if not _idle(r):
            r.marked(t, guard)
        return original(t, guard=guard)

    mark_static_address.__wrapped__ = original  # type: ignore[attr-defined]
    return mark_static_address


def _patched_mark_step_begin(original: Any) -> Any:
    def cudagraph_mark_step_begin():
        r = _active
        if not _idle(r):
            r.step_begin()
        return original()

    cudagraph_mark_step_begin.__wrapped__ = original  # type: ignore[attr-defined]
    return cudagraph_mark_step_begin


def _patch_targets() -> list[tuple[Any, str, Any]]:
    return [
        (torch.optim.Optimizer, "__init__", _patched_optimizer_init),
        (torch.optim.Optimizer, "zero_grad", _patched_zero_grad),
        (torch._dynamo, "mark_static_address", _patched_mark_static_address),
        (torch.compiler, "cudagraph_mark_step_begin", _patched_mark_step_begin),
        (torch.Tensor, "backward", _patched_backward),
        (torch.autograd, "backward", _patched_autograd_backward),
        (torch.autograd, "grad", _patched_grad),
    ]


@contextlib.contextmanager
def record_cudagraphs(path: str, *, max_steps: Optional[int], max_bytes: int, name: str,
                      command: Optional[str]) -> Iterator[CudagraphRecording]:
    """The body of record(cudagraphs=True) (recording.py checks the
    arguments and that no other recording runs)."""
    global _active
    from .cudagraph_recorder import _config_patches
    from .recording import _patched

    assert _active is None, "record() lets one recording run at a time"
    recording = CudagraphRecording(path, name, max_steps, max_bytes, command)
    if recording.rewritable:
        recording.write()  # a valid trace from the start; a bad path fails here
    error: Optional[BaseException] = None
    _active = recording
    try:
        with _config_patches(), _patched(_patch_targets()):
            try:
                recording.install()
                yield recording
            except BaseException as e:
                error = e
                raise
            finally:
                recording.finish(error)
    finally:
        _active = None
