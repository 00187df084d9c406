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
from ..trace_writer import TraceWriter
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
        lines.append({
            "function": f.name,
            "mode": f.mode,
            "inputs": list(body.inputs),
            "ops": list(body.ops),
            "outputs": list(body.outputs),
            "static_input_idxs": static_of(f),
            "param_input_idxs": sorted(f.param_input_idxs or []),
        })
    return lines


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
    notes = list(session.notes) + list(extra_notes)
    if notes:
        ext["x_notes"] = list(dict.fromkeys(notes))
    return ext


def write(session: Any, path: str, *, producer: str, seed: int, config: dict, extensions: dict,
          extra_notes: Optional[list] = None) -> dict:
    """Writes the trace (header, function lines, actions and their events);
    `extra_notes` join the session's notes in x_notes (the driver's
    failures). Returns counts for the summary."""
    functions, items, untranslated_ops = plan(session)
    ext = _extensions(session, extensions, untranslated_ops, extra_notes or [])
    events = 0
    with TraceWriter(path) as w:
        w.header(producer=producer, name=session.name, seed=seed, config=config,
                 observes=list(OBSERVED_KINDS), extensions=ext)
        for f in functions:
            w.function(f)
        for it in items:
            index = w.action(it.action, it.fields)
            for kind, fields in it.events:
                w.event(index, kind, fields)
                events += 1
    return {
        "actions": len(items),
        "events": events,
        "bytes": w.bytes_written,
        "functions": [f["function"] for f in functions],
        "untranslated": untranslated_ops,
    }
