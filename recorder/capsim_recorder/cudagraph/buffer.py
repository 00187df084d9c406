"""The cudagraph session's buffered actions and events.

A cudagraph trace's function lines must precede every action
(docs/trace-format.md section 1), while Inductor compiles a graph only at its
first call, in the middle of the program; so the actions (each with the
events that follow it) are buffered and written at the end, or at a
launcher's checkpoint. A named tensor that died is dropped here too: inside a
call whose argument it was, into that call's `consume`; otherwise as a `del`
action before the next action. No torch import.
"""

from __future__ import annotations

import threading

from .records import Item
from .registry import Registry


class ActionBuffer:
    """Actions in order, and the events no action preceded."""

    def __init__(self, registry: Registry, lock: threading.RLock) -> None:
        self.registry = registry
        self.lock = lock
        self.items: list[Item] = []
        self.orphan_events: list = []
        self.call_depth = 0  # inside a call's action: deaths wait for its end

    def mark(self) -> tuple:
        """Where the buffer stands, for rollback()."""
        with self.lock:
            last = len(self.items[-1].events) if self.items else 0
            return len(self.items), last, len(self.orphan_events)

    def rollback(self, mark: tuple) -> None:
        """Drops what was buffered since `mark` (a step the recorder failed
        half-way through leaves nothing of it)."""
        items, last, orphans = mark
        with self.lock:
            del self.items[items:]
            if self.items:
                del self.items[-1].events[last:]
            del self.orphan_events[orphans:]

    def append(self, item: Item) -> Item:
        self.items.append(item)
        return item

    def flush_deaths(self) -> None:
        """`del` for each name whose tensor died since the last action."""
        with self.lock:
            for e in self.registry.poll():
                e.dropped = True
                self.append(Item("del", {"name": e.name}, note=f"del {e.name}"))
            self.registry.sweep()

    def action(self, kind: str, fields: dict, note: str = "") -> Item:
        with self.lock:
            if self.call_depth == 0:
                self.flush_deaths()
            return self.append(Item(kind, dict(fields), note=note or kind))

    def event(self, kind: str, fields: dict) -> None:
        with self.lock:
            if self.items:
                self.items[-1].events.append((kind, dict(fields)))
            else:
                self.orphan_events.append((kind, dict(fields)))

    def settle_call_deaths(self, item: Item, args: list[str]) -> None:
        """Names that died during a call: its own arguments moved into it
        (consume); the others are dropped (del) right after it."""
        consumed = []
        for e in self.registry.poll():
            e.dropped = True
            if e.name in args and item.action == "call":  # eager_call has no consume
                if e.name not in consumed:
                    consumed.append(e.name)
            else:
                self.append(Item("del", {"name": e.name}, note=f"del {e.name}"))
        if consumed:
            item.fields["consume"] = consumed
        self.registry.sweep()
