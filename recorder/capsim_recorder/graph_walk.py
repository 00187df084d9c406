"""Walks the autograd graph PyTorch built, from a loss, into trace fields.

The result is the body of an `autograd_graph` action: the nodes reachable from
loss.grad_fn through next_functions, breadth-first in next_functions order
(node 0 is the root), each with its kind, input metadata, edges, saved values
and annotations, plus the table of tensors the nodes save or accumulate into.

It must run before the backward: a backward without retain_graph frees the
saved tensors, and reading `_saved_*` afterwards raises.

PyTorch surfaces used (see README.md for which are public):
  Tensor.grad_fn, Node.next_functions, Node.name()   public (torch.autograd.graph.Node)
  AccumulateGrad.variable                            public attribute, undocumented
  Node._input_metadata                               internal
  Node._saved_<x>                                    internal (codegen'd nodes)
"""

from __future__ import annotations

from collections import deque
from typing import Any, Optional

import torch
from torch.autograd.function import BackwardCFunction

from . import aot_body, dtypes, node_fields, torch_compat
from .annotations import Annotations
from .torch_compat import is_traceable_wrapper_subclass

# Hand-written C++ nodes that the format names by their own kind.
_OWN_KIND = {"AccumulateGrad", "CopyBackwards", "CopySlices"}
# Hand-written C++ nodes torch._C._functions also binds, which are not
# codegen'd derivatives and which the format has no kind for.
_NOT_FUNCTIONAL = {
    "Error", "NotImplemented", "DelayedError", "UndefinedGradBackward",
    "UndefinedGrad", "SendRpcBackward", "GraphRoot", "Identity",
}


# Whether a Python Function's (and an AOT region's) ctx.saved_tensors are
# written as its `saved`. On: compiled autograd lifts them (they are the
# node's saved variables), and capsim's model of an AOT backward needs them.
PYNODE_SAVED_TENSORS = True


class UnsupportedGraph(Exception):
    """The graph holds something the trace format cannot express."""


def dtype_name(dtype: torch.dtype) -> str:
    name = dtypes.name_of(dtype)
    if name is None:
        raise UnsupportedGraph(f"dtype {dtype} has no name in the trace format")
    return name


def node_kind(node: Any) -> str:
    cls = type(node)
    name = cls.__name__
    if name in _OWN_KIND:
        return name
    if isinstance(node, BackwardCFunction):
        # AOTAutograd's compiled region is itself an autograd.Function whose
        # class is named CompiledFunction, so its node class name tells it apart.
        return "CompiledFunctionBackward" if name == "CompiledFunctionBackward" else "PyNode"
    if name.startswith("CppNode"):
        return "CppNode"
    # Codegen'd derivative nodes are all bound in torch._C._functions under
    # their class name; checking identity rather than a name pattern keeps an
    # unknown hand-written node from passing as functional.
    if name not in _NOT_FUNCTIONAL and torch_compat.codegen_node_class(name) is cls:
        return "functional"
    raise UnsupportedGraph(f"autograd node {name} has no kind in the trace format")


def _is_int(value: Any) -> bool:
    # bool is an int in Python, but a saved flag is not a size.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(
        value, torch.SymInt
    )


class TensorTable:
    """Names tensors t0, t1, ... in the order the walk meets them.

    Compiled autograd lifts one graph input per TensorImpl it collects
    (TensorArgs::lookup in torch/csrc/dynamo/compiled_autograd.h keys on
    unsafeGetTensorImpl()), so the table does too: a saved tensor read twice
    (a fresh Python object per `_saved_x` read, the same TensorImpl) is one
    entry, a leaf saved by mm and accumulated by AccumulateGrad is one entry,
    and two views of one storage with equal geometry (`x.view(-1, 784)` taken
    twice) are two, as in PyTorch. `_keep` holds every tensor, so no
    TensorImpl address is reused while the table lives.
    """

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._by_impl: dict[int, str] = {}
        self._keep: list[torch.Tensor] = []  # TensorImpl addresses stay unique

    def _add(self, t: torch.Tensor) -> str:
        name = f"t{len(self.entries)}"
        entry: dict[str, Any] = {
            "name": name,
            "sizes": [int(s) for s in t.shape],
            "dtype": dtype_name(t.dtype),
        }
        if t.requires_grad:
            entry["requires_grad"] = True
        if is_traceable_wrapper_subclass(t):
            entry["subclass"] = True
        self.entries.append(entry)
        self._keep.append(t)
        return name

    def saved_field(self, t: torch.Tensor, output: bool) -> str:
        """A saved field's tensor: a saved output is a tensor of its own
        (compiled autograd lifts each unpacking separately)."""
        return self._add(t) if output else self.saved(t)

    def saved(self, t: torch.Tensor) -> str:
        name = self._by_impl.get(t._cdata)
        if name is None:
            name = self._add(t)
            self._by_impl[t._cdata] = name
        return name

    def variable(self, t: torch.Tensor) -> str:
        name = self.saved(t)
        # AccumulateGrad's key holds the leaf's .grad: whether it is defined
        # when the backward starts decides a cache hit (zero_grad(set_to_none=
        # False) leaves it defined).
        if t.grad is not None:
            entry = self.entries[int(name[1:])]
            entry["grad_defined"] = True
        return name


def _saved_fields(node: Any, kind: str, tensors: TensorTable) -> tuple[list, list, list]:
    saved: list[str] = []
    sizes: list[int] = []
    scalars: list[float] = []
    if kind in ("PyNode", "CompiledFunctionBackward"):
        # A Python Function keeps what ctx.save_for_backward got in
        # ctx.saved_tensors and has no _saved_<x> attributes; those are its
        # saved variables (docs/trace-format.md section 5.1).
        if PYNODE_SAVED_TENSORS:
            for t in node.saved_tensors:
                if t is not None:
                    saved.append(tensors.saved(t))
        return saved, sizes, scalars
    for attr in sorted(a for a in dir(node) if a.startswith(torch_compat.SAVED_PREFIX)):
        value = getattr(node, attr)
        if isinstance(value, torch.Tensor):
            saved.append(tensors.saved(value))
        elif _is_int(value):
            sizes.append(int(value))
        elif isinstance(value, float):
            scalars.append(value)
        elif isinstance(value, (tuple, list)) and value:
            if all(_is_int(v) for v in value):
                sizes.extend(int(v) for v in value)
            elif all(v is None or isinstance(v, torch.Tensor) for v in value):
                # A saved TensorList (cat, stack): one name per tensor.
                saved.extend(tensors.saved(v) for v in value if v is not None)
        # None (an undefined saved tensor), bools, dtypes, strings, devices:
        # not tensors, sizes or scalars, so the format does not carry them.
    return saved, sizes, scalars


def _flatten_sizes(values: list) -> list[int]:
    """The sizes among `values`, in order: what compiled autograd lifts."""
    out: list[int] = []
    for v in values:
        if isinstance(v, dict) and "symints" in v:
            out.extend(v["symints"])
        elif isinstance(v, dict) and "symint_lists" in v:
            for sizes in v["symint_lists"]:
                out.extend(sizes)
        elif isinstance(v, dict) and "symint" in v:
            out.append(v["symint"])
    return out


def _flatten_tensors(values: list) -> list[str]:
    """The tensor names among `values`, in order: what compiled autograd lifts."""
    out: list[str] = []
    for v in values:
        if isinstance(v, dict) and "tensor" in v and not v.get("packed"):
            out.append(v["tensor"])
        elif isinstance(v, dict) and "tensors" in v:
            out.extend(t for t in v["tensors"] if t is not None)
    return out


def _layout(node: Any, kind: str, tensors: TensorTable, notes: Annotations) -> Optional[list]:
    """`saved_values` for a node: its fields in compiled_args order (see
    node_fields.py), or None where compiled autograd collects no field list
    (AccumulateGrad, CopySlices, Python Functions)."""
    def edge_meta(i: int) -> Optional[Any]:
        nexts = node.next_functions
        if i >= len(nexts) or nexts[i][0] is None:
            return None
        fn, nr = nexts[i]
        metas = torch_compat.input_metadata(fn)
        return metas[nr] if nr < len(metas) else None

    if kind == "CopyBackwards":
        # Hand-written (torch/csrc/autograd/functions/tensor.h): it keeps the
        # source's TensorOptions, the source being its second edge.
        meta = edge_meta(1)
        text = None if meta is None else node_fields.options_text(meta.dtype, meta.device)
        return [{"const": text} if text else {"unknown": "at::TensorOptions src_options"}]
    if kind == "CopySlices":
        # CopySlices::compiled_args collects its inner node's fields, which
        # only a program's annotation can name (annotations.py).
        inner, saved = notes.inner_for(node), notes.inner_saved_for(node)
        if inner is None or saved is None:
            return None
        stand_in = type("InnerNode", (), {f"{torch_compat.SAVED_PREFIX}{k}": v for k, v in saved.items()})()
        return node_fields.saved_values(stand_in, tensors.saved_field, edge_meta, class_name=inner)
    if kind != "functional":
        return None
    return node_fields.saved_values(node, tensors.saved_field, edge_meta)


def _edges(node: Any, index: dict, order: list, queue: deque) -> list:
    """The node's next edges as [node index, input_nr] (None for no edge),
    queueing the nodes the walk meets first."""
    nexts: list[Optional[list[int]]] = []
    for fn, input_nr in node.next_functions:
        if fn is None:
            nexts.append(None)
            continue
        if id(fn) not in index:
            index[id(fn)] = len(order)
            order.append(fn)
            queue.append(fn)
        nexts.append([index[id(fn)], int(input_nr)])
    return nexts


def _add_saved(entry: dict, node: Any, kind: str, tensors: TensorTable, notes: Annotations) -> None:
    """saved, saved_sizes, saved_scalars and saved_values."""
    layout = _layout(node, kind, tensors, notes)
    # With a layout, its tensors are the names; the _saved_ walk only
    # gives the scalars then (into a table of its own, so that it names
    # nothing twice).
    saved, sizes, scalars = _saved_fields(
        node, kind, tensors if layout is None else TensorTable()
    )
    if layout is not None:
        # The sizes compiled autograd lifts are the SymInt fields only (a
        # Scalar alpha or an int64 reduction is a constant of the call).
        sizes = _flatten_sizes(layout)
        # ... and the tensors are lifted in declaration order, not in
        # the alphabetical order of the _saved_ attributes.
        saved = _flatten_tensors(layout)
    if saved:
        entry["saved"] = saved
    if sizes:
        entry["saved_sizes"] = sizes
    if scalars:
        entry["saved_scalars"] = scalars
    if layout:
        entry["saved_values"] = layout


def _add_notes(entry: dict, node: Any, kind: str, notes: Annotations) -> None:
    """hooks, inner (with its geometry), function and aot_backward."""
    hooks = notes.hooks_for(node)
    if hooks:
        entry["hooks"] = hooks
    inner = notes.inner_for(node)
    if inner is not None:
        if kind != "CopySlices":
            raise UnsupportedGraph(f"an inner node named for a {kind} node")
        entry["inner"] = inner
        geometry = notes.geometry_for(node)
        if geometry is not None:
            entry["base"], entry["view"] = geometry
    if kind in ("PyNode", "CompiledFunctionBackward"):
        # Which Function class: compiled autograd keys a Python node on
        # its class, not its name.
        entry["function"] = notes.function_ordinal(type(node))
    if kind == "CompiledFunctionBackward":
        try:
            entry["aot_backward"] = aot_body.aot_backward(node)
        except aot_body.UnsupportedRegion as e:
            raise UnsupportedGraph(f"{type(node).__name__}: {e}") from None


def walk(loss: torch.Tensor, notes: Optional[Annotations] = None) -> dict[str, Any]:
    """The autograd graph behind `loss`: {"root", "tensors", "nodes"}."""
    root = loss.grad_fn
    if root is None:
        raise UnsupportedGraph("the loss has no grad_fn (nothing requires grad)")
    notes = notes or Annotations()
    index: dict[int, int] = {id(root): 0}
    order: list[Any] = [root]  # also keeps every node alive during the walk
    queue: deque[Any] = deque([root])
    tensors = TensorTable()
    nodes: list[dict[str, Any]] = []
    while queue:
        node = queue.popleft()
        kind = node_kind(node)
        nexts = _edges(node, index, order, queue)
        metas = torch_compat.input_metadata(node)
        entry: dict[str, Any] = {
            "name": type(node).__name__,
            "kind": kind,
            "inputs": [{"sizes": [int(s) for s in m.shape], "dtype": dtype_name(m.dtype)} for m in metas],
            "next": nexts,
        }
        spanned = node_fields.list_edges(node) if kind == "functional" else None
        if spanned:
            # One TensorList argument: needs_input_grad has one entry for it.
            entry["input_ranges"] = [spanned]
        _add_saved(entry, node, kind, tensors, notes)
        _add_notes(entry, node, kind, notes)
        subclass = [i for i in range(len(metas)) if notes.is_subclass_input(node, i)]
        if node is root and is_traceable_wrapper_subclass(loss):
            subclass = sorted(set(subclass) | {0})
        for i in subclass:
            entry["inputs"][i]["subclass"] = True
        if kind == "AccumulateGrad":
            entry["variable"] = tensors.variable(node.variable)
        nodes.append(entry)
    return {"root": 0, "tensors": tensors.entries, "nodes": nodes}
