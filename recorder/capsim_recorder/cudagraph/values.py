"""What the tree observer and the session share about the cudagraph trees,
without torch: capsim's event kinds and record reasons, PyTorch's ids and
pointers as capsim writes them, tensors recognised by duck typing
(`data_ptr`, `size`, `stride`, `element_size`), the map from PyTorch's input
positions to capsim's, and the sink interface the observer reports to
(cudagraph/observer.py; the session implements it).
"""

from __future__ import annotations

import bisect
import weakref
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


def weak_refs(values: Sequence[Any]) -> list:
    """Weak references to the tensors among `values` (identity checks after a call)."""
    out = []
    for v in values:
        if is_tensor(v):
            try:
                out.append(weakref.ref(v))
            except TypeError:
                pass
    return out


def contiguous_strides(sizes: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(list(sizes)):
        out.insert(0, acc)
        acc *= max(int(s), 1)
    return out


def safe_name(name: str) -> str:
    """A function name made fit for an object name (no '.')."""
    return name.replace(".", "_")
