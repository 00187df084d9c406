"""The compiled optimizer of any script, recorded under record() (recording.py)
in the actions optimizer/recorder.py's programs write by hand, so that
`capsim replay` compares the same events (optimizer, compile, zero_grad) with
capsim's optimizer model (docs/cudagraph-trees.md section 6).

How a step is found without any recorder call in the script:
- every `torch.optim` optimizer made while recording is a candidate (weakly
  held; SGD, Adam and AdamW, the kinds capsim models);
- `torch.compile(fn)` of a function (not of an nn.Module) returns a wrapper
  that delimits each call of the compiled function;
- every Inductor graph's call is matched by identity against each candidate's
  params, grads and state (optimizer/fields.capsim_order). A compiled call
  whose matched graphs all belong to one optimizer, and read at least one of
  its grads, is that optimizer's step. A forward graph reads no grads, so it
  is never taken for a step.

An optimizer is written into the trace when its first compiled step is
found, with what holds just before that step: `new_tensor` per param not in
the trace yet (params.py's table, shared with the grad clears; named
after the nn.Module attribute that holds it when a frame of the script has
one: `model_0_weight`; `p<k>` otherwise), `create_optimizer`, one
`accumulate_grad` per param that has a grad, and `mark_static` for each grad
the script marked. From then on the trace follows it: grads that a backward
(or anything else) made or changed, `zero_grad` calls, `mark_static_address`
of its params and grads, and each compiled step.

Not followed, and counted on stderr at the end: optimizers of other kinds,
compiled calls that step several optimizers; a grad replaced by a new tensor
(`p.grad = t`) is written as an accumulation (capsim's AccumulateGrad adds in
place). Eager steps (`opt.step()` not compiled) are not capsim's model and
are not written; an optimizer only ever stepped eagerly never appears, and
its `zero_grad` (as any optimizer's before its first compiled step) is a
grad clear of its params (clear_grads, params.py).
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .. import torch_compat
from ..optimizer.fields import (STATE_KEYS, capsim_order, optimizer_fields, write_compile_events,
                                write_traced_event)
from .params import ParamTable, Tracked, clear_grads, grad_key
from .script_names import module_names, variable_name

# The most optimizers one recording follows (a limit on everything).
MAX_OPTIMIZERS = 64


@dataclass
class Followed:
    """An optimizer written into the trace: its params (params.Tracked, in
    param_groups order, with what the trace last said of each one's grad)."""
    name: str
    ref: Any  # weakref to the optimizer
    params: list[Tracked]
    traced: bool = False


@dataclass
class CompiledCall:
    """What one call of a torch.compile'd function saw."""
    compiles: list[tuple[list[int], list]] = field(default_factory=list)  # (static, [first match])
    matched: set[int] = field(default_factory=set)  # ids of optimizers whose graphs ran


def optimizer_params(opt: Any) -> list[Any]:
    return [p for group in opt.param_groups for p in group["params"]]


class OptimizerWatch:
    """Owned by a RecordingSession. `live()` says whether the recording still
    writes (its limits); the writer is the session's TraceWriter."""

    def __init__(self, writer: Any, live: Callable[[], bool]) -> None:
        self.writer = writer
        self.live = live
        self.candidates: list[Any] = []  # weakrefs to optimizers made while recording
        self.followed: dict[int, Followed] = {}  # id(optimizer) -> what the trace knows
        self.call: Optional[CompiledCall] = None
        self.skipped: dict[str, int] = {}
        self.table = ParamTable(writer, self._skip)  # the params in the trace (params.py)

    # -- what the wraps report -------------------------------------------------------

    def created(self, opt: Any) -> None:
        kind = type(opt).__name__.lower()
        if kind not in STATE_KEYS:
            self._skip(f"{type(opt).__name__} optimizers (capsim models SGD, Adam, AdamW)")
            return
        self.candidates = [r for r in self.candidates if r() is not None]
        if len(self.candidates) >= MAX_OPTIMIZERS:
            self._skip(f"optimizers past the first {MAX_OPTIMIZERS}")
            return
        self.candidates.append(weakref.ref(opt))

    def graph_called(self, inputs: Any) -> Optional[tuple[int, dict[int, int]]]:
        """An Inductor graph's call: (id of the optimizer, Inductor position ->
        capsim index) when its inputs are that optimizer's, else None."""
        if self.call is None:
            return None
        for ref in self.candidates:
            opt = ref()
            if opt is None:
                continue
            mapping = capsim_order(opt, type(opt).__name__.lower(), inputs)
            if mapping and reads_a_grad(opt, mapping):
                self.call.matched.add(id(opt))
                return id(opt), mapping
        return None

    def on_compiled(self, static: list[int]) -> Callable[[Any], None]:
        """An Inductor compile (optimizer/recorder.inductor_hooks): its
        static input indices, and what each call of its graph reports."""
        first: list = []  # the first call's match: ints only, no references kept
        if self.call is not None:
            self.call.compiles.append((static, first))

        def on_call(inputs: Any) -> None:
            match = self.graph_called(inputs)
            if not first and self.call is not None:
                first.append(match)

        return on_call

    def begin_call(self) -> Optional[tuple]:
        """Before a call of a torch.compile'd function: what end_call needs,
        or None when the call is not watched (nested, or no longer recording)."""
        if self.call is not None or not self.live():
            return None
        self.synced_all()
        before = {id(opt): [grad_key(p) for p in optimizer_params(opt)]
                  for opt in (r() for r in self.candidates) if opt is not None}
        statics = {key: self._marked_grads(key) for key in before}
        failures_before = sum(len(v) for v in torch_compat.guard_failures().values())
        self.call = CompiledCall()
        return before, statics, failures_before

    def end_call(self, state: tuple, ran: bool) -> None:
        """After it (`ran`: it returned): writes it when it was a step."""
        call, self.call = self.call, None
        if call is None or not ran:
            return
        before, statics, failures_before = state
        failures = [r for v in torch_compat.guard_failures().values() for r in v][failures_before:]
        if len(call.matched) > 1:
            self._skip("compiled calls that stepped several optimizers")
        elif call.matched:
            key = next(iter(call.matched))
            self._step(key, before.get(key), statics.get(key, []), call, failures)

    def synced_all(self) -> None:
        """After a backward: the grads it made or changed."""
        if not self.live():
            return
        for key, followed in list(self.followed.items()):
            if followed.ref() is None:
                del self.followed[key]
            else:
                self._sync(followed)

    def follows(self, opt: Any) -> bool:
        """Whether `opt` is in the trace (its first compiled step found): its
        zero_grad is then zero_grad, any other optimizer's a grad clear."""
        followed = self.followed.get(id(opt))
        return followed is not None and followed.ref() is opt

    def zero_grad(self, opt: Any, set_to_none: bool) -> Callable[[], None]:
        """Before opt.zero_grad(set_to_none); returns what to do after it."""
        followed = self.followed.get(id(opt))
        if followed is None or followed.ref() is not opt or not self.live():
            return lambda: None
        self._sync(followed)
        changed = sum(1 for p in optimizer_params(opt) if p.grad is not None)
        index = self.writer.action("zero_grad", {"name": followed.name,
                                                 "set_to_none": bool(set_to_none)})
        # (Known before it runs: the action and its event go out together.)
        self.writer.event(index, "zero_grad", {"name": followed.name,
                                               "set_to_none": bool(set_to_none),
                                               "grads": changed})

        def after() -> None:
            for t in followed.params:
                self.table.resynced(t)

        return after

    def clear_grads(self, name: Optional[str], params: list, set_to_none: bool,
                    frame: Any) -> Callable[[], None]:
        """Before the script's `module.zero_grad(set_to_none)` or an
        unfollowed optimizer's `opt.zero_grad(set_to_none)` (`name`: the
        module's or the optimizer's variable), or `p.grad = None` (name
        None: p's own name);
        returns what to do after it (params.clear_grads)."""
        if not self.live() or self.call is not None:
            return lambda: None
        names = module_names(frame)
        if name is None:
            name = self.table.declare(params[0], names.get(id(params[0])) or "p").name
        return clear_grads(self.table, name, params, names, set_to_none)

    def marked(self, t: Any, guard: bool) -> None:
        """After mark_static_address(t, guard) of a followed param or grad
        (not inside a compiled call, where Dynamo marks what it traces)."""
        if self.call is not None or not self.live():
            return
        for followed in self.followed.values():
            for tracked in followed.params:
                p = tracked.ref()
                if p is None:
                    continue
                if t is p.grad:
                    self._sync(followed)
                    name = tracked.name + ".grad"
                elif t is p:
                    name = tracked.name
                else:
                    continue
                self.writer.action("mark_static", {"name": name, "guard": bool(guard)})
                return

    def unrecorded(self) -> dict[str, int]:
        return dict(self.skipped)

    # -- writing -------------------------------------------------------------------

    def _step(self, key: int, keys: Optional[list], marked: list[tuple[int, bool]],
              call: CompiledCall, failures: list[str]) -> None:
        """Writes a compiled step; `keys` are its params' grads just before it."""
        opt = next((r() for r in self.candidates if id(r()) == key), None)
        if opt is None or keys is None:
            return
        with_grad = [k is not None for k in keys]
        followed = self.followed.get(key)
        if followed is None or followed.ref() is not opt:
            followed = self._follow(opt, keys, marked)
        index = self.writer.action("optimizer_step", {"name": followed.name})
        compiles = [(static, first[0][1]) for static, first in call.compiles
                    if first and first[0] is not None and first[0][0] == key]
        if compiles and not followed.traced:
            followed.traced = True
            write_traced_event(self.writer, index, followed.name, opt)
            failures = []  # the first trace is no recompile
        for k, (static, mapping) in enumerate(compiles):
            write_compile_events(self.writer, index, followed.name, with_grad, static, mapping,
                                 failures if k == 0 else [])

    def _follow(self, opt: Any, keys: list, marked: list[tuple[int, bool]]) -> Followed:
        """Writes the optimizer as it stood before its first compiled step:
        its params (those not in the trace yet), itself, their grads and the
        grads the script marked."""
        params = optimizer_params(opt)
        frame = sys._getframe(1)
        names = module_names(frame)
        opt_name = self.table.unique(variable_name(opt, frame) or "opt")
        tracked = [self.table.declare(p, names.get(id(p)) or f"{opt_name}_p{k}")
                   for k, p in enumerate(params)]
        fields = optimizer_fields(opt_name, opt, [t.name for t in tracked])
        index = self.writer.action("create_optimizer", fields)
        self.writer.event(index, "optimizer", {"name": opt_name, "what": "created",
                                               "kind": fields["kind"], "params": len(params)})
        followed = Followed(opt_name, weakref.ref(opt), tracked)
        self.followed[id(opt)] = followed
        self._sync(followed, keys)
        for k, guard in marked:
            self.writer.action("mark_static", {"name": tracked[k].name + ".grad", "guard": guard})
        return followed

    def _sync(self, followed: Followed, keys: Optional[list] = None) -> None:
        """Writes an accumulate_grad for each param whose grad the trace does
        not know yet (new, or changed in place since). `keys`: the grads as
        they were before a step ran, instead of as they are now."""
        for k, tracked in enumerate(followed.params):
            self.table.sync(tracked, keys[k] if keys is not None else None, use_now=keys is not None)

    # -- names -----------------------------------------------------------------------

    def _marked_grads(self, key: int) -> list[tuple[int, bool]]:
        opt = next((r() for r in self.candidates if id(r()) == key), None)
        out = []
        for k, p in enumerate(optimizer_params(opt) if opt is not None else []):
            kind = torch_compat.static_address_type(p.grad) if p.grad is not None else None
            if kind is not None:
                out.append((k, kind == "guarded"))
        return out

    def _skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1


def reads_a_grad(opt: Any, mapping: dict[int, int]) -> bool:
    n = sum(1 for p in optimizer_params(opt) if p.grad is not None)
    return any(n <= i < 2 * n for i in mapping.values())
