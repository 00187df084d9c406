"""The trace format's dtype names (docs/trace-format.md): the one mapping
the recorder uses, for a tensor's metadata (graph_walk.py, generic_op.py) and
for `new_tensor`'s `dtype` (its default, float32, left out as writers leave
defaults out). A torch dtype is named by its `str()` less `torch.`
(`torch.half` is `torch.float16`). This module imports nothing from torch.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

DTYPES = ("float32", "float16", "bfloat16", "float64", "complex64", "int64", "int32", "int8", "uint8", "bool")
DEFAULT = "float32"


def name_of(dtype: Any) -> Optional[str]:
    """The format's name of a torch dtype, or None when the format has none."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    return name if name in DTYPES else None


def new_tensor_fields(name: str, sizes: Sequence[Any], dtype: Any) -> dict:
    """`new_tensor`'s name, sizes and, when not float32, dtype. A dtype the
    format cannot name is left out (float32 in capsim): see unnamed()."""
    fields: dict = {"name": name, "sizes": [int(s) for s in sizes]}
    dname = name_of(dtype)
    if dname is not None and dname != DEFAULT:
        fields["dtype"] = dname
    return fields


def unnamed(name: str, dtype: Any) -> Optional[str]:
    """A note for a tensor whose dtype the format cannot name, or None."""
    if name_of(dtype) is None:
        return f"{name}: dtype {dtype} has no name in the trace format (written as float32)"
    return None
