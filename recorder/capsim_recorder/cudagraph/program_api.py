"""The program API of a cudagraph recording: what a built-in program
(programs.py) calls instead of the plain PyTorch statements it stands for,
so that the trace holds the action (in capsim's vocabulary) next to the real
statement; the launcher (launcher/cudagraphs.py) drives the same API from
the wraps of the plain statements.

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
eager_call actions).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any, Callable, Optional, Sequence

import torch

from .. import torch_compat
from ..optimizer.fields import optimizer_fields
from .observer import TreeObserver
from .session import Session, strided_fields


class CudagraphRecorder:
    """What a cudagraph program gets (`rec`): actions next to the statements."""

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
        fields = self.session.new_tensor_fields(name, p.shape, p.dtype)
        self.session.action("new_tensor", {**fields, "parameter": True})
        self.session.registry.bind(p, name, "param")
        self._params[name] = weakref.ref(p)
        return name

    def tensor(self, name: str, t: torch.Tensor) -> torch.Tensor:
        self.session.action("new_tensor", self.session.new_tensor_fields(name, t.shape, t.dtype))
        self.session.registry.bind(t, name, "input")
        return t

    def mark_static(self, name: str, t: torch.Tensor, guard: bool = False) -> None:
        fields: dict = {"name": name}
        if guard:
            fields["guard"] = True
        self.session.action("mark_static", fields)
        torch_compat.mark_static_address(t, guard=guard)

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
        calls = self.session.calls
        calls.graph_calls = []
        calls.in_backward = True
        before = self._grad_states()
        try:
            result = run()
        finally:
            calls.in_backward = False
        self._accumulate(before)
        return result

    def _grad_states(self) -> dict:
        """Per parameter, what its grad is before a backward: None, or the
        grad's identity and version (an eager accumulation bumps it)."""
        out = {}
        for name, ref in self._params.items():
            p = ref()
            g = None if p is None else p.grad
            out[name] = None if g is None else (id(g), g._version)
        return out

    def _accumulate(self, before: dict) -> None:
        s = self.session
        params = {n: r() for n, r in self._params.items() if r() is not None}
        done: set[str] = set()
        transient: list[str] = [o for _g, _a, outs in s.calls.graph_calls for o in outs if o]
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
            if name not in done and p.grad is not None:
                self._eager_grad(name, p, before.get(name))

    def _eager_grad(self, name: str, p: torch.Tensor, was: Optional[tuple]) -> None:
        """A grad the eager autograd engine made or added into (a parameter
        used outside every compiled graph): a fresh tensor of its metadata,
        accumulated into the parameter as the engine did, then dropped."""
        g = p.grad
        if was is not None and was == (id(g), g._version):
            return  # untouched by this backward
        s = self.session
        temp = f"{name}_eager_grad{s.auto}"
        s.auto += 1
        fields = s.new_tensor_fields(temp, g.size(), g.dtype)
        fields.update(strided_fields(g, fields["sizes"]))
        s.action("new_tensor", fields, note=f"new_tensor {temp} (the eager engine's grad of {name})")
        s.action("accumulate_grad", {"param": name, "grad": temp})
        s.action("del", {"name": temp}, note=f"del {temp}")
        s.registry.bind(g, f"{name}.grad", "grad")

    def _accumulate_grads(self, params: dict, done: set) -> None:
        s = self.session
        for g, _args, out_names in s.calls.graph_calls:
            fwd = s.calls.last_forward_call.get(g.local_id)
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
        fields = optimizer_fields(name, opt, params)
        self.session.action("create_optimizer", fields)
        self.session.table.optimizers[name] = (weakref.ref(opt), list(params), fields["kind"])

    def optimizer_step(self, name: str, step: Callable[[], Any]) -> None:
        s = self.session
        s.action("optimizer_step", {"name": name})
        previous = s.table.builtin
        s.table.builtin = name
        try:
            step()
        finally:
            s.table.builtin = previous

    def zero_grad(self, name: str, opt: torch.optim.Optimizer, set_to_none: bool) -> None:
        self.session.action("zero_grad", {"name": name, "set_to_none": bool(set_to_none)})
        opt.zero_grad(set_to_none=set_to_none)

    def drop_optimizer(self, name: str) -> None:
        """After the program dropped its references (the optimizer and the
        compiled step that closes over it)."""
        self.session.action("drop_optimizer", {"name": name})
        gc.collect()
