"""An aten node as capsim's `generic` op: its effect from its metadata.

An op capsim has no exact kernel for (docs/trace-format.md §4.1) is written
as `{"op": "generic", "target", "attrs", "args", "results", "views",
"writes"}`:

  target   the overload's name (aten.convolution.default), or the qualified
           name of a Python function (a higher-order op)
  attrs    the non-tensor arguments as deterministic text: an OpOverload's in
           its schema's order, positional ones bare and keyword-only ones as
           name=value, an absent optional tensor as None, a tensor inside a
           list of other things as T; floats as Python's repr (the shortest
           text that reads back to the same double); SymInts at their hints;
           a device by its type; no addresses or object ids
  args     the tensor operands in the same order, a tensor list's elements
           in place
  results  per returned value, its sizes, strides, storage offset and dtype
           from node.meta["val"] (symbolic ones at their hints), or None for
           a non-tensor
  views    per result, the arg whose storage it aliases (a return whose
           alias set, `Tensor(a)`, is an argument's), or None; left out when
           every result is fresh
  writes   the args a schema argument marked `(a!)` writes

`operator.getitem` of such an op's tuple is capsim's `getitem`; a tensor the
graph module holds (get_attr) a generic op `get_attr` with no args.

Expressible is what the format holds: at most 8 dims, 1024 tensor args and 1024
results, dtypes in dtypes.DTYPES, strided tensors; anything else raises
Unexpressible with the reason. Only torch.fx objects and the metadata are
read; torch is imported lazily, this module imports without it.
"""

from __future__ import annotations

import enum
import hashlib
import json
import operator
from typing import Any, Callable, Optional

from . import dtypes, torch_compat

MAX_DIMS = 8
MAX_ARGS = 1024
MAX_RESULTS = 1024
MAX_TARGET = 256
MAX_ATTRS = 4096


class Unexpressible(Exception):
    """A node even a generic op cannot stand for (the reason)."""


def is_tensor(v: Any) -> bool:
    try:
        import torch

        return isinstance(v, torch.Tensor)
    except Exception:  # pragma: no cover - torch missing
        return False


def dtype_name(dtype: Any) -> str:
    name = dtypes.name_of(dtype)
    if name is None:
        raise Unexpressible(f"dtype {str(dtype).replace('torch.', '')}")
    return name


def _hinted(values: Any) -> tuple[list[int], bool]:
    out, symbolic = [], False
    for d in values:
        if type(d) is not int:
            symbolic = True
        out.append(_hint(d))
    return out, symbolic


def _hint(x: Any) -> Any:
    if type(x) in (int, float, bool):
        return x
    value = torch_compat.size_hint(x)
    if value is None:
        raise Unexpressible("a symbolic value without a hint (unbacked)")
    return value


def tensor_meta(v: Any) -> tuple[dict, bool]:
    """(the format's tensor metadata of an example value, whether a symbolic
    size, stride or offset was taken at its hint)."""
    if str(getattr(v, "layout", "")) != "torch.strided":
        raise Unexpressible(f"layout {getattr(v, 'layout', '?')}")
    if v.dim() > MAX_DIMS:
        raise Unexpressible(f"a {v.dim()}-d tensor")
    dtype = dtype_name(v.dtype)
    sizes, s1 = _hinted(v.shape)
    strides, s2 = _hinted(v.stride())
    offset, s3 = _hinted([v.storage_offset()])
    meta = {"sizes": sizes, "strides": strides, "storage_offset": offset[0], "dtype": dtype}
    return meta, s1 or s2 or s3


class Renderer:
    """Renders non-tensor values as attrs text; `symbolic` is set when a
    SymInt was taken at its hint."""

    def __init__(self, is_tensor_node: Callable[[Any], bool]) -> None:
        self.is_tensor_node = is_tensor_node
        self.symbolic = False

    def text(self, x: Any) -> str:
        import torch
        import torch.fx

        if isinstance(x, torch.fx.Node):
            if self.is_tensor_node(x):
                return "T"
            v = x.meta.get("val") if x.op != "get_attr" else None
            return self.text(v) if v is not None else f"@{x.target if x.op == 'get_attr' else x.name}"
        if x is None or isinstance(x, (bool, int, str)):
            return json.dumps(x) if isinstance(x, str) else str(x)
        if isinstance(x, float):
            return repr(x)
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            self.symbolic = True
            return self.text(_hint(x))
        if isinstance(x, (list, tuple)):
            inner = ", ".join(self.text(e) for e in x)
            return f"[{inner}]" if isinstance(x, list) else f"({inner})"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{self.text(k)}: {self.text(x[k])}" for k in sorted(x, key=str)) + "}"
        if isinstance(x, torch.device):
            return x.type
        if isinstance(x, (torch.dtype, torch.layout, torch.memory_format)):
            return str(x)
        if isinstance(x, torch.Generator):
            return "Generator"
        if isinstance(x, enum.Enum):
            return str(x)
        if torch_compat.is_op_overload(x):
            return str(x)
        name = getattr(x, "__qualname__", None)
        if name and callable(x):
            return f"{getattr(x, '__module__', '')}.{name}"
        return type(x).__name__


def _flat_tensors(x: Any, is_tensor_node: Callable[[Any], bool]) -> list:
    import torch.fx

    if isinstance(x, torch.fx.Node):
        return [x] if is_tensor_node(x) else []
    if isinstance(x, (list, tuple)):
        return [t for e in x for t in _flat_tensors(e, is_tensor_node)]
    if isinstance(x, dict):
        return [t for k in x for t in _flat_tensors(x[k], is_tensor_node)]
    return []


def bound_arguments(node: Any) -> list[tuple[Optional[str], Any, bool]]:
    """(schema name or None, value, keyword-only) per argument given, in
    the schema's order for an OpOverload, else positional then keywords."""
    schema = torch_compat.op_schema(node.target)
    if schema is None:
        out = [(None, a, False) for a in node.args]
        return out + [(k, node.kwargs[k], True) for k in node.kwargs]
    out = []
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args) and not arg.kwarg_only:
            out.append((arg.name, node.args[i], False))
        elif arg.name in node.kwargs:
            out.append((arg.name, node.kwargs[arg.name], arg.kwarg_only))
    return out


def _attrs(bound: list, render: Renderer) -> str:
    parts = []
    for name, value, kwarg_only in bound:
        if render.is_tensor_node(value) or (
            isinstance(value, (list, tuple)) and value and all(render.is_tensor_node(e) for e in value)
        ):
            continue
        text = render.text(value)
        parts.append(f"{name}={text}" if kwarg_only and name else text)
    text = ", ".join(parts)
    if len(text.encode()) > MAX_ATTRS:
        digest = hashlib.sha256(text.encode()).hexdigest()[:32]
        text = text[: MAX_ATTRS - 64] + f"... sha256:{digest}"
        while len(text.encode()) > MAX_ATTRS:  # (multi-byte text)
            text = text[:-100] + f"... sha256:{digest}"
    return text


def _results(v: Any) -> tuple[list, bool, bool]:
    """(results, whether symbolic, whether the op returns a tuple)."""
    if is_tensor(v):
        meta, symbolic = tensor_meta(v)
        return [meta], symbolic, False
    if isinstance(v, (list, tuple)):
        out, symbolic = [], False
        for e in v:
            if is_tensor(e):
                meta, s = tensor_meta(e)
                out.append(meta)
                symbolic = symbolic or s
            elif isinstance(e, (list, tuple)):
                raise Unexpressible("a result list inside a tuple")
            else:
                out.append(None)
        if len(out) > MAX_RESULTS:
            raise Unexpressible(f"{len(out)} results")
        return out, symbolic, True
    return [None], False, False


def _flat_args(bound: list, is_tensor_node: Callable[[Any], bool]) -> tuple[list, list]:
    """(tensor operand nodes in order, the schema argument name of each)."""
    nodes, names = [], []
    for name, value, _ in bound:
        for t in _flat_tensors(value, is_tensor_node):
            nodes.append(t)
            names.append(name)
    return nodes, names


def _aliasing(target: Any, names: list, n_results: int) -> tuple[Optional[list], list]:
    """(views per result or None when all fresh, written arg positions)."""
    info = torch_compat.op_alias_info(target)
    if info is None:
        return None, []
    arg_sets, out_sets = info
    writes = [k for k, name in enumerate(names) if name in arg_sets and arg_sets[name][1]]
    if len(out_sets) == 1 and n_results != 1:
        out_sets = out_sets * n_results  # one list return (split): each element
    views: list = []
    for i in range(n_results):
        alias = out_sets[i][0] if i < len(out_sets) else set()
        sources = [name for name in dict.fromkeys(names) if alias & arg_sets.get(name, (set(), False))[0]]
        if not sources:
            views.append(None)
            continue
        positions = [k for k, name in enumerate(names) if name == sources[0]]
        if len(positions) != 1:
            raise Unexpressible("a result that aliases a tensor list")
        views.append(positions[0])
    return (views if any(v is not None for v in views) else None), writes


def generic_fields(node: Any, target: str, is_tensor_node: Callable[[Any], bool]) -> tuple[list, dict, bool, bool]:
    """(the operand nodes, the generic op's fields but args, whether a
    symbolic value was taken at its hint, whether the op returns a tuple)."""
    if not 1 <= len(target.encode()) <= MAX_TARGET:
        raise Unexpressible(f"a target name of {len(target.encode())} bytes")
    if "val" not in node.meta:
        raise Unexpressible("no example value")
    v = node.meta["val"]
    bound = bound_arguments(node)
    render = Renderer(is_tensor_node)
    attrs = _attrs(bound, render)
    operands, names = _flat_args(bound, is_tensor_node)
    if len(operands) > MAX_ARGS:
        raise Unexpressible(f"{len(operands)} tensor operands")
    if v is None and torch_compat.op_returns_nothing(node.target):
        results, symbolic, is_tuple = [], False, True
    else:
        results, symbolic, is_tuple = _results(v)
    views, writes = _aliasing(node.target, names, len(results))
    fields: dict = {"target": target, "attrs": attrs, "results": results}
    if views is not None:
        fields["views"] = views
    if writes:
        fields["writes"] = writes
    return operands, fields, symbolic or render.symbolic, is_tuple


def get_attr_fields(node: Any, value: Any) -> tuple[dict, bool]:
    """A tensor the graph module holds: a generic op with no args."""
    meta, symbolic = tensor_meta(value)
    return {"target": "get_attr", "attrs": str(node.target), "results": [meta]}, symbolic


def is_getitem(node: Any) -> bool:
    return node.op == "call_function" and node.target is operator.getitem

