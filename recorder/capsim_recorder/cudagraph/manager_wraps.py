"""The observer's wrappers of the tree manager's run path (observer.py):
add_function, run, run_eager (warmup), record_function (record),
execute_node (copy_in, replay) and, from 2.15,
_update_cudagraph_managed_input_rerecord (demote). Each factory takes the
observer and the original method and returns the wrapper; no torch import.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from .. import torch_compat
from .values import CheckResult, RunCtx, int_id, int_positions_of, is_tensor, span_bytes


def wrap_add_function(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def add_function(mgr, model, inputs, static_input_idxs, *args, **kwargs):
        # (stack_traces, mode, constants, placeholders, mutated_input_idxs, compile_id)
        mode = torch_compat.add_function_mode(args, kwargs)
        observer.tls.pending_add = (list(static_input_idxs), mode)
        try:
            return original(mgr, model, inputs, static_input_idxs, *args, **kwargs)
        finally:
            observer.tls.pending_add = None

    return add_function


def _enter_outer(observer: Any, ctx: RunCtx, fid: Optional[int], new_inputs: Any) -> None:
    """The outermost run of a call: bind its FunctionID (a compile event at
    the first run after add_function) and tell the sink."""
    compile_fields = None
    try:
        info, fresh = observer.bind(fid, new_inputs)
        if fresh:
            ints = int_positions_of(new_inputs)
            static = getattr(observer.tls, "pending_add", None)
            compile_fields = {
                "function": info.function,
                "fid": fid,
                "int_key": [int(new_inputs[i]) for i in ints],
                "static_input_idxs": observer.idx(fid, static[0] if static else []),
            }
        ctx.token = observer.sink.on_run_enter(fid, info, new_inputs)
    except Exception:
        observer.fail("run enter")
    if compile_fields is not None:
        observer.emit("compile", compile_fields)


def wrap_run(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def run(mgr, new_inputs, function_id):
        fid = int_id(function_id)
        stack = observer.stack()
        outer = not stack
        ctx = RunCtx(fid=fid)
        if outer:
            _enter_outer(observer, ctx, fid, new_inputs)
        stack.append(ctx)
        error: Optional[BaseException] = None
        out = None
        try:
            out = original(mgr, new_inputs, function_id)
            return out
        except BaseException as e:
            error = e
            raise
        finally:
            stack.pop()
            if not outer:
                parent = observer.ctx()
                if parent is not None and ctx.outcome is not None:
                    parent.outcome = "nested"
            else:
                after_outer_run(observer, mgr, ctx, out, error)

    return run


def after_outer_run(observer: Any, mgr: Any, ctx: RunCtx, out: Any, error: Optional[BaseException]) -> None:
    try:
        if error is not None:
            if not getattr(error, "_capsim_recorded", False):
                observer.emit("error", observer.error_fields(error, ctx, mgr))
                try:
                    error._capsim_recorded = True  # type: ignore[attr-defined]
                except Exception:
                    pass
        elif ctx.outcome is None:
            # None of warmup, record or replay: the function ran eagerly
            # (the mutation gate, or past the re-record limit).
            reason = "rerecord_limit"
            try:
                hints = torch_compat.mutation_hints(mgr)
                if any(int_id(k) == ctx.fid and v for k, v in hints.items()):
                    reason = "mutated_inputs"
            except Exception:
                pass
            fields = observer.fn_fields(ctx.fid)
            fields["reason"] = reason
            observer.emit("eager", fields)
    except Exception:
        observer.fail("run exit")
    try:
        observer.sink.on_run_exit(ctx.token, out, error)
    except Exception:
        observer.fail("sink.on_run_exit")


def depth(node: Any) -> int:
    n, seen = 0, 0
    parent = getattr(node, "parent", None)
    while parent is not None and seen < 10000:
        n += 1
        seen += 1
        parent = getattr(parent, "parent", None)
    return n


def wrap_run_eager(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def run_eager(mgr, new_inputs, function_id):
        out = original(mgr, new_inputs, function_id)
        try:
            ctx = observer.ctx()
            if ctx is not None:
                ctx.outcome = "warmup"
            fid = int_id(function_id)
            node = mgr.current_node
            fields = {"fid": fid, "function": observer.fn_fields(fid)["function"]}
            node_id = int_id(getattr(node, "id", None))
            if node_id is not None:
                fields["node"] = node_id
            fields["depth"] = depth(node)
            observer.emit("warmup", fields)
        except Exception:
            observer.fail("run_eager")
        return out

    return run_eager


def _record_fields(observer: Any, fid: Optional[int], node: Any, cause: CheckResult) -> dict:
    fields = observer.fn_fields(fid)
    fields["graph"] = int_id(node.id)
    parent = getattr(node, "parent", None)
    fields["parent"] = int_id(parent.id) if parent is not None else None
    static = list(getattr(node, "static_input_idxs", []))
    fields["static"] = observer.idx(fid, static)
    fields["managed"] = observer.idx(fid, getattr(node, "cudagraph_managed_idxs", []))
    non_static = list(getattr(node, "non_static_input_idx", []))
    fields["non_static"] = observer.idx(fid, non_static)
    # 2.15: the managed inputs demoted to copies (copy_cudagraph_managed_idxs):
    # input_copy_idxs is the non-static inputs and those.
    copied = set(getattr(node, "input_copy_idxs", ())) - set(non_static)
    copied_managed = observer.idx(fid, copied)
    if copied_managed:
        fields["copied_managed"] = copied_managed
    data_ptrs = list(getattr(node, "static_input_data_ptrs", []))
    by_idx = {i: data_ptrs[i] for i in static if i < len(data_ptrs)}
    fields["static_ptrs"] = observer.static_ptrs(fid, by_idx)
    fields.update(observer.reason_fields(fid, cause))
    return fields


def wrap_record_function(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def record_function(mgr, new_inputs, function_id):
        ctx = observer.ctx()
        cause = observer.reason(ctx) if ctx is not None else CheckResult("SUCCESS")
        out = original(mgr, new_inputs, function_id)
        try:
            if ctx is not None:
                ctx.outcome = "record"
            observer.emit("record", _record_fields(observer, int_id(function_id), mgr.current_node, cause))
        except Exception:
            observer.fail("record_function")
        return out

    return record_function


def _copies(node: Any, new_inputs: Any) -> tuple[int, int]:
    """(copies, bytes) a replay makes: input_copy_idxs (2.15: the non-static
    inputs and the demoted managed ones), else the non-static inputs."""
    copies, nbytes = 0, 0
    idxs = getattr(node, "input_copy_idxs", None)
    if idxs is None:
        idxs = getattr(node, "non_static_input_idx", [])
    for i in idxs:
        if i < len(new_inputs) and is_tensor(new_inputs[i]):
            copies += 1
            nbytes += span_bytes(new_inputs[i])
    return copies, nbytes


def _emit_replay(observer: Any, ctx: Optional[RunCtx], node: Any, copies: int, nbytes: int) -> None:
    if ctx is not None:
        ctx.outcome = "replay"
    fid = int_id(getattr(getattr(node, "wrapped_function", None), "id", None))
    if fid is None and ctx is not None:
        fid = ctx.fid
    base = observer.fn_fields(fid)
    graph = int_id(getattr(node, "id", None))
    copy_in = dict(base)
    copy_in["graph"] = graph
    copy_in["copies"] = copies
    copy_in["bytes"] = nbytes
    observer.emit("copy_in", copy_in)
    replay = dict(base)
    replay["graph"] = graph
    ptrs = ctx.replay_ptrs.get(id(node)) if ctx is not None else None
    if ptrs is not None:
        replay["static_ptrs"] = observer.static_ptrs(fid, ptrs)
    observer.emit("replay", replay)


def wrap_execute_node(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def execute_node(mgr, node, new_inputs):
        ctx = observer.ctx()
        copies, nbytes = 0, 0
        try:
            copies, nbytes = _copies(node, new_inputs)
        except Exception:
            observer.fail("execute_node copies")
        out = original(mgr, node, new_inputs)
        try:
            _emit_replay(observer, ctx, node, copies, nbytes)
        except Exception:
            observer.fail("execute_node")
        return out

    return execute_node


def _emit_demotes(observer: Any, before: dict, after: dict) -> None:
    """One demote per input index that joined an edge's demoted set."""
    for (node_id, function_id), idxs in after.items():
        fid = int_id(function_id)
        new = [observer.one(fid, i) for i in idxs - before.get((node_id, function_id), set())]
        for j in sorted(j for j in new if j is not None):
            fields = observer.fn_fields(fid)
            fields["parent"] = int_id(node_id)
            fields["input"] = j
            observer.emit("demote", fields)


def wrap_managed_input_rerecord(observer: Any, original: Any) -> Any:
    """2.15's _update_cudagraph_managed_input_rerecord(node_id, function_id,
    copyable_idxs): under action "copy" it counts each managed input's
    pointer changes on the edge and, at the limit, adds the input to
    mgr.demoted_cudagraph_managed_idxs[node_id][function_id]; the indices
    added during the call are the demote events."""

    @functools.wraps(original)
    def update(mgr, *args, **kwargs):
        before = None
        try:
            before = torch_compat.demoted_managed_idxs(mgr)
        except Exception:
            observer.fail("demoted idxs before")
        out = original(mgr, *args, **kwargs)
        if before is not None:
            try:
                _emit_demotes(observer, before, torch_compat.demoted_managed_idxs(mgr))
            except Exception:
                observer.fail("_update_cudagraph_managed_input_rerecord")
        return out

    return update
