"""Observes PyTorch's cudagraph-tree manager and turns what it does into
capsim events (docs/trace-format.md section 6).

`TreeObserver.install()` replaces, on the classes and module it is given,
these entry points with wrappers that call the original and report to a sink
(names as in torch/_inductor/cudagraph_trees.py, PyTorch 2.11):

  CUDAGraphTreeManager.add_function        the new FunctionID's static_input_idxs
  CUDAGraphTreeManager.run                 one call (outermost) -> sink.on_run_enter/exit;
                                           eager when none of the three below ran;
                                           error when it raised
  CUDAGraphTreeManager.run_eager           warmup {fid, function, node, depth}
  CUDAGraphTreeManager.record_function     record {fid, function, graph, parent, static,
                                           managed, non_static, static_ptrs, reason, ...}
  CUDAGraphTreeManager.execute_node        copy_in, then replay
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

Nothing here imports torch: tensors are recognised by duck typing
(`data_ptr`, `size`, `stride`, `element_size`), so the tests drive the
wrappers with stand-in manager classes and CPU tensors. The wrappers never
keep a tensor beyond the call (pointers are kept as ints), never change
arguments or results, and never swallow an exception: if observing fails, the
failure is counted in `observer.failures` and the call goes on as PyTorch's.
"""

from __future__ import annotations

import bisect
import functools
import sys
import threading
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

# CheckInvariantStatus names -> capsim's record.reason values.
REASONS = {
    "SUCCESS": "no_child",
    "CudagraphManagedIdxMismatch": "cudagraph_managed_idx_mismatch",
    "StaticInputIdxMismatch": "static_input_idx_mismatch",
    "ExpectedDeadIndicesBeforeGraphMismatch": "expected_dead_indices_before_graph_mismatch",
}
POINTER_STATUSES = ("CudagraphManagedIdxMismatch", "StaticInputIdxMismatch")

# The event kinds this observer can write (the session adds none).
OBSERVED_KINDS = (
    "compile",
    "warmup",
    "record",
    "replay",
    "copy_in",
    "eager",
    "skip",
    "warning",
    "error",
    "checkpoint",
    "path_end",
)

MANAGER_METHODS = (
    "add_function",
    "run",
    "run_eager",
    "record_function",
    "execute_node",
    "try_end_curr_recording",
    "try_end_curr_warmup",
    "try_end_curr_execution",
    "apply_checkpoint_execution_state_in_allocator",
    "check_warn_on_unable_to_start_executing",
    "_update_non_cudagraph_managed_mutation",
    "set_to_running_backward",
)
NODE_METHODS = ("check_invariants", "check_static_inputs_are_stable")
SKIP_LOG = "log_cudagraph_skip_and_bump_counter"


def hex_ptr(ptr: int) -> str:
    return f"0x{ptr:x}"


def int_id(x: Any) -> Optional[int]:
    """FunctionID(id=3) / GraphID(id=3) / 3 -> 3."""
    if x is None:
        return None
    inner = getattr(x, "id", x)
    return inner if isinstance(inner, int) else None


def is_tensor(x: Any) -> bool:
    return hasattr(x, "data_ptr") and hasattr(x, "stride") and hasattr(x, "element_size")


def safe_ptr(x: Any) -> Optional[int]:
    """x.data_ptr(), or None (not a tensor, or a storage the tree manager
    poisoned: reading it raises, and observing must not)."""
    if not is_tensor(x):
        return None
    try:
        return int(x.data_ptr())
    except Exception:
        return None


def span_bytes(t: Any) -> int:
    """Bytes a copy into a placeholder of t's layout moves: the memory the
    view spans, an expanded (stride 0) dim counted once."""
    try:
        sizes = list(t.size())
        strides = list(t.stride())
        if any(s == 0 for s in sizes):
            return 0
        extent = 1 + sum((s - 1) * abs(st) for s, st in zip(sizes, strides))
        return extent * int(t.element_size())
    except Exception:
        return 0


def int_positions_of(inputs: Sequence[Any]) -> list[int]:
    return [i for i, v in enumerate(inputs) if isinstance(v, int) and not isinstance(v, bool)]


@dataclass
class FidInfo:
    """What the sink told us about a FunctionID."""

    function: str
    # index in PyTorch's input list -> index in capsim's (None: not an input
    # there, such as a SymInt that capsim passes in int_key).
    remap: Callable[[int], Optional[int]]


def drop_positions(positions: Sequence[int]) -> Callable[[int], Optional[int]]:
    ints = sorted(positions)
    taken = set(ints)

    def remap(i: int) -> Optional[int]:
        if i in taken:
            return None
        return i - bisect.bisect_left(ints, i)

    return remap


@dataclass
class CheckResult:
    status: str
    input: Optional[int] = None
    old_ptr: Optional[int] = None
    new_ptr: Optional[int] = None


@dataclass
class RunCtx:
    fid: int
    checks: list = field(default_factory=list)
    outcome: Optional[str] = None  # warmup, record, replay, nested
    replay_ptrs: dict = field(default_factory=dict)  # id(node) -> [ptr at sorted static idx]
    in_mutation_check: bool = False
    skip_logged: bool = False
    raised_in: Optional[str] = None
    token: Any = None


class NullSink:
    """The interface a sink implements; this one records nothing."""

    def bind_function(self, fid: int, inputs: Sequence[Any], static_input_idxs: Sequence[int],
                      mode: Any) -> FidInfo:
        return FidInfo(f"fid{fid}", drop_positions(int_positions_of(inputs)))

    def on_run_enter(self, fid: int, info: FidInfo, inputs: Sequence[Any]) -> Any:
        return None

    def on_run_exit(self, token: Any, outputs: Any, error: Optional[BaseException]) -> None:
        pass

    def event(self, kind: str, fields: dict) -> None:
        pass

    def on_compile_skip(self, message: str) -> None:
        pass

    def on_set_to_running_backward(self) -> None:
        pass


class TreeObserver:
    """Install once per program; uninstall restores every patched attribute."""

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
        self._tls = threading.local()

    # -- plumbing ------------------------------------------------------------

    def _stack(self) -> list:
        s = getattr(self._tls, "stack", None)
        if s is None:
            s = self._tls.stack = []
        return s

    def _ctx(self) -> Optional[RunCtx]:
        s = self._stack()
        return s[-1] if s else None

    def _fail(self, where: str) -> None:
        # Observation must never break the run; keep the first lines of why.
        text = traceback.format_exc(limit=4).strip().splitlines()
        self.failures.append(f"{where}: {text[-1] if text else '?'}")

    def _emit(self, kind: str, fields: dict) -> None:
        try:
            self.sink.event(kind, fields)
        except Exception:
            self._fail(f"sink.event({kind})")

    def _patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if original is None:
            self.failures.append(f"install: {getattr(owner, '__name__', owner)}.{name} not found")
            return
        wrapped = make(original)
        setattr(owner, name, wrapped)
        self.patched.append((owner, name, original))

    def install(self) -> "TreeObserver":
        for name in MANAGER_METHODS:
            self._patch(self.manager_cls, name, getattr(self, f"_wrap_{name.lstrip('_')}"))
        for name in NODE_METHODS:
            self._patch(self.node_cls, name, getattr(self, f"_wrap_{name}"))
        originals = {}
        for mod in self.skip_log_modules:
            fn = getattr(mod, SKIP_LOG, None)
            if fn is None:
                continue
            wrapper = originals.get(id(fn))
            if wrapper is None:
                wrapper = originals[id(fn)] = self._wrap_skip_log(fn)
            setattr(mod, SKIP_LOG, wrapper)
            self.patched.append((mod, SKIP_LOG, fn))
        return self

    def uninstall(self) -> None:
        while self.patched:
            owner, name, original = self.patched.pop()
            setattr(owner, name, original)

    # -- helpers over PyTorch objects -----------------------------------------

    def _info(self, fid: Optional[int]) -> Optional[FidInfo]:
        return self.fids.get(fid) if fid is not None else None

    def _idx(self, fid: int, idxs: Sequence[int]) -> list[int]:
        info = self._info(fid)
        out = []
        for i in idxs:
            j = info.remap(i) if info else i
            if j is not None:
                out.append(j)
        return sorted(set(out))

    def _one(self, fid: int, i: Optional[int]) -> Optional[int]:
        info = self._info(fid)
        if i is None:
            return None
        return info.remap(i) if info else i

    def _fn_fields(self, fid: Optional[int]) -> dict:
        info = self._info(fid)
        out: dict = {}
        if fid is not None:
            out["fid"] = fid
        out["function"] = info.function if info else f"fid{fid}"
        return out

    @staticmethod
    def _depth(node: Any) -> int:
        depth, seen = 0, 0
        parent = getattr(node, "parent", None)
        while parent is not None and seen < 10000:
            depth += 1
            seen += 1
            parent = getattr(parent, "parent", None)
        return depth

    def _static_ptrs(self, fid: int, node: Any, ptrs_by_idx: dict) -> list[str]:
        """Pointers at the static positions, in capsim's index order."""
        info = self._info(fid)
        pairs = []
        for i, ptr in ptrs_by_idx.items():
            j = info.remap(i) if info else i
            if j is not None and ptr is not None:
                pairs.append((j, ptr))
        return [hex_ptr(p) for _, p in sorted(pairs)]

    def _reason(self, ctx: RunCtx) -> CheckResult:
        """Why a recording (or an E5 skip) happened: the first child whose
        pointers moved, else the last child that failed, else no child."""
        for c in ctx.checks:
            if c.status in POINTER_STATUSES:
                return c
        if ctx.checks:
            return ctx.checks[-1]
        return CheckResult("SUCCESS")

    def _reason_fields(self, fid: int, c: CheckResult) -> dict:
        out = {"reason": REASONS.get(c.status, c.status)}
        if c.input is not None:
            j = self._one(fid, c.input)
            if j is not None:
                out["input"] = j
            out["old_ptr"] = hex_ptr(c.old_ptr or 0)
            out["new_ptr"] = hex_ptr(c.new_ptr or 0)
        return out

    # -- the manager ---------------------------------------------------------

    def _wrap_add_function(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def add_function(mgr, model, inputs, static_input_idxs, *args, **kwargs):
            # (stack_traces, mode, constants, placeholders, mutated_input_idxs, compile_id)
            mode = args[1] if len(args) > 1 else kwargs.get("mode")
            observer._tls.pending_add = (list(static_input_idxs), mode)
            try:
                return original(mgr, model, inputs, static_input_idxs, *args, **kwargs)
            finally:
                observer._tls.pending_add = None

        return add_function

    def _bind(self, fid: int, inputs: Sequence[Any]) -> tuple[FidInfo, bool]:
        info = self.fids.get(fid)
        if info is not None:
            return info, False
        pending = getattr(self._tls, "pending_add", None)
        static, mode = pending if pending else ([], None)
        try:
            info = self.sink.bind_function(fid, inputs, static, mode)
        except Exception:
            self._fail("sink.bind_function")
            info = FidInfo(f"fid{fid}", drop_positions(int_positions_of(inputs)))
        self.fids[fid] = info
        return info, pending is not None

    def _wrap_run(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def run(mgr, new_inputs, function_id):
            fid = int_id(function_id)
            stack = observer._stack()
            outer = not stack
            ctx = RunCtx(fid=fid)
            compile_fields = None
            if outer:
                try:
                    info, fresh = observer._bind(fid, new_inputs)
                    if fresh:
                        ints = int_positions_of(new_inputs)
                        static = getattr(observer._tls, "pending_add", None)
                        compile_fields = {
                            "function": info.function,
                            "fid": fid,
                            "int_key": [int(new_inputs[i]) for i in ints],
                            "static_input_idxs": observer._idx(fid, static[0] if static else []),
                        }
                    ctx.token = observer.sink.on_run_enter(fid, info, new_inputs)
                except Exception:
                    observer._fail("run enter")
                if compile_fields is not None:
                    observer._emit("compile", compile_fields)
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
                    parent = observer._ctx()
                    if parent is not None and ctx.outcome is not None:
                        parent.outcome = "nested"
                else:
                    observer._after_outer_run(mgr, ctx, out, error)

        return run

    def _after_outer_run(self, mgr: Any, ctx: RunCtx, out: Any, error: Optional[BaseException]) -> None:
        try:
            if error is not None:
                if not getattr(error, "_capsim_recorded", False):
                    self._emit("error", self.error_fields(error, ctx, mgr))
                    try:
                        error._capsim_recorded = True  # type: ignore[attr-defined]
                    except Exception:
                        pass
            elif ctx.outcome is None:
                # None of warmup, record or replay: the function ran eagerly
                # (the mutation gate, or past the re-record limit).
                reason = "rerecord_limit"
                try:
                    node_id = mgr._get_node_id()
                    hints = mgr.non_cudagraph_managed_mutation_hint.get(node_id, {})
                    if any(int_id(k) == ctx.fid and v for k, v in hints.items()):
                        reason = "mutated_inputs"
                except Exception:
                    pass
                fields = self._fn_fields(ctx.fid)
                fields["reason"] = reason
                self._emit("eager", fields)
        except Exception:
            self._fail("run exit")
        try:
            self.sink.on_run_exit(ctx.token, out, error)
        except Exception:
            self._fail("sink.on_run_exit")

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

    def _wrap_run_eager(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def run_eager(mgr, new_inputs, function_id):
            out = original(mgr, new_inputs, function_id)
            try:
                ctx = observer._ctx()
                if ctx is not None:
                    ctx.outcome = "warmup"
                fid = int_id(function_id)
                node = mgr.current_node
                fields = {"fid": fid, "function": observer._fn_fields(fid)["function"]}
                node_id = int_id(getattr(node, "id", None))
                if node_id is not None:
                    fields["node"] = node_id
                fields["depth"] = observer._depth(node)
                observer._emit("warmup", fields)
            except Exception:
                observer._fail("run_eager")
            return out

        return run_eager

    def _wrap_record_function(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def record_function(mgr, new_inputs, function_id):
            ctx = observer._ctx()
            cause = observer._reason(ctx) if ctx is not None else CheckResult("SUCCESS")
            out = original(mgr, new_inputs, function_id)
            try:
                if ctx is not None:
                    ctx.outcome = "record"
                fid = int_id(function_id)
                node = mgr.current_node
                fields = observer._fn_fields(fid)
                fields["graph"] = int_id(node.id)
                parent = getattr(node, "parent", None)
                fields["parent"] = int_id(parent.id) if parent is not None else None
                static = list(getattr(node, "static_input_idxs", []))
                fields["static"] = observer._idx(fid, static)
                fields["managed"] = observer._idx(fid, getattr(node, "cudagraph_managed_idxs", []))
                fields["non_static"] = observer._idx(fid, getattr(node, "non_static_input_idx", []))
                data_ptrs = list(getattr(node, "static_input_data_ptrs", []))
                by_idx = {i: data_ptrs[i] for i in static if i < len(data_ptrs)}
                fields["static_ptrs"] = observer._static_ptrs(fid, node, by_idx)
                fields.update(observer._reason_fields(fid, cause))
                observer._emit("record", fields)
            except Exception:
                observer._fail("record_function")
            return out

        return record_function

    def _wrap_execute_node(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def execute_node(mgr, node, new_inputs):
            ctx = observer._ctx()
            copies, nbytes = 0, 0
            try:
                for i in getattr(node, "non_static_input_idx", []):
                    if i < len(new_inputs) and is_tensor(new_inputs[i]):
                        copies += 1
                        nbytes += span_bytes(new_inputs[i])
            except Exception:
                observer._fail("execute_node copies")
            out = original(mgr, node, new_inputs)
            try:
                if ctx is not None:
                    ctx.outcome = "replay"
                fid = int_id(getattr(getattr(node, "wrapped_function", None), "id", None))
                if fid is None and ctx is not None:
                    fid = ctx.fid
                base = observer._fn_fields(fid)
                graph = int_id(getattr(node, "id", None))
                copy_in = dict(base)
                copy_in["graph"] = graph
                copy_in["copies"] = copies
                copy_in["bytes"] = nbytes
                observer._emit("copy_in", copy_in)
                replay = dict(base)
                replay["graph"] = graph
                ptrs = ctx.replay_ptrs.get(id(node)) if ctx is not None else None
                if ptrs is not None:
                    replay["static_ptrs"] = observer._static_ptrs(fid, node, ptrs)
                observer._emit("replay", replay)
            except Exception:
                observer._fail("execute_node")
            return out

        return execute_node

    def _wrap_try_end(self, original: Any, takes_fid: bool) -> Any:
        observer = self

        @functools.wraps(original)
        def try_end(mgr, *args, **kwargs):
            had = mgr.current_node is not None
            new_generation = False
            try:
                new_generation = bool(mgr.can_start_new_generation())
            except Exception:
                observer._fail("can_start_new_generation")
            out = original(mgr, *args, **kwargs)
            try:
                if had and mgr.current_node is None:
                    reason = "new_generation" if new_generation else "outputs_dead"
                    observer._emit("path_end", {"reason": reason})
            except Exception:
                observer._fail("try_end")
            return out

        return try_end

    def _wrap_try_end_curr_recording(self, original: Any) -> Any:
        return self._wrap_try_end(original, True)

    def _wrap_try_end_curr_warmup(self, original: Any) -> Any:
        return self._wrap_try_end(original, True)

    def _wrap_try_end_curr_execution(self, original: Any) -> Any:
        return self._wrap_try_end(original, False)

    def _wrap_apply_checkpoint_execution_state_in_allocator(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def apply_checkpoint(mgr, *args, **kwargs):
            before = observer._blocks(mgr)
            out = original(mgr, *args, **kwargs)
            try:
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
                after = observer._blocks(mgr)
                if before is not None and after is not None:
                    fields["pool_blocks_before"] = before
                    fields["pool_blocks_after"] = after
                observer._emit("checkpoint", fields)
            except Exception:
                observer._fail("checkpoint")
            return out

        return apply_checkpoint

    def _blocks(self, mgr: Any) -> Optional[int]:
        if self.get_block_count is None:
            return None
        try:
            return self.get_block_count(mgr)
        except Exception:
            self._fail("pool block count")
            return None

    def _wrap_check_warn_on_unable_to_start_executing(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def check_warn(mgr, function_id):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = original(mgr, function_id)
            for w in caught:
                try:
                    fields = {"id": "W1", "fid": int_id(function_id), "message": str(w.message)}
                    observer._emit("warning", fields)
                except Exception:
                    observer._fail("warning")
                # Hand the warning on, as PyTorch would have.
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            return out

        return check_warn

    def _wrap_update_non_cudagraph_managed_mutation(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def update(mgr, *args, **kwargs):
            ctx = observer._ctx()
            if ctx is not None:
                ctx.in_mutation_check = True
            try:
                return original(mgr, *args, **kwargs)
            finally:
                if ctx is not None:
                    ctx.in_mutation_check = False

        return update

    def _wrap_set_to_running_backward(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def set_to_running_backward(mgr, *args, **kwargs):
            out = original(mgr, *args, **kwargs)
            try:
                observer.sink.on_set_to_running_backward()
            except Exception:
                observer._fail("set_to_running_backward")
            return out

        return set_to_running_backward

    # -- the node ------------------------------------------------------------

    def _wrap_check_invariants(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def check_invariants(node, inputs):
            static = list(getattr(node, "static_input_idxs", []))
            snapshot = {i: safe_ptr(inputs[i]) for i in static if i < len(inputs)}
            ctx = observer._ctx()
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
                        ctx.checks.append(observer._check_detail(node, snapshot, name))
            except Exception:
                observer._fail("check_invariants")
            return result

        return check_invariants

    @staticmethod
    def _check_detail(node: Any, snapshot: dict, status: str) -> CheckResult:
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

    def _wrap_check_static_inputs_are_stable(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def check_static(node, new_inputs):
            try:
                return original(node, new_inputs)
            except BaseException:
                ctx = observer._ctx()
                if ctx is not None:
                    ctx.raised_in = "check_static_inputs_are_stable"
                raise

        return check_static

    # -- skips ---------------------------------------------------------------

    def _wrap_skip_log(self, original: Any) -> Any:
        observer = self

        @functools.wraps(original)
        def log_skip(msg, *args, **kwargs):
            try:
                observer._on_skip(str(msg))
            except Exception:
                observer._fail("skip")
            return original(msg, *args, **kwargs)

        return log_skip

    def _on_skip(self, message: str) -> None:
        ctx = self._ctx()
        if ctx is None:
            # Not inside a tree call: a skip decided when Inductor compiled
            # the graph (or by the bisector); the session knows which graph.
            self.sink.on_compile_skip(message)
            return
        fields: dict = {}
        if ctx.in_mutation_check:
            fields["id"] = "S1"
            fields.update(self._fn_fields(ctx.fid))
        else:
            # Inside _run but not in the mutation check: the re-record limit.
            fields["id"] = "E5"
            fields["fid"] = ctx.fid
            fields.update(self._reason_fields(ctx.fid, self._reason(ctx)))
        fields["message"] = message
        ctx.skip_logged = True
        self._emit("skip", fields)


def skip_log_modules() -> list:
    """The torch._inductor modules that hold log_cudagraph_skip_and_bump_counter
    (each imported it by name, so each binding is patched)."""
    mods = []
    for name, mod in list(sys.modules.items()):
        if name.startswith("torch._inductor") and mod is not None:
            if getattr(mod, SKIP_LOG, None) is not None:
                mods.append(mod)
    return mods
