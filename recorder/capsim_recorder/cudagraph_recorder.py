"""A cudagraph program's recording session: what a program calls instead of
the plain PyTorch statements it stands for, so that the trace holds the
action (in capsim's vocabulary) next to the real statement.

  rec.params(module, ["w1", "w2"])   new_tensor parameter=true, per parameter
  rec.tensor("x", t)                 new_tensor (an input the program made)
  rec.mark_static("w1.grad", t)      torch._dynamo.mark_static_address + mark_static
  rec.mark_step_begin()              torch.compiler.cudagraph_mark_step_begin
  rec.backward(loss)                 loss.backward(); then accumulate_grad per
                                     parameter that got a grad, and del of the
                                     backward's outputs
  rec.create_optimizer("opt", opt, names), rec.optimizer_step("opt", step),
  rec.zero_grad("opt", opt, set_to_none), rec.drop_optimizer("opt")
  rec.reassign_data("w1", p, new)    p.data = new
  rec.read(t)                        reads t (t.sum().item()); an exception
                                     becomes an error event and None

Calls of compiled graphs need no statement: the hooks see them (call or
eager_call actions). `record_cudagraph_program` runs one program with the
hooks and the observer installed and writes its trace.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import traceback
import weakref
from typing import Any, Callable, Optional, Sequence

import torch

from .cudagraph_events import TreeObserver, skip_log_modules
from .cudagraph_hooks import CompileHooks
from .cudagraph_session import Session
from .recorder import PRODUCER, SEED, torch_config

COMMAND = "python -m capsim_recorder --cudagraphs --out build/torch-cudagraphs --program {name}"


class ProgramTimeout(Exception):
    pass


def device_description(device: torch.device) -> str:
    if device.type != "cuda":
        return str(device)
    try:
        name = torch.cuda.get_device_name(device)
        major, minor = torch.cuda.get_device_capability(device)
        return f"{name} (sm_{major}{minor}), CUDA runtime {torch.version.cuda}"
    except Exception as e:  # pragma: no cover - GPU only
        return f"cuda ({type(e).__name__})"


class CudagraphRecorder:
    def __init__(self, session: Session, observer: Optional[TreeObserver], device: torch.device) -> None:
        self.session = session
        self.observer = observer
        self.device = device
        self._params: dict[str, Any] = {}  # name -> weakref to the Parameter

    # -- tensors -------------------------------------------------------------

    def params(self, module: torch.nn.Module, names: Sequence[str]) -> list[str]:
        plist = list(module.parameters())
        if len(plist) != len(names):
            raise ValueError(f"{len(plist)} parameters, {len(names)} names")
        for name, p in zip(names, plist):
            self.param(name, p)
        return list(names)

    def param(self, name: str, p: torch.Tensor) -> str:
        """One parameter: new_tensor parameter=true, and its grads followed
        after each backward (accumulate_grad)."""
        self.session.action("new_tensor", {"name": name, "sizes": list(p.shape), "parameter": True})
        self.session.registry.bind(p, name, "param")
        self._params[name] = weakref.ref(p)
        return name

    def tensor(self, name: str, t: torch.Tensor) -> torch.Tensor:
        self.session.action("new_tensor", {"name": name, "sizes": list(t.shape)})
        self.session.registry.bind(t, name, "input")
        return t

    def mark_static(self, name: str, t: torch.Tensor, guard: bool = False) -> None:
        fields: dict = {"name": name}
        if guard:
            fields["guard"] = True
        self.session.action("mark_static", fields)
        torch._dynamo.mark_static_address(t, guard=guard)

    def mark_step_begin(self) -> None:
        self.session.action("mark_step_begin", {})
        torch.compiler.cudagraph_mark_step_begin()

    def reassign_data(self, name: str, p: torch.Tensor, new: torch.Tensor) -> None:
        self.session.action("reassign_data", {"name": name})
        p.data = new

    def read(self, t: torch.Tensor) -> Optional[float]:
        name = self.session.registry.lookup(t) or "?"
        self.session.action("read", {"name": name})
        try:
            return float(t.detach().float().sum().item())
        except RuntimeError as e:
            self.record_error(e)
            return None

    def record_error(self, e: BaseException) -> None:
        if getattr(e, "_capsim_recorded", False):
            return
        fields = (
            self.observer.error_fields(e, None)
            if self.observer is not None
            else {"exception": type(e).__name__, "message": str(e)}
        )
        self.session.event("error", fields)
        try:
            e._capsim_recorded = True  # type: ignore[attr-defined]
        except Exception:
            pass

    # -- backward ------------------------------------------------------------

    def backward(self, loss: torch.Tensor) -> None:
        self.run_backward(loss.backward)

    def run_backward(self, run: Callable[[], Any]) -> Any:
        """`run()` (a backward), then accumulate_grad for each parameter the
        compiled backward's outputs became the grad of."""
        s = self.session
        s.graph_calls = []
        s.in_backward = True
        try:
            result = run()
        finally:
            s.in_backward = False
        self._accumulate()
        return result

    def _accumulate(self) -> None:
        s = self.session
        params = {n: r() for n, r in self._params.items() if r() is not None}
        done: set[str] = set()
        transient: list[str] = [o for _g, _a, outs in s.graph_calls for o in outs if o]
        # The backward's outputs may be gone already (added into an existing
        # grad, then freed): keep their names until accumulate_grad used them.
        s.registry.held.update(transient)
        try:
            self._accumulate_grads(params, done)
        finally:
            s.registry.held = set()
        for out in transient:
            entry = s.registry.names.get(out)
            if entry is None or entry.dropped or entry.kind != "output":
                continue
            entry.dropped = True
            s.action("del", {"name": out}, note=f"del {out}")
        for name, p in params.items():
            if name not in done and p.grad is not None and s.graph_calls:
                if s.registry.lookup(p.grad) is None:
                    s.notes.append(f"{name}: got a grad no compiled backward output explains")

    def _accumulate_grads(self, params: dict, done: set) -> None:
        s = self.session
        for g, _args, out_names in s.graph_calls:
            fwd = s.last_forward_call.get(g.local_id)
            fwd_args = fwd[0] if fwd else []
            for k, out in enumerate(out_names):
                if out is None:
                    continue
                param = fwd_args[k] if k < len(fwd_args) else None
                if param not in params:
                    param = next(
                        (n for n, p in params.items() if p.grad is not None and s.registry.matches(out, p.grad)),
                        None,
                    )
                if param is None or param in done:
                    continue
                p = params[param]
                if p.grad is None:
                    s.notes.append(f"{param}: the backward output {out} did not become its grad")
                    continue
                s.action("accumulate_grad", {"param": param, "grad": out})
                done.add(param)
                # The grad is the output itself (stolen), or the earlier grad
                # it was added into: either way it is now `param.grad`.
                s.registry.bind(p.grad, f"{param}.grad", "grad")

    # -- optimizers ----------------------------------------------------------

    def create_optimizer(self, name: str, opt: torch.optim.Optimizer, params: Sequence[str]) -> None:
        from .optimizer_recorder import optimizer_fields

        fields = optimizer_fields(name, opt, params)
        self.session.action("create_optimizer", fields)
        self.session.optimizers[name] = (weakref.ref(opt), list(params), fields["kind"])

    def optimizer_step(self, name: str, step: Callable[[], Any]) -> None:
        s = self.session
        s.action("optimizer_step", {"name": name})
        previous = s.builtin
        s.builtin = name
        try:
            step()
        finally:
            s.builtin = previous

    def zero_grad(self, name: str, opt: torch.optim.Optimizer, set_to_none: bool) -> None:
        self.session.action("zero_grad", {"name": name, "set_to_none": bool(set_to_none)})
        opt.zero_grad(set_to_none=set_to_none)

    def drop_optimizer(self, name: str) -> None:
        """After the program dropped its references (the optimizer and the
        compiled step that closes over it)."""
        self.session.action("drop_optimizer", {"name": name})
        gc.collect()

    @contextlib.contextmanager
    def expect_error(self):
        """An exception inside becomes an error event, and the program goes on."""
        try:
            yield
        except Exception as e:
            self.record_error(e)


# -- one program -----------------------------------------------------------------


def _dealloc_prefix(manager_cls: Any) -> Optional[str]:
    """The part of PyTorch's E1 text before the stack trace, taken from
    PyTorch itself at run time (two renderings, their common prefix)."""
    fmt = getattr(manager_cls, "format_dealloc_msg", None)
    if fmt is None:
        return None
    try:
        a, b = fmt(None), fmt("capsim-sentinel")
    except Exception:
        return None
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    prefix = a[:n].strip()
    return prefix if len(prefix) >= 16 else None


def _block_counter():
    from torch._inductor import cudagraph_trees

    get_block_addrs = getattr(cudagraph_trees, "get_block_addrs", None)
    if get_block_addrs is None:
        return None

    def count(mgr: Any) -> Optional[int]:
        return len(get_block_addrs(mgr.cuda_graphs_thread_pool, live_only=True))

    return count


def _generation() -> Optional[int]:
    try:
        from torch._dynamo.mutation_guard import GenerationTracker

        return int(GenerationTracker.generation)
    except Exception:
        return None


def reset_state(seed: int) -> None:
    from torch._dynamo.utils import counters

    torch.compiler.reset()
    counters.clear()
    gc.collect()
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


@contextlib.contextmanager
def _alarm(seconds: Optional[int]):
    """A ProgramTimeout after `seconds` (main thread, POSIX only); PyTorch
    code that does not return to Python is cut by the caller's own timeout."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum, frame):
        raise ProgramTimeout(f"the program ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _config_patches(program_config: Optional[dict] = None):
    """Fresh compiles every run: no FX graph cache or AOTAutograd cache hit
    may skip the compile hooks (a cache hit of the latter bypasses Inductor's
    compile entirely). Plus the program's own Inductor settings."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    stack = contextlib.ExitStack()
    stack.enter_context(inductor_config.patch({"fx_graph_cache": False}))
    if program_config:
        stack.enter_context(inductor_config.patch(dict(program_config)))
    if hasattr(functorch_config, "enable_autograd_cache"):
        stack.enter_context(functorch_config.patch({"enable_autograd_cache": False}))
    return stack


def make_observer(session: Session, dev: torch.device) -> TreeObserver:
    """The tree manager's observer for one recording, feeding `session`
    (not installed yet)."""
    from torch._inductor import cudagraph_trees

    return TreeObserver(
        session,
        cudagraph_trees.CUDAGraphTreeManager,
        cudagraph_trees.CUDAGraphNode,
        skip_log_modules=skip_log_modules(),
        get_block_count=_block_counter() if dev.type == "cuda" else None,
        dealloc_message_prefix=_dealloc_prefix(cudagraph_trees.CUDAGraphTreeManager),
    )


def record_cudagraph_program(program: Any, path: str, device: str = "cuda", timeout_s: Optional[int] = None,
                             log=None) -> dict:
    """Runs one program and writes its trace at `path`. Returns a summary:
    {"status": "recorded"|"exception", "error": text, "actions", "events",
    "functions", "untranslated", "notes"}. A trace is written even when the
    program raised (up to that point, with an error event)."""
    from torch._inductor import compile_fx

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dev = torch.device(device)
    reset_state(SEED)
    session = Session(program.name, generation_fn=_generation)
    hooks = CompileHooks(session, compile_fx)
    observer = make_observer(session, dev)
    rec = CudagraphRecorder(session, observer, dev)
    summary: dict = {"status": "recorded", "error": None}
    hooks.install()
    observer.install()
    try:
        with _config_patches(getattr(program, "inductor_config", None)), _alarm(timeout_s):
            try:
                program.run(rec)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
            except BaseException as e:  # noqa: BLE001 - the trace records whatever stopped the program
                rec.record_error(e)
                summary["status"] = "exception"
                summary["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                session.program_error = (type(e).__name__, str(e))
                log(f"{program.name}: {type(e).__name__}: {e}")
                log("".join(traceback.format_exception(type(e), e, e.__traceback__, limit=12)))
                if isinstance(e, KeyboardInterrupt):
                    raise
    finally:
        observer.uninstall()
        hooks.uninstall()
    session.notes.extend(hooks.failures)
    session.notes.extend(f"observer: {f}" for f in observer.failures[:20])
    if len(observer.failures) > 20:
        session.notes.append(f"observer: {len(observer.failures) - 20} more failures")
    counts = write_session(session, path, program.name, dev, getattr(program, "inductor_config", None))
    summary.update(counts)
    summary["notes"] = list(session.notes)
    # The next program starts from nothing: no tree manager, no compiled code.
    del rec
    try:
        reset_state(SEED)
    except Exception as e:  # pragma: no cover - GPU only
        log(f"{program.name}: reset after the program failed: {type(e).__name__}: {e}")
    return summary


def write_session(session: Session, path: str, name: str, device: torch.device,
                  inductor_config: Optional[dict] = None, command: Optional[str] = None,
                  config: Optional[dict] = None) -> dict:
    extensions = {
        "x_torch_version": torch.__version__,
        "x_device": device_description(device),
        "x_command": command or COMMAND.format(name=name),
    }
    if inductor_config:
        extensions["x_inductor_config"] = dict(inductor_config)
    return session.write(path, producer=PRODUCER, seed=SEED, config=config or torch_config(),
                         extensions=extensions)


def record_all(programs: dict, names: Sequence[str], out_dir: str, device: str,
               timeout_s: Optional[int], summary_path: Optional[str] = None) -> int:
    """Records each named program of `programs` (cudagraph_programs.PROGRAMS,
    passed in so that this module does not import the programs that import it)
    into out_dir/NAME.jsonl; one line per program in summary_path (appended and
    flushed as each ends). Returns the number of programs that did not record
    cleanly."""
    os.makedirs(out_dir, exist_ok=True)
    bad = 0
    for name in names:
        path = os.path.join(out_dir, f"{name}.jsonl")
        print(f"{name}: recording", file=sys.stderr, flush=True)
        try:
            s = record_cudagraph_program(programs[name], path, device=device, timeout_s=timeout_s)
            if s["status"] == "recorded":
                line = (f"{name}: recorded, {s['actions']} actions, {s['events']} events, "
                        f"functions {s['functions']}")
                if s["untranslated"]:
                    line += f", untranslated {s['untranslated']}"
            else:
                bad += 1
                line = f"{name}: exception {s['error']} (trace written up to it, {s['events']} events)"
            if s.get("notes"):
                line += f", {len(s['notes'])} notes (x_notes)"
        except BaseException as e:  # noqa: BLE001 - one program must not stop the others
            bad += 1
            line = f"{name}: exception {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''} (no trace)"
            traceback.print_exc()
            if isinstance(e, KeyboardInterrupt):
                raise
        print(line, flush=True)
        if summary_path:
            with open(summary_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
    return bad
