"""Names of tensors in a cudagraph recording. capsim's actions name Python
objects; the registry maps live tensors to names, holding weak references
only (the recorder must not change what lives). A name lives while its
tensor's storage lives (the Python object may die earlier: autograd keeps
the tensor, not the object). No torch import at import time.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Optional

from .. import torch_compat
from .values import safe_ptr


@dataclass
class Entry:
    name: str
    kind: str  # param, input, output, auto, grad
    ref: Any = None  # weak reference to the Python object (identity lookups)
    sref: Any = None  # weak reference to its storage (liveness)
    sig: Any = None  # (data_ptr, sizes, strides, dtype) when bound
    dead: bool = False  # the storage died
    dropped: bool = False  # the name was dropped in the trace (del, consume, rebinding)

    def obj(self) -> Any:
        return self.ref() if self.ref is not None else None

    def expired(self) -> bool:
        if self.sref is not None:
            try:
                return bool(self.sref.expired())
            except Exception:
                return False
        return self.obj() is None


def storage_ref(t: Any) -> Any:
    """A weak reference to t's storage (PyTorch's StorageWeakRef, which the
    tree manager uses too), or None."""
    return torch_compat.storage_weak_ref(t)


def signature(t: Any) -> Any:
    try:
        return (safe_ptr(t), tuple(t.size()), tuple(t.stride()), str(t.dtype))
    except Exception:
        return None


# Which name a tensor with several goes by: the program's own first.
KIND_ORDER = {"param": 0, "grad": 1, "input": 2, "auto": 3, "output": 4}


class Registry:
    """Names of tensors. A name lives while its tensor's storage lives (the
    Python object may die earlier: autograd keeps the tensor, not the
    object); the registry holds weak references only."""

    def __init__(self) -> None:
        self._by_id: dict[int, list[Entry]] = {}
        self.names: dict[str, Entry] = {}
        self.held: set[str] = set()

    def bind(self, t: Any, name: str, kind: str) -> Entry:
        entry = Entry(name, kind)
        old = self.names.get(name)
        if old is not None:
            old.dropped = True
        try:
            entry.ref = weakref.ref(t)
        except TypeError:
            entry.ref = None
        entry.sref = storage_ref(t)
        entry.sig = signature(t)
        self._by_id.setdefault(id(t), []).append(entry)
        self.names[name] = entry
        return entry

    def live(self, e: Entry) -> bool:
        return not e.dropped and not e.dead and self.names.get(e.name) is e

    def entries(self, t: Any) -> list[Entry]:
        """The live names of t: the same object, or (if its object died) the
        same memory and layout."""
        found = [e for e in self._by_id.get(id(t), []) if self.live(e) and e.obj() is t]
        if found:
            return found
        sig = signature(t)
        if sig is None or sig[0] is None:
            return []
        return [e for e in self.names.values() if self.live(e) and e.sig == sig and not e.expired()]

    def outputs_sharing_storage(self, t: Any) -> list[Entry]:
        """The live output names whose storage t views (a view of another
        shape or offset, `out[0]`, that entries() does not match): reading
        t reads their memory."""
        sref = storage_ref(t)
        if sref is None:
            return []
        out = []
        for e in self.names.values():
            if e.kind != "output" or not self.live(e) or e.sref is None or e.expired():
                continue
            try:
                if e.sref == sref:
                    out.append(e)
            except Exception:
                continue
        return out

    def lookup(self, t: Any) -> Optional[str]:
        found = self.entries(t)
        if not found:
            return None
        best = min(range(len(found)), key=lambda i: (KIND_ORDER.get(found[i].kind, 9), -i))
        return found[best].name

    def matches(self, name: str, t: Any) -> bool:
        e = self.names.get(name)
        if e is None or not self.live(e):
            return False
        if e.obj() is t:
            return True
        return e.sig is not None and e.sig == signature(t) and not e.expired()

    def obj(self, name: str) -> Any:
        e = self.names.get(name)
        return e.obj() if e is not None and not e.dropped else None

    def poll(self) -> list[Entry]:
        """Names whose storage died since the last poll (params and grads
        excepted: capsim manages their lifetime itself; so are held names,
        which the caller drops itself)."""
        out = []
        for e in list(self.names.values()):
            if e.dropped or e.dead or e.kind in ("param", "grad") or e.name in self.held:
                continue
            if e.expired():
                e.dead = True
                out.append(e)
        return out

    def sweep(self) -> None:
        for name in [n for n, e in self.names.items() if e.dropped or e.dead]:
            del self.names[name]
        for key in [k for k, es in self._by_id.items() if all(e.dropped or e.dead for e in es)]:
            del self._by_id[key]
