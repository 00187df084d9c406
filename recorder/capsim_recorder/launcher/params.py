"""The parameters the CPU form of record() (recording.py) has written into
its trace, and what the trace last said of each one's grad; shared by the
optimizer watch (optimizer.py) and the grad clears (`model.zero_grad()`,
`p.grad = None`, an unfollowed optimizer's `opt.zero_grad()`: clear_grads,
below).

A parameter is written once (`new_tensor`, `parameter: true`, named after
the nn.Module attribute that holds it in a frame of the script,
script_names.module_names); its grad is said to the trace by `new_tensor`,
`accumulate_grad` and `del` of a fresh `_grad<k>` whenever the trace does
not know it yet (new, or changed in place since), before anything the trace
models reads it (a compiled optimizer step, zero_grad, clear_grads).

clear_grads (docs/trace-format.md section 5): `model.zero_grad(set_to_none)`
is `{"name": the module's variable, "params": its parameters,
"set_to_none"}` (`opt.zero_grad(set_to_none)` of an optimizer the trace
does not follow: the same, with the optimizer's variable and params),
`p.grad = None` is `{"name": p's name, "params": [p's name],
"set_to_none": true}`; each with the event zero_grad {name, set_to_none,
grads: how many of them had a grad}, as opt.zero_grad gives.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .. import dtypes, torch_compat


@dataclass
class Tracked:
    """A parameter in the trace: its name, a weak reference, and its grad as
    the trace last said it ((id of the grad, its version), or None)."""
    name: str
    ref: Any
    synced: Optional[tuple[int, int]] = None


def grad_key(p: Any) -> Optional[tuple[int, int]]:
    g = p.grad
    return None if g is None else (id(g), torch_compat.tensor_version(g))


class ParamTable:
    """The trace's parameters, by identity. `writer`: the TraceWriter;
    `skip(what)` counts what is not written faithfully."""

    def __init__(self, writer: Any, skip: Callable[[str], None]) -> None:
        self.writer = writer
        self.skip = skip
        self.by_id: dict[int, Tracked] = {}
        self.names: set[str] = set()
        self.fresh = 0

    def unique(self, name: str) -> str:
        base, n = name, 2
        while name in self.names:
            name = f"{base}{n}"
            n += 1
        self.names.add(name)
        return name

    def get(self, p: Any) -> Optional[Tracked]:
        tracked = self.by_id.get(id(p))
        if tracked is not None and tracked.ref() is p:
            return tracked
        return None

    def declare(self, p: Any, name: str) -> Tracked:
        """`p` in the trace: its new_tensor the first time (named `name`,
        made unique), the same entry after."""
        tracked = self.get(p)
        if tracked is None:
            tracked = Tracked(self.unique(name), weakref.ref(p))
            self.by_id[id(p)] = tracked
            fields = dtypes.new_tensor_fields(tracked.name, p.shape, p.dtype)
            self.writer.action("new_tensor", {**fields, "parameter": True})
        return tracked

    def sync(self, tracked: Tracked, now: Optional[tuple[int, int]] = None,
             use_now: bool = False) -> None:
        """Writes an accumulate_grad when the trace does not know the grad
        yet (new, or changed in place since). `use_now`: the grad as it was
        (`now`: before a step ran), instead of as it is."""
        p = tracked.ref()
        if not use_now:
            now = grad_key(p) if p is not None else None
        if p is None or now is None or now == tracked.synced:
            return
        if tracked.synced is not None and tracked.synced[0] != now[0]:
            self.skip("grads replaced by a new tensor (written as an accumulation)")
        grad = f"_grad{self.fresh}"
        self.fresh += 1
        self.writer.action("new_tensor", dtypes.new_tensor_fields(grad, p.shape, p.dtype))
        self.writer.action("accumulate_grad", {"param": tracked.name, "grad": grad})
        self.writer.action("del", {"name": grad})
        tracked.synced = now

    def resynced(self, tracked: Tracked) -> None:
        """After something the trace models changed the grad (zero_grad)."""
        p = tracked.ref()
        tracked.synced = grad_key(p) if p is not None else None


# The most names one action's `params` holds (docs/trace-format.md section 5).
MAX_PARAMS = 256


def clear_grads(table: ParamTable, name: str, params: list, names: dict[int, str],
                set_to_none: bool) -> Callable[[], None]:
    """Before a clear of `params`' grads (`names`: script_names.module_names
    for the ones the trace does not have yet): the parameters and their
    grads said, then the clear_grads action with its zero_grad event (one
    per MAX_PARAMS parameters; the grads it finds are known before it runs).
    Returns what to do after the clear: the grads as they are then."""
    tracked = [table.declare(p, names.get(id(p)) or "p") for p in params]
    for t in tracked:
        table.sync(t)
    for k in range(0, max(1, len(params)), MAX_PARAMS):
        chunk = range(k, min(k + MAX_PARAMS, len(params)))
        fields = {"name": name, "params": [tracked[i].name for i in chunk],
                  "set_to_none": bool(set_to_none)}
        index = table.writer.action("clear_grads", fields)
        had = sum(1 for i in chunk if params[i].grad is not None)
        table.writer.event(index, "zero_grad", {"name": name, "set_to_none": bool(set_to_none),
                                                "grads": had})

    def after() -> None:
        for t in tracked:
            table.resynced(t)

    return after
