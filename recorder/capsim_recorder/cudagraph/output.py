"""A cudagraph session's trace as written: the function lines of the
functions that were called, then the buffered actions with their events.

If any used graph has an op the translation does not cover, the trace has no
function lines and keeps only the actions that need none
(records.STANDALONE_ACTIONS); every event stays, moved onto the latest kept
action with `x_from` naming the dropped action, and the header lists the ops
(`x_untranslated`). No torch import.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import aten_translate
from ..trace_writer import MAX_NOTE_BYTES, MAX_NOTES, LineTooLong, TraceWriter
from .records import STANDALONE_ACTIONS, FunctionRecord, Item
from .values import OBSERVED_KINDS, drop_positions


def used_functions(table: Any) -> list[FunctionRecord]:
    return [f for f in table.functions.values() if f.called and not f.builtin]


def untranslated(table: Any) -> list[str]:
    reasons: list[str] = []
    for f in used_functions(table):
        if f.body is None or not f.body.ok or f.untranslated:
            reasons.extend(f.untranslated or ["no body"])
    return sorted(set(reasons))


def static_of(f: FunctionRecord) -> list[int]:
    """f's static_input_idxs in capsim's input order (SymInts dropped)."""
    if f.body is None:
        return []
    remap = drop_positions(f.body.int_positions)
    return sorted({j for j in (remap(i) for i in f.static_input_idxs) if j is not None})


def function_lines(table: Any) -> list[dict]:
    lines = []
    for f in used_functions(table):
        body = f.body
        line = {
            "function": f.name,
            "mode": f.mode,
            "inputs": list(body.inputs),
            "ops": list(body.ops),
            "outputs": list(body.outputs),
            "static_input_idxs": static_of(f),
            "param_input_idxs": sorted(f.param_input_idxs or []),
        }
        if f.stack_traces is not None and len(f.stack_traces) == len(body.outputs):
            line["stack_traces"] = list(f.stack_traces)
        muts = f.mutating_use_stack_traces
        if muts is not None and len(muts) == len(body.inputs):
            line["mutating_use_stack_traces"] = list(muts)
        lines.append(line)
    return lines


def observed_kinds(session: Any, config: dict) -> list[str]:
    """The header's `observes`: OBSERVED_KINDS, and the release's later
    kinds (session.extra_kinds: "demote" from 2.15) where a tree manager
    can run (not `"cudagraphs": false`), or where one was written."""
    kinds = list(OBSERVED_KINDS)
    written = {kind for it in session.items for kind, _ in it.events}
    for kind in getattr(session, "extra_kinds", ()):
        if kind not in kinds and (config.get("cudagraphs", True) is not False or kind in written):
            kinds.append(kind)
    return kinds


def plan(session: Any) -> tuple[list[dict], list[Item], list[str]]:
    """(function lines, items, untranslated op names) as they will be
    written: without function lines or the actions that need them when
    some graph did not translate."""
    session.buffer.flush_deaths()
    reasons = untranslated(session.table)
    items = list(session.buffer.items)
    if not reasons:
        return function_lines(session.table), items, []
    session.untranslated_reasons = reasons
    static_names = {it.fields.get("name") for it in items if it.action == "new_tensor"}
    kept: list[Item] = []
    for it in items:
        keep = it.action in STANDALONE_ACTIONS and (
            it.action in ("mark_step_begin",) or it.fields.get("name") in static_names
        )
        if keep and it.action == "new_tensor" and it.note.endswith("(made by PyTorch)"):
            keep = False
        if keep:
            kept.append(Item(it.action, it.fields, list(it.events), it.note))
            continue
        # (A compile event without a fid, of a graph no tree took, is the
        # call's own and goes with it; the tree's events stay.)
        moved = [(k, dict(f, x_from=it.note)) for k, f in it.events
                 if not (k == "compile" and "fid" not in f)]
        if kept:
            kept[-1].events.extend(moved)
        else:
            session.buffer.orphan_events.extend(moved)
    return [], kept, aten_translate.op_names(reasons)


def _extensions(session: Any, extensions: dict, untranslated_ops: list, extra_notes: list) -> dict:
    ext = dict(extensions)
    if untranslated_ops:
        ext["x_untranslated"] = untranslated_ops
        ext["x_untranslated_why"] = list(session.untranslated_reasons)
    if session.table.step_inputs:
        ext["x_step_inputs"] = {k: v for k, v in sorted(session.table.step_inputs.items())}
    if session.buffer.orphan_events:
        ext["x_events_before_any_action"] = len(session.buffer.orphan_events)
    notes = list(dict.fromkeys(list(session.notes) + list(extra_notes)))
    if notes:
        # (Within the header's line: at most MAX_NOTES, each cut at MAX_NOTE_BYTES.)
        kept = [n if len(n) <= MAX_NOTE_BYTES else n[:MAX_NOTE_BYTES] + "..." for n in notes[:MAX_NOTES]]
        if len(notes) > MAX_NOTES:
            kept.append(f"{len(notes) - MAX_NOTES} more notes")
        ext["x_notes"] = kept
    return ext


class Oversized(Exception):
    """A line of the trace over the format's limit: what it was (`key`) and
    the note that says it is left out."""

    def __init__(self, key: tuple, note: str) -> None:
        super().__init__(note)
        self.key = key
        self.note = note


def _leave_out(session: Any, o: Oversized) -> None:
    """Leaves the oversized line out of the next write: a function line
    makes its function untranslated (the trace keeps no calls); an action
    goes with its events; an event goes alone."""
    session.oversized.add(o.key)
    session.notes.append(o.note)
    if o.key[0] == "function":
        for f in used_functions(session.table):
            if f.name == o.key[1]:
                f.untranslated = list(f.untranslated) + [
                    f"line:{f.name} (its function line passes the trace format's line limit)"]


def write(session: Any, path: str, *, producer: str, seed: int, config: dict, extensions: dict,
          extra_notes: Optional[list] = None) -> dict:
    """Writes the trace (header, function lines, actions and their events);
    `extra_notes` join the session's notes in x_notes (the driver's
    failures). A line over the format's limit (docs/trace-format.md section
    8) is left out with a note (_leave_out), and the trace written again.
    Returns counts for the summary."""
    for _ in range(MAX_REWRITES):
        try:
            return _write_once(session, path, producer=producer, seed=seed, config=config,
                               extensions=extensions, extra_notes=extra_notes)
        except Oversized as o:
            _leave_out(session, o)
    raise LineTooLong(f"more than {MAX_REWRITES} lines over the format's limit")


# How many oversized lines one write leaves out before it gives up.
MAX_REWRITES = 16


def _write_once(session: Any, path: str, *, producer: str, seed: int, config: dict,
                extensions: dict, extra_notes: Optional[list]) -> dict:
    functions, items, untranslated_ops = plan(session)
    ext = _extensions(session, extensions, untranslated_ops, extra_notes or [])
    events = 0
    left_out = session.oversized
    with TraceWriter(path) as w:
        w.header(producer=producer, name=session.name, seed=seed, config=config,
                 observes=observed_kinds(session, config), extensions=ext)
        for f in functions:
            _line(w.function, (f,), ("function", f["function"]),
                  f"function {f['function']}: its line passes the trace format's limit; the"
                  " trace keeps no calls")
        for it in items:
            if ("action", id(it)) in left_out:
                continue
            index = _line(w.action, (it.action, it.fields), ("action", id(it)),
                          f"{it.note}: its action line passes the trace format's limit; left out"
                          " with its events")
            for k, (kind, fields) in enumerate(it.events):
                if ("event", id(it), k) in left_out:
                    continue
                _line(w.event, (index, kind, fields), ("event", id(it), k),
                      f"a {kind} event of {it.note}: its line passes the trace format's limit;"
                      " left out")
                events += 1
    return {
        "actions": len(items),
        "events": events,
        "bytes": w.bytes_written,
        "functions": [f["function"] for f in functions],
        "untranslated": untranslated_ops,
    }


def _line(write: Any, args: tuple, key: tuple, note: str) -> Any:
    try:
        return write(*args)
    except LineTooLong:
        raise Oversized(key, note) from None
