"""Observes PyTorch's cudagraph-tree manager and turns what it does into
capsim events (docs/trace-format.md section 6).

`TreeObserver.install()` replaces, on the classes and modules it is given,
the entry points torch_compat.py lists (MANAGER_METHODS, the
LATER_MANAGER_METHODS the release has, NODE_METHODS, SKIP_LOG) with
wrappers that call the original and report to a sink (names as in
torch/_inductor/cudagraph_trees.py, PyTorch 2.11; 2.15 for the later ones):

  CUDAGraphTreeManager.add_function        the new FunctionID's static_input_idxs
  CUDAGraphTreeManager.run                 one call (outermost) -> sink.on_run_enter/exit;
                                           eager when none of the three below ran;
                                           error when it raised
  CUDAGraphTreeManager.run_eager           warmup {fid, function, node, depth}
  CUDAGraphTreeManager.record_function     record {fid, function, graph, parent, static,
                                           managed, non_static, copied_managed (2.15),
                                           static_ptrs, reason, ...}
  CUDAGraphTreeManager.execute_node        copy_in (input_copy_idxs from 2.15), then replay
  CUDAGraphTreeManager._update_cudagraph_managed_input_rerecord (2.15 on)
                                           demote {fid, function, parent, input} per index
                                           it adds to demoted_cudagraph_managed_idxs
  CUDAGraphTreeManager.try_end_curr_recording / try_end_curr_warmup /
    try_end_curr_execution                 path_end {reason}
  CUDAGraphTreeManager.apply_checkpoint_execution_state_in_allocator
                                           checkpoint {count, node, live, pool blocks}
  CUDAGraphTreeManager.check_warn_on_unable_to_start_executing
                                           warning W1 (the warning text as raised)
  CUDAGraphTreeManager._update_non_cudagraph_managed_mutation
                                           marks a skip logged inside it as S1
  CUDAGraphTreeManager.set_to_running_backward
                                           sink.on_set_to_running_backward()
  CUDAGraphNode.check_invariants           the status per child tried (the reason of the
                                           recording that follows), the pointers of a replay
  CUDAGraphNode.check_static_inputs_are_stable
                                           marks an exception raised in it as E4
  log_cudagraph_skip_and_bump_counter      skip {message} (in every torch._inductor module
                                           that imported it, and in cudagraph_utils itself)

The wrappers live in manager_wraps.py (the run path), path_wraps.py (path
ends, checkpoints, warnings, the backward mark) and node_wraps.py (the
node's checks, skips); this class holds what they share: the sink, the
FunctionIDs seen, the per-thread stack of runs, and the failures.

Nothing here imports torch, so the tests drive the wrappers with stand-in
manager classes (tests/fake_tree.py). The wrappers never keep a tensor
beyond the call (pointers are kept as ints), never change arguments or
results, and never swallow an exception: if observing fails, the failure is
counted in `observer.failures` (which the driver writes into the trace's
x_notes) and the call goes on as PyTorch's.
"""

from __future__ import annotations

import threading
import traceback
from typing import Any, Callable, Optional, Sequence

from .. import torch_compat
from . import manager_wraps, node_wraps, path_wraps
from .values import (REASONS, POINTER_STATUSES, CheckResult, FidInfo, RunCtx, drop_positions, hex_ptr,
                     int_positions_of)

# Method name -> the factory of its wrapper: factory(observer, original).
WRAPS = {
    "add_function": manager_wraps.wrap_add_function,
    "run": manager_wraps.wrap_run,
    "run_eager": manager_wraps.wrap_run_eager,
    "record_function": manager_wraps.wrap_record_function,
    "execute_node": manager_wraps.wrap_execute_node,
    "_update_cudagraph_managed_input_rerecord": manager_wraps.wrap_managed_input_rerecord,
    "try_end_curr_recording": path_wraps.wrap_try_end,
    "try_end_curr_warmup": path_wraps.wrap_try_end,
    "try_end_curr_execution": path_wraps.wrap_try_end,
    "apply_checkpoint_execution_state_in_allocator": path_wraps.wrap_checkpoint,
    "check_warn_on_unable_to_start_executing": path_wraps.wrap_check_warn,
    "_update_non_cudagraph_managed_mutation": path_wraps.wrap_mutation_check,
    "set_to_running_backward": path_wraps.wrap_set_to_running_backward,
    "check_invariants": node_wraps.wrap_check_invariants,
    "check_static_inputs_are_stable": node_wraps.wrap_check_static_inputs,
}

# A later method (torch_compat.LATER_MANAGER_METHODS) -> the event kind its
# wrapper writes, which OBSERVED_KINDS lacks (a trace declares it only where
# the release has the method: observer.extra_kinds, output.observed_kinds).
LATER_KINDS = {"_update_cudagraph_managed_input_rerecord": "demote"}


class TreeObserver:
    """Install once per recording; uninstall restores every patched attribute."""

    def __init__(
        self,
        sink: Any,
        manager_cls: Any,
        node_cls: Any,
        *,
        skip_log_modules: Sequence[Any] = (),
        get_block_count: Optional[Callable[[Any], Optional[int]]] = None,
        dealloc_message_prefix: Optional[str] = None,
    ) -> None:
        self.sink = sink
        self.manager_cls = manager_cls
        self.node_cls = node_cls
        self.skip_log_modules = list(skip_log_modules)
        self.get_block_count = get_block_count
        self.dealloc_message_prefix = dealloc_message_prefix
        self.fids: dict[int, FidInfo] = {}
        self.failures: list[str] = []
        self.patched: list[tuple[Any, str, Any]] = []
        # Kinds beyond OBSERVED_KINDS that the installed wraps can write
        # ("demote" where the release has the method that demotes).
        self.extra_kinds: list[str] = []
        self.tls = threading.local()

    # -- plumbing ------------------------------------------------------------

    def stack(self) -> list:
        s = getattr(self.tls, "stack", None)
        if s is None:
            s = self.tls.stack = []
        return s

    def ctx(self) -> Optional[RunCtx]:
        s = self.stack()
        return s[-1] if s else None

    def fail(self, where: str) -> None:
        # Observation must never break the run; keep the last line of why.
        text = traceback.format_exc(limit=4).strip().splitlines()
        self.failures.append(f"{where}: {text[-1] if text else '?'}")

    def emit(self, kind: str, fields: dict) -> None:
        try:
            self.sink.event(kind, fields)
        except Exception:
            self.fail(f"sink.event({kind})")

    def _patch(self, owner: Any, name: str, make: Callable[[Any, Any], Any]) -> None:
        original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if original is None:
            self.failures.append(f"install: {getattr(owner, '__name__', owner)}.{name} not found")
            return
        setattr(owner, name, make(self, original))
        self.patched.append((owner, name, original))

    def install(self) -> "TreeObserver":
        for name in torch_compat.MANAGER_METHODS:
            self._patch(self.manager_cls, name, WRAPS[name])
        for name, _since in torch_compat.LATER_MANAGER_METHODS:
            # An older release lacks it (self_check says when one should not).
            if name in vars(self.manager_cls):
                self._patch(self.manager_cls, name, WRAPS[name])
                if LATER_KINDS[name] not in self.extra_kinds:
                    self.extra_kinds.append(LATER_KINDS[name])
        for name in torch_compat.NODE_METHODS:
            self._patch(self.node_cls, name, WRAPS[name])
        wrappers: dict = {}
        for mod in self.skip_log_modules:
            fn = getattr(mod, torch_compat.SKIP_LOG, None)
            if fn is None:
                continue
            wrapper = wrappers.get(id(fn))
            if wrapper is None:
                wrapper = wrappers[id(fn)] = node_wraps.wrap_skip_log(self, fn)
            setattr(mod, torch_compat.SKIP_LOG, wrapper)
            self.patched.append((mod, torch_compat.SKIP_LOG, fn))
        return self

    def uninstall(self) -> None:
        while self.patched:
            owner, name, original = self.patched.pop()
            setattr(owner, name, original)

    # -- FunctionIDs and indices ------------------------------------------------

    def bind(self, fid: int, inputs: Sequence[Any]) -> tuple[FidInfo, bool]:
        """The sink's name and index map of `fid` (asked at its first run),
        and whether this is that first run after its add_function."""
        info = self.fids.get(fid)
        if info is not None:
            return info, False
        pending = getattr(self.tls, "pending_add", None)
        static, mode = pending if pending else ([], None)
        try:
            info = self.sink.bind_function(fid, inputs, static, mode)
        except Exception:
            self.fail("sink.bind_function")
            info = FidInfo(f"fid{fid}", drop_positions(int_positions_of(inputs)))
        self.fids[fid] = info
        return info, pending is not None

    def info(self, fid: Optional[int]) -> Optional[FidInfo]:
        return self.fids.get(fid) if fid is not None else None

    def idx(self, fid: int, idxs: Sequence[int]) -> list[int]:
        info = self.info(fid)
        out = []
        for i in idxs:
            j = info.remap(i) if info else i
            if j is not None:
                out.append(j)
        return sorted(set(out))

    def one(self, fid: int, i: Optional[int]) -> Optional[int]:
        info = self.info(fid)
        if i is None:
            return None
        return info.remap(i) if info else i

    def fn_fields(self, fid: Optional[int]) -> dict:
        info = self.info(fid)
        out: dict = {}
        if fid is not None:
            out["fid"] = fid
        out["function"] = info.function if info else f"fid{fid}"
        return out

    def static_ptrs(self, fid: int, ptrs_by_idx: dict) -> list[str]:
        """Pointers at the static positions, in capsim's index order."""
        info = self.info(fid)
        pairs = []
        for i, ptr in ptrs_by_idx.items():
            j = info.remap(i) if info else i
            if j is not None and ptr is not None:
                pairs.append((j, ptr))
        return [hex_ptr(p) for _, p in sorted(pairs)]

    # -- why, and errors ---------------------------------------------------------

    @staticmethod
    def reason(ctx: RunCtx) -> CheckResult:
        """Why a recording (or an E5 skip) happened: the first child whose
        pointers moved, else the last child that failed, else no child."""
        for c in ctx.checks:
            if c.status in POINTER_STATUSES:
                return c
        if ctx.checks:
            return ctx.checks[-1]
        return CheckResult("SUCCESS")

    def reason_fields(self, fid: int, c: CheckResult) -> dict:
        out = {"reason": REASONS.get(c.status, c.status)}
        if c.input is not None:
            j = self.one(fid, c.input)
            if j is not None:
                out["input"] = j
            out["old_ptr"] = hex_ptr(c.old_ptr or 0)
            out["new_ptr"] = hex_ptr(c.new_ptr or 0)
        return out

    def blocks(self, mgr: Any) -> Optional[int]:
        if self.get_block_count is None:
            return None
        try:
            return self.get_block_count(mgr)
        except Exception:
            self.fail("pool block count")
            return None

    def error_fields(self, e: BaseException, ctx: Optional[RunCtx], mgr: Any = None) -> dict:
        message = str(e)
        fields: dict = {}
        eid = None
        if ctx is not None and ctx.raised_in == "check_static_inputs_are_stable":
            eid = "E4"
        elif ctx is not None and ctx.raised_in == "check_invariants":
            eid = "E3"
        elif self.dealloc_message_prefix and self.dealloc_message_prefix in message:
            eid = "E1"
        elif isinstance(e, AssertionError) and mgr is not None and getattr(mgr, "graph", 1) is None:
            eid = "A1"
        if eid:
            fields["id"] = eid
        fields["exception"] = type(e).__name__
        fields["message"] = message
        return fields

    def failure_notes(self, limit: int = 20) -> list[str]:
        """The failures as the trace's x_notes lines (the first `limit`)."""
        notes = [f"observer: {f}" for f in self.failures[:limit]]
        if len(self.failures) > limit:
            notes.append(f"observer: {len(self.failures) - limit} more failures")
        return notes
