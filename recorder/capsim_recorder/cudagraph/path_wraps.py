"""The observer's wrappers of the tree manager's bookkeeping (observer.py):
the ends of a path (try_end_curr_recording, _warmup, _execution), the
checkpoint of the allocator's state, the W1 warning, the mutation check
(which marks a skip logged inside it as S1) and the backward mark. Each
factory takes the observer and the original method; no torch import.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from .values import int_id


def wrap_try_end(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def try_end(mgr, *args, **kwargs):
        had = mgr.current_node is not None
        new_generation = False
        try:
            new_generation = bool(mgr.can_start_new_generation())
        except Exception:
            observer.fail("can_start_new_generation")
        out = original(mgr, *args, **kwargs)
        try:
            if had and mgr.current_node is None:
                reason = "new_generation" if new_generation else "outputs_dead"
                observer.emit("path_end", {"reason": reason})
        except Exception:
            observer.fail("try_end")
        return out

    return try_end


def _checkpoint_fields(observer: Any, mgr: Any, before: Any) -> dict:
    node = mgr.current_node
    fields: dict = {"count": int(mgr.debug_checkpointing_counter)}
    node_id = int_id(getattr(node, "id", None))
    if node_id is not None:
        fields["node"] = node_id
    live = set()
    for ref in node.path_live_weakrefs():
        ptr = ref.data_ptr() if hasattr(ref, "data_ptr") else None
        live.add(ptr if ptr is not None else id(ref))
    fields["live"] = len(live)
    after = observer.blocks(mgr)
    if before is not None and after is not None:
        fields["pool_blocks_before"] = before
        fields["pool_blocks_after"] = after
    return fields


def wrap_checkpoint(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def apply_checkpoint(mgr, *args, **kwargs):
        before = observer.blocks(mgr)
        out = original(mgr, *args, **kwargs)
        try:
            observer.emit("checkpoint", _checkpoint_fields(observer, mgr, before))
        except Exception:
            observer.fail("checkpoint")
        return out

    return apply_checkpoint


def wrap_check_warn(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def check_warn(mgr, function_id):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = original(mgr, function_id)
        for w in caught:
            try:
                fields = {"id": "W1", "fid": int_id(function_id), "message": str(w.message)}
                observer.emit("warning", fields)
            except Exception:
                observer.fail("warning")
            # Hand the warning on, as PyTorch would have.
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return out

    return check_warn


def wrap_mutation_check(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def update(mgr, *args, **kwargs):
        ctx = observer.ctx()
        if ctx is not None:
            ctx.in_mutation_check = True
        try:
            return original(mgr, *args, **kwargs)
        finally:
            if ctx is not None:
                ctx.in_mutation_check = False

    return update


def wrap_set_to_running_backward(observer: Any, original: Any) -> Any:
    @functools.wraps(original)
    def set_to_running_backward(mgr, *args, **kwargs):
        out = original(mgr, *args, **kwargs)
        try:
            observer.sink.on_set_to_running_backward()
        except Exception:
            observer.fail("set_to_running_backward")
        return out

    return set_to_running_backward
