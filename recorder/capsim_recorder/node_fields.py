"""The fields a codegen'd autograd node hands to compiled autograd, in order.

Compiled autograd's `compiled_args` collects a node's saved fields in the
order the node's C++ struct declares them, and the captured graph passes them
to `ops.<Node>` in that order (after the grads and `needs_input_grad`). Python
exposes only some of them (`_saved_<x>`: tensors, sizes, scalars); the
scalar types, layouts and TensorOptions a node keeps have no accessor. So the
recorder reads each release's own declaration order from the generated header
that the wheel ships (`torch/include/torch/csrc/autograd/generated/
Functions.h`) and writes, per node, `saved_values`: every field in that order,
as a tensor name, a size (lifted by compiled autograd) or a constant in the
node-line syntax (docs/trace-format.md §5.1). A field whose value the walk
cannot know is written as {"unknown": ...}, so it shows as a difference rather
than as a guess.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable, Optional

import torch

from . import operands, torch_compat

# Field types that are bookkeeping, not collected as arguments. A
# TensorList's `X_size_` is collected, first of all the fields, where the
# node also keeps `X_args_scalartypes` (CatBackward0, StackBackward0,
# BlockDiagBackward0: one TensorList argument spanning every next edge);
# elsewhere it is left out (list_fields below).
_SKIPPED = re.compile(r"_released_$")
# c10::ScalarType numbers (c10/core/ScalarType.h), as compiled autograd packs them.
SCALAR_TYPES = {
    torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
    torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.complex64: 9,
    torch.complex128: 10, torch.bool: 11, torch.bfloat16: 15,
}
# Forward arguments whose position among the node's next edges is the usual one.
_EDGE_OF = {"self": 0, "other": 1}


def _header() -> str:
    return os.path.join(
        os.path.dirname(torch.__file__),
        "include", "torch", "csrc", "autograd", "generated", "Functions.h",
    )


@functools.lru_cache(maxsize=1)
def declared_fields() -> dict[str, list[tuple[str, str]]]:
    """{node class: [(C++ type, field name), ...]} in declaration order."""
    fields: dict[str, list[tuple[str, str]]] = {}
    current: Optional[str] = None
    body = False
    with open(_header(), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"struct (?:TORCH_API )?(\w+) : public \w+ \{", line)
            if m:
                current, body = m.group(1), False
                fields[current] = []
                continue
            if current is None:
                continue
            if "apply_with_saved(" in line:
                body = True
                continue
            if line.startswith("};"):
                current = None
                continue
            if not body:
                continue
            m = re.match(r"\s+(.+?)\s+(\w+)(?:\s*=.*)?;\s*$", line)
            if m and not _SKIPPED.search(m.group(2)):
                fields[current].append((m.group(1), m.group(2)))
    return {name: _list_sizes_first(fs) for name, fs in fields.items()}


def _list_sizes_first(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A TensorList argument's count (`X_size_`) leads the call, as compiled
    autograd passes it (CatBackward0(grads, needs, 11, dim, ...)); a `_size_`
    without `X_args_scalartypes` beside it is bookkeeping and left out."""
    names = {n for _, n in fields}
    counts = [f for f in fields if f[1].endswith("_size_") and f[1][:-6] + "_args_scalartypes" in names]
    rest = [f for f in fields if not f[1].endswith("_size_")]
    return counts + rest


def list_edges(node: Any) -> Optional[int]:
    """The next edges a node's one TensorList argument spans (all of them),
    or None for a node without one (see _list_sizes_first)."""
    fields = declared_fields().get(type(node).__name__) or []
    if any(n.endswith("_size_") for _, n in fields):
        return len(node.next_functions)
    return None


def scalar_type_text(dtype: torch.dtype) -> Optional[str]:
    st = SCALAR_TYPES.get(dtype)
    return None if st is None else str(st)


def options_text(dtype: torch.dtype, device: torch.device) -> Optional[str]:
    """A TensorOptions as compiled autograd packs it: (requires_grad,
    memory_format, device, scalar type, layout, pinned_memory)."""
    st = scalar_type_text(dtype)
    return None if st is None else f"(None, None, {device}, {st}, 0, None)"


def const_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(const_text(v) for v in value) + "]"
    if isinstance(value, torch.dtype):
        return scalar_type_text(value) or f"<{value}>"
    if isinstance(value, str):
        return "'" + value + "'"
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(_signed(value))  # an int64 field (a dim of -1) comes back unsigned
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    return f"<{type(value).__name__}>"


def _base_meta(node: Any, base: str, edge_meta: Callable[[int], Optional[Any]]
               ) -> Optional[tuple[torch.dtype, torch.device]]:
    """The dtype and device of the forward argument `base` of a node."""
    saved = getattr(node, f"{torch_compat.SAVED_PREFIX}{base}", None)
    if isinstance(saved, torch.Tensor):
        return saved.dtype, saved.device
    if base in _EDGE_OF:
        m = edge_meta(_EDGE_OF[base])
        if m is not None:
            return m.dtype, m.device
    metas = torch_compat.input_metadata(node) if hasattr(node, "_input_metadata") else ()
    # Neither saved nor an edge (a Python number, or a tensor that needs no
    # grad): the dtype the forward's call had for it, where a watch noted
    # it (operands.py: an int is int64, a float float64), on the output's
    # device (a number's is never asked: only self has TensorOptions fields).
    noted = operands.operand_dtype(node, _EDGE_OF[base]) if base in _EDGE_OF else None
    if noted is not None:
        return noted, metas[0].device if metas else None
    # Else its dtype is taken to be the node's own output's, which holds
    # unless the forward promoted types (a difference then shows in the
    # comparison).
    if metas:
        return metas[0].dtype, metas[0].device
    return None


def _saved_variable(node: Any, attr: str, value: Any, tensor_name: Callable[[torch.Tensor, bool], str]) -> Any:
    if value is None or value is _MISSING:
        return None
    # A saved output (`result`, or one whose unpacked grad_fn is the node
    # itself) unpacks to a new tensor each time, so compiled autograd lifts
    # it as an input of its own.
    output = attr.startswith("result") or value.grad_fn is node
    entry = {"tensor": tensor_name(value, output)}
    # Saved under torch.autograd.graph.saved_tensors_hooks: compiled
    # autograd lifts what the pack hook returned (packed_data) and calls the
    # unpack hook in the graph.
    raw = getattr(node, f"{torch_compat.RAW_SAVED_PREFIX}{attr}", None)
    if raw is not None and getattr(raw, "unpack_hook", None) is not None:
        entry["packed"] = True
    return entry


def _derived(node: Any, cpp_type: str, name: str, attr: str, edge_meta: Callable[[int], Optional[Any]]) -> Any:
    """A ScalarType, TensorOptions or Layout field, derived from the tensor it describes."""
    suffix = {"at::ScalarType": "_scalar_type", "at::TensorOptions": "_options",
              "at::Layout": "_layout"}[cpp_type]
    base = attr[: -len(suffix)] if attr.endswith(suffix) else attr
    meta = _base_meta(node, base, edge_meta)
    if cpp_type == "at::Layout":
        return {"const": "0"}  # the walk meets strided tensors only
    if meta is None:
        return {"unknown": f"{cpp_type} {name}"}
    if cpp_type == "at::ScalarType":
        text = scalar_type_text(meta[0])
    else:
        text = None if meta[1] is None else options_text(*meta)
    return {"const": text} if text else {"unknown": f"{cpp_type} {name}"}


def _list_field(node: Any, name: str, edge_meta: Callable[[int], Optional[Any]]) -> Any:
    """A TensorList argument's count, dtypes or sizes, which Python cannot
    read from the node: from its next edges' input metadata, which the list
    spans whole (list_edges)."""
    n = len(node.next_functions)
    if name.endswith("_size_"):
        return {"const": str(n)}
    metas = [edge_meta(k) for k in range(n)]
    if any(m is None for m in metas):
        return {"unknown": name}
    if name.endswith("_args_scalartypes"):
        types = [scalar_type_text(m.dtype) for m in metas]
        return {"unknown": name} if None in types else {"const": "[" + ", ".join(types) + "]"}
    return {"symint_lists": [[int(s) for s in m.shape] for m in metas]}


def _field_value(node: Any, cpp_type: str, name: str, tensor_name: Callable[[torch.Tensor, bool], str],
                 edge_meta: Callable[[int], Optional[Any]]) -> Any:
    attr = name[:-1] if name.endswith("_") else name
    value = getattr(node, f"{torch_compat.SAVED_PREFIX}{attr}", _MISSING)
    if value is _MISSING and name.endswith(("_size_", "_args_scalartypes", "_args_sizes_symint")):
        return _list_field(node, name, edge_meta)
    if cpp_type == "SavedVariable":
        return _saved_variable(node, attr, value, tensor_name)
    if cpp_type == "std::vector<SavedVariable>":
        items = [] if value is _MISSING else list(value)
        return {"tensors": [None if t is None else tensor_name(t, False) for t in items]}
    if "SymInt" in cpp_type and value is not _MISSING:
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return {"symints": [_signed(v) for v in value]}
        return {"symint": _signed(value)}
    if cpp_type in ("at::ScalarType", "at::TensorOptions", "at::Layout"):
        return _derived(node, cpp_type, name, attr, edge_meta)
    if value is not _MISSING:
        return {"const": const_text(value)}
    return {"unknown": f"{cpp_type} {name}"}


def saved_values(
    node: Any,
    tensor_name: Callable[[torch.Tensor, bool], str],
    edge_meta: Callable[[int], Optional[Any]],
    class_name: Optional[str] = None,
) -> Optional[list[Any]]:
    """The node's fields in compiled_args order, or None for a node the header
    does not declare (hand-written nodes: the caller handles those).
    `edge_meta(i)` is the InputMetadata behind next edge i, or None;
    `tensor_name(t, is_output)` names a saved tensor.
    `class_name` names the node class when `node` stands in for one (a
    CopySlices' inner node, whose saved tensors a program annotated)."""
    fields = declared_fields().get(class_name or type(node).__name__)
    if fields is None:
        return None
    return [_field_value(node, cpp_type, name, tensor_name, edge_meta) for cpp_type, name in fields]


_MISSING = object()


def _signed(value: Any) -> int:
    """A SymInt as the int64 it is: the Python binding hands a negative one
    (EmbeddingBackward0's padding_idx of -1) back as its unsigned 64-bit
    pattern."""
    v = int(value)
    return v - (1 << 64) if v >= (1 << 63) else v
