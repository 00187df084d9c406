"""The observer's wrappers of the tree node's checks and of the skip logger
(observer.py): check_invariants (the status of each child tried: why the
next recording happens; the pointers of a replay), check_static_inputs_are_stable
(an exception raised in it is E4) and log_cudagraph_skip_and_bump_counter
(skip events, S1 inside the mutation check, E5 past the re-record limit).
No torch import.
"""

from __future__ import annotations

import functools
from typing import Any

from .values import POINTER_STATUSES, CheckResult, safe_ptr


def wrap_check_invariants(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def check_invariants(node, inputs):
        static = list(getattr(node, "static_input_idxs", []))
        snapshot = {i: safe_ptr(inputs[i]) for i in static if i < len(inputs)}
        ctx = observer.ctx()
        try:
            result = original(node, inputs)
        except BaseException:
            if ctx is not None:
                ctx.raised_in = "check_invariants"
            raise
        try:
            status = result[0] if isinstance(result, tuple) else result
            name = getattr(status, "name", str(status))
            if ctx is not None:
                if name == "SUCCESS":
                    ctx.replay_ptrs[id(node)] = snapshot
                else:
                    ctx.checks.append(check_detail(node, snapshot, name))
        except Exception:
            observer.fail("check_invariants")
        return result

    return check_invariants


def check_detail(node: Any, snapshot: dict, status: str) -> CheckResult:
    """Which input's pointer moved, for a pointer status."""
    if status not in POINTER_STATUSES:
        return CheckResult(status)
    idxs = (
        getattr(node, "cudagraph_managed_idxs", [])
        if status == "CudagraphManagedIdxMismatch"
        else getattr(node, "static_input_idxs", [])
    )
    recorded = list(getattr(node, "static_input_data_ptrs", []))
    for i in idxs:
        old = recorded[i] if i < len(recorded) else None
        new = snapshot.get(i)
        if new is not None and new != old:
            return CheckResult(status, i, old or 0, new)
    return CheckResult(status)


def wrap_check_static_inputs(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def check_static(node, new_inputs):
        try:
            return original(node, new_inputs)
        except BaseException:
            ctx = observer.ctx()
            if ctx is not None:
                ctx.raised_in = "check_static_inputs_are_stable"
            raise

    return check_static


def wrap_skip_log(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def log_skip(msg, *args, **kwargs):
        try:
            on_skip(observer, str(msg))
        except Exception:
            observer.fail("skip")
        return original(msg, *args, **kwargs)

    return log_skip


def on_skip(observer: Any, message: str) -> None:
    ctx = observer.ctx()
    if ctx is None:
        # Not inside a tree call: a skip decided when Inductor compiled
        # the graph (or by the bisector); the session knows which graph.
        observer.sink.on_compile_skip(message)
        return
    fields: dict = {}
    if ctx.in_mutation_check:
        fields["id"] = "S1"
        fields.update(observer.fn_fields(ctx.fid))
    else:
        # Inside _run but not in the mutation check: the re-record limit.
        fields["id"] = "E5"
        fields["fid"] = ctx.fid
        fields.update(observer.reason_fields(ctx.fid, observer.reason(ctx)))
    fields["message"] = message
    ctx.skip_logged = True
    observer.emit("skip", fields)
