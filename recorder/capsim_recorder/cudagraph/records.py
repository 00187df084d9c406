"""What the cudagraph session keeps: per compiled graph (GraphRecord), per
callable Inductor handed to the trees (PartitionRecord), per function line
(FunctionRecord), and per buffered action (Item). No torch import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

MODE_PREFIX = {"forward": "fwd", "backward": "bwd", "inference": "inf"}
# Actions that stay valid in capsim's World without any function line: what
# an untranslated program's trace keeps (its events move onto them).
STANDALONE_ACTIONS = ("new_tensor", "mark_static", "reassign_data", "mark_step_begin", "read")


def mode_name(mode: Any) -> str:
    """CompilationMode.FORWARD / "forward" / None -> "forward"..."""
    text = getattr(mode, "name", mode)
    text = str(text).lower() if text is not None else "forward"
    return text if text in MODE_PREFIX else "forward"


@dataclass
class Item:
    """An action line and the events that follow it."""

    action: str
    fields: dict
    events: list = field(default_factory=list)
    note: str = ""  # what the action was, for x_from when it is dropped


@dataclass
class GraphRecord:
    """One graph Inductor compiled (one _compile_fx_inner call)."""

    local_id: int
    graph_id: Any
    mode: str
    base: str
    builtin: Optional[str]  # the optimizer whose step this graph is
    translation: Any = None
    translate_error: Optional[str] = None
    static_input_idxs: list = field(default_factory=list)
    partitions: list = field(default_factory=list)  # PartitionRecord
    skip_messages: list = field(default_factory=list)
    cudagraphed: bool = False
    functions: list = field(default_factory=list)  # FunctionRecord (whole graph when not cudagraphed)
    calls: int = 0
    # Per graph output, the stack trace PyTorch keeps for E1 (stack_traces.py),
    # and the user-visible outputs where known (a partition's choice).
    stack_traces: Optional[list] = None
    visible_outputs: Optional[set] = None
    # Placeholder name -> its mutating use's stack trace (S1's "Found from").
    mutating_uses: Optional[dict] = None


@dataclass
class PartitionRecord:
    """One callable Inductor handed to cudagraphify (a graph or a partition)."""

    graph: GraphRecord
    index: int
    static_input_idxs: list
    placeholder_names: list
    function: Optional["FunctionRecord"] = None
    stack_traces: Optional[list] = None  # per output, as handed to cudagraphify (None: not seen)


@dataclass
class FunctionRecord:
    name: str
    mode: str
    graph: GraphRecord
    body: Any  # aten_translate.FunctionBody, or None
    static_input_idxs: list  # PyTorch's positions (before dropping ints)
    untranslated: list = field(default_factory=list)
    param_input_idxs: Optional[list] = None  # capsim positions, from the first call
    called: bool = False
    builtin: Optional[str] = None
    stack_traces: Optional[list] = None  # the function line's `stack_traces`, or None (left out)
    mutating_use_stack_traces: Optional[list] = None  # the same for its inputs
