"""One cudagraph recording's session: the actions the program did, the
function lines of the graphs Inductor compiled, and the events the tree
manager's observer reported, buffered and written as one capsim trace.

`Session` ties together the parts, each in its own module: the names of
live tensors (registry.py), the buffered actions and events (buffer.py), the
compiled graphs and their function lines (graphs.py), the calls (calls.py)
and the writing (output.py). It is the sink the observer reports to
(values.NullSink's interface) and what the compile hooks (hooks.py) and the
program API (program_api.py) feed.

Names. capsim's actions name Python objects: the program's own
(`rec.param`, `rec.tensor`), the outputs of each compiled call
(`<function>_<call>_<k>`), `<param>.grad` after AccumulateGrad, and `t<k>`
for a tensor a call received that nobody named (autograd's grad of the loss,
say), which gets a `new_tensor` action first.

This module imports nothing from torch at import time.
"""

from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

from .. import aten_translate, dtypes
from . import output
from .buffer import ActionBuffer
from .calls import CallLog
from .graphs import GraphTable
from .records import FunctionRecord, GraphRecord, Item
from .registry import Registry
from .values import OBSERVED_KINDS, FidInfo, contiguous_strides


class Session:
    """Buffers one recording's trace; `write()` produces the file."""

    def __init__(self, name: str, *, generation_fn=None) -> None:
        self.name = name
        self.notes: list[str] = []
        self.untranslated_reasons: list[str] = []
        # Lines left out for passing the format's line limit (output.write).
        self.oversized: set = set()
        self.lock = threading.RLock()
        self.tls = threading.local()
        self.registry = Registry()
        self.buffer = ActionBuffer(self.registry, self.lock)
        self.table = GraphTable(self)
        self.calls = CallLog(self, generation_fn)
        self.auto = 0
        self.program_error: Optional[tuple[str, str]] = None
        # A name for a tensor nobody named yet, or None for `t<k>`: the
        # launcher names the script's nn.Parameters this way (it writes their
        # new_tensor action itself).
        self.on_unnamed: Optional[Any] = None
        # Told of every compiled graph's call before anything else
        # (graph, inputs): the launcher finds optimizer steps this way.
        self.on_graph_call: Optional[Any] = None
        # Set when a recording stops early (record(cudagraphs=True)'s limits):
        # the compile and call wrappers then pass straight through.
        self.closed = False
        # No CUDA device (the header's `"cudagraphs": false`): a graph that
        # reached no tree is a `call` with its `compile` event at the first
        # call, as capsim runs a compiled graph without CUDA graphs, so that a
        # what-if can ask what a GPU would do with it. Otherwise such a graph
        # (Inductor without triton.cudagraphs) is an `eager_call`.
        self.no_cudagraphs = False
        # Event kinds beyond OBSERVED_KINDS the observer can write on this
        # release (observer.extra_kinds: "demote" from 2.15), for `observes`.
        self.extra_kinds: list[str] = []

    # -- actions and events --------------------------------------------------

    def action(self, kind: str, fields: dict, note: str = "") -> Item:
        return self.buffer.action(kind, fields, note)

    def event(self, kind: str, fields: dict) -> None:
        self.buffer.event(kind, fields)

    @property
    def items(self) -> list[Item]:
        return self.buffer.items

    # -- names ---------------------------------------------------------------

    def name_of(self, t: Any, *, create: bool = True) -> Optional[str]:
        """The name of a tensor argument; a fresh `t<k>` with a new_tensor
        action for one nobody named."""
        name = self.registry.lookup(t)
        if name is not None or not create:
            return name
        if self.on_unnamed is not None:
            name = self.on_unnamed(t)
            if name is not None:
                return name
        name = f"t{self.auto}"
        self.auto += 1
        fields = self.new_tensor_fields(name, t.size(), t.dtype)
        fill = uniform_fill(t)
        if fill is not None:
            fields["fill"] = fill
        fields.update(strided_fields(t, fields["sizes"]))
        self.action("new_tensor", fields, note=f"new_tensor {name} (made by PyTorch)")
        self.registry.bind(t, name, "auto")
        return name

    def new_tensor_fields(self, name: str, sizes: Any, dtype: Any) -> dict:
        """new_tensor's name, sizes and dtype (left out when float32); a
        dtype the format cannot name is a note."""
        note = dtypes.unnamed(name, dtype)
        if note is not None:
            self.notes.append(note)
        return dtypes.new_tensor_fields(name, sizes, dtype)

    # -- the compile side (hooks.py) -------------------------------------------

    def new_graph(self, graph_id: Any, mode: Any, gm: Any, static_input_idxs: Sequence[int]) -> GraphRecord:
        return self.table.new_graph(graph_id, mode, gm, static_input_idxs)

    def finish_graph(self, g: GraphRecord, partition_maps: Optional[Sequence[Any]]) -> None:
        self.table.finish_graph(g, partition_maps)

    def make_step(self, g: GraphRecord, opt_name: str) -> None:
        self.table.make_step(g, opt_name)

    def graph_call_enter(self, g: GraphRecord, inputs: Sequence[Any]) -> Any:
        return self.calls.graph_call_enter(g, inputs)

    def graph_call_exit(self, token: Any, outputs: Any, error: Optional[BaseException], tree_runs: int) -> None:
        self.calls.graph_call_exit(token, outputs, error, tree_runs)

    @staticmethod
    def static_of(f: FunctionRecord) -> list[int]:
        return output.static_of(f)

    # -- the observer's sink -------------------------------------------------------

    def bind_function(self, fid: int, inputs: Sequence[Any], static_input_idxs: Sequence[int], mode: Any) -> FidInfo:
        return self.table.bind_function(fid, inputs, static_input_idxs, mode)

    def on_run_enter(self, fid: int, info: FidInfo, inputs: Sequence[Any]) -> Any:
        return self.calls.on_run_enter(fid, info, inputs)

    def on_run_exit(self, token: Any, outputs: Any, error: Optional[BaseException]) -> None:
        self.calls.on_run_exit(token, outputs, error)

    def on_compile_skip(self, message: str) -> None:
        self.table.on_compile_skip(message)

    def on_set_to_running_backward(self) -> None:
        self.action("set_to_running_backward", {})

    # -- writing -----------------------------------------------------------------

    def write(self, path: str, *, producer: str, seed: int, config: dict, extensions: dict,
              extra_notes: Optional[list] = None) -> dict:
        """Writes the trace (output.write); returns counts for the summary."""
        return output.write(self, path, producer=producer, seed=seed, config=config,
                            extensions=extensions, extra_notes=extra_notes)


def uniform_fill(t: Any) -> Optional[float]:
    """The one value every element holds, if there is one (a float32
    shortest decimal), else None. Reads the tensor: only for tensors PyTorch
    made (never a program's), and only small ones."""
    try:
        n = int(t.numel())
        if n == 0 or n > 1 << 20:
            return None
        flat = t.detach().reshape(-1)
        lo = float(flat.min())
        hi = float(flat.max())
        if lo == hi:
            return aten_translate.f32(lo)
    except Exception:
        return None
    return None


__all__ = ["Session", "OBSERVED_KINDS"]


def strided_fields(t: Any, sizes: list) -> dict:
    """new_tensor's `strides` and `offset` for a tensor that is not
    contiguous from the start of its storage (a slice of a batch, a
    transposed input): PyTorch's own geometry, so that a compiled graph's
    views of it land where they do on the GPU. Empty when contiguous."""
    try:
        strides = [int(x) for x in t.stride()]
        offset = int(t.storage_offset())
    except Exception:
        return {}
    if (strides == contiguous_strides(sizes) or not all(sizes)) and offset == 0:
        return {}
    return {"strides": strides, "offset": offset} if offset else {"strides": strides}

