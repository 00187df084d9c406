"""The schema of action lines, as capsim's table of actions has it
(sim/program/actions.def, printed by `capsim version --actions` into
action_schema.json beside this file; a ctest fails when the two differ).

TraceWriter.action checks every action line against it before writing, so a
recorder that spells a kind or a field differently from capsim fails in its
own tests, at the line that is wrong, not when capsim reads the trace. No
torch import.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "action_schema.json")


def _load() -> dict[str, Any]:
    with open(_PATH, encoding="utf-8") as f:
        return json.load(f)["kinds"]


KINDS: dict[str, Any] = _load()


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_ok(spec: Mapping[str, Any], value: Any) -> bool:
    kind = spec["type"]
    if kind == "string":
        return isinstance(value, str)
    if kind == "strings":
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    if kind == "integer":
        return _is_int(value)
    if kind == "integers":
        return isinstance(value, (list, tuple)) and all(_is_int(v) for v in value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return (_is_int(value) or isinstance(value, float))
    if kind == "object":
        return isinstance(value, Mapping)
    if kind == "enum":
        return value in spec["values"]
    return False


def _within_limit(spec: Mapping[str, Any], value: Any) -> bool:
    limit = spec.get("max_items")
    return limit is None or len(value) <= limit


def action_problem(kind: str, fields: Mapping[str, Any]) -> Optional[str]:
    """Why an action line of `kind` with `fields` (the envelope left out)
    is not one capsim reads, or None. Extension keys ("x_...") pass, as
    capsim skips them; a condition ("when ...") is capsim's to check."""
    if kind not in KINDS:
        return f"unknown action kind {kind!r}"
    specs = KINDS[kind]["fields"]
    if specs is None:
        return None  # a kind with rules of its own (a recorded graph)
    by_key = {s["key"]: s for s in specs}
    for key, value in fields.items():
        if key.startswith("x_"):
            continue
        spec = by_key.get(key)
        if spec is None:
            return f"{kind}: unknown field {key!r}"
        if spec["type"] == "enum" and value not in spec["values"]:
            return f"{kind}: field {key!r} is {value!r}, not one of {', '.join(spec['values'])}"
        if not _type_ok(spec, value):
            return f"{kind}: field {key!r} is not of type {spec['type']}: {value!r}"
        if not _within_limit(spec, value):
            return f"{kind}: field {key!r} has {len(value)} items, more than {spec['max_items']}"
    for spec in specs:
        if spec["presence"] == "required" and spec["key"] not in fields:
            return f"{kind}: no field {spec['key']!r}"
    return None
