"""Translates the aten FX graph Inductor compiles into capsim function bodies.

Inductor receives, per compiled region, the graph AOTAutograd produced
(functional aten ops, after Inductor's decompositions) and hands the tree
manager one callable per graph, or one per graph partition. capsim describes
such a callable as a function line (docs/trace-format.md section 4): a flat
list of tensor inputs and an SSA body over capsim's ops.

The rule: exact where capsim has the kernel, otherwise modelled from the
metadata, never dropped. A node the map below covers, on float32 operands
and a float32 result, becomes that fixed sequence of capsim ops computing
the same values. Every other call_function node (another op, another dtype,
a permute of more than 2 dims, a symbolic size where a concrete one is
needed, ...) becomes one `generic` op (docs/trace-format.md §4.1,
generic_op.py): its target, its non-tensor arguments as text, its tensor
operands, per result the sizes, strides, offset and dtype of its example
value, which operand each result views and which it writes, from the op's
schema; capsim models its effect on memory exactly and its values by a
fixed hash of its inputs. `operator.getitem` of a multi-result op is
capsim's `getitem`; a tensor the graph module holds (get_attr) a generic op
`get_attr` without operands. A symbolic size of a generic op is written at
its hint (the example inputs' size), and the function's body notes it
(FunctionBody.notes, for x_notes). Nothing is guessed from names or shapes.

A node is untranslated only if not even a generic op can express it (over 8
dims, over 1024 tensor operands or 1024 results, a dtype outside §4.1's list, a
sparse tensor, no example value, a call_method/call_module node); a
function that needs one gets no body, and the caller then writes no function
lines for the program (the header's x_untranslated lists those nodes).

The map (aten -> capsim):

  mm(a, b)                              mm
  addmm(bias, a, b) [beta = alpha = 1]  mm(a, b), then add(that, bias)
  permute(x, [1, 0]), t(x),
  transpose(x, 0, 1)   [x 2-d]          t
  relu                                  relu
  threshold_backward(g, r, 0)           relu_backward(g, r)
  where(le(r, 0), 0, g)                 relu_backward(g, r)   (Inductor's
                                        decomposition of threshold_backward;
                                        equal except where r is NaN)
  add/sub/mul.Tensor/Scalar [alpha = 1],
  div.Tensor/Scalar [no rounding mode]  add/sub/mul/div; a Python number
                                        operand becomes full([], number) first
  pow.Tensor_Scalar(x, 2), (x, 1)       mul(x, x), clone(x)
  neg, clone                            neg, clone
  sum(x), sum(x, dims, keepdim)         sum (with dims and keepdim unless it
                                        is over every dim without keepdim)
  mean(x), mean(x, dims, keepdim)       sum as above, then div by
                                        full([], elements summed)
  alias, detach                         alias
  view/_unsafe_view/reshape/expand/squeeze/unsqueeze to the same shape
                                        alias
  view/_unsafe_view/reshape/squeeze/unsqueeze of a contiguous tensor
                                        view (sizes: the node's concrete shape)
  expand                                expand (sizes: the node's concrete shape)
  copy_(dst, src), add_(a, b)           copy_, add_
  slice(x, 0, start, end, 1)            slice (concrete sizes only)
  full(sizes, v) / zeros(sizes) float32 full
  exp, log, sigmoid, tanh, rsqrt, sqrt,
  reciprocal                            the same-named op (float32, within
                                        a few ulp: kernel_bodies.hpp)
  amax(x, dims, keepdim)                amax, with a sum's fields
  any other op whose every result is a view of an operand (its schema's
  alias_info), of the operand's dtype, at concrete sizes: permute, select,
  unsqueeze, a slice off dim 0, split's parts, ...
                                        as_strided (the result's sizes,
                                        strides and storage offset), one per
                                        getitem of a tuple of views

Anything else is a generic op. Nodes with no tensor value (SymInt
arithmetic, sym_size) get no op: a consumer's attrs hold their hints. Ops
are written for the nodes the outputs need and, in a callable over the
whole graph, for each node that writes an argument in place (a buffer's
running statistics).

Integer (SymInt) placeholders are not tensor inputs: capsim passes them as a call's
`int_key`, so they are left out of `inputs`, and the caller removes their
positions from every index list. Outputs that are not tensors (None, SymInt)
are left out of `outputs` the same way.

Only torch.fx objects are read here; torch itself is imported lazily so that
this module imports without torch (its tests skip then).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from . import generic_op, torch_compat

_F32_MAX = 3.4028234663852886e38  # torch.finfo(torch.float32).max


class TranslationError(Exception):
    pass


def f32(value: float) -> float:
    """The shortest decimal that reads back to `value`'s float32 (the format's rule for floats)."""
    x = float(value)
    if not math.isfinite(x):
        raise TranslationError(f"non-finite scalar {value!r}")
    if abs(x) > _F32_MAX:  # past float32's range: the op stays generic
        raise TranslationError(f"scalar {value!r} is outside float32's range")
    bits = struct.pack("<f", x)
    target = struct.unpack("<f", bits)[0]
    for digits in range(1, 18):
        text = "%.*g" % (digits, target)
        if abs(float(text)) <= _F32_MAX and struct.pack("<f", float(text)) == bits:  # 3.11 packs no more
            return float(text)
    return target


def target_name(target: Any) -> str:
    """A node target as a stable string: `aten.mm.default` for an OpOverload,
    the qualified name for a Python function."""
    if isinstance(target, str):
        return target
    try:
        if torch_compat.is_op_overload(target):
            return str(target)
    except Exception:  # pragma: no cover - torch missing or changed
        pass
    try:
        return torch_compat.qualified_name(target)
    except Exception:
        return getattr(target, "__name__", repr(target))


# A step of a node's translation: (capsim op, args, extra fields). An arg is
# ("n", node_name) for another node's value or ("s", k) for the k-th step of
# the same node.
Step = tuple


@dataclass
class NodeTranslation:
    """A node's capsim ops (`steps`; the last one's value is the node's),
    or, with `same_as`, another node's value (getitem of a one-result op);
    neither: a node with no tensor value (a SymInt), which no op reads."""

    steps: list = field(default_factory=list)
    same_as: Optional[str] = None
    generic: bool = False  # modelled from metadata, not exact

    def refs(self) -> list[str]:
        out = [a[1] for _, args, _ in self.steps for a in args if a[0] == "n"]
        return out + ([self.same_as] if self.same_as is not None else [])


@dataclass
class GraphTranslation:
    """Per node, its translation or why it has none."""

    placeholders: list[str]
    placeholder_is_tensor: list[bool]
    placeholder_problem: dict[str, str]
    nodes: dict[str, NodeTranslation]
    untranslated: dict[str, str]  # node name -> target name (or a reason)
    inputs_of: dict[str, list[str]]  # untranslated node -> its input nodes
    order: list[str]  # call_function/get_attr node names in graph order
    outputs: list[Optional[str]]  # per graph output: node name, or None (not a node)
    output_is_tensor: list[bool]
    writers: list[str] = field(default_factory=list)  # nodes writing an argument in place
    symbolic: dict[str, str] = field(default_factory=dict)  # generic node -> target, sizes at hints


@dataclass
class FunctionBody:
    """A function line's body, or why there is none (`untranslated`)."""

    inputs: list[str]
    ops: list[dict]
    outputs: list[int]
    int_positions: list[int]  # positions of non-tensor inputs in the callable's input list
    dropped_outputs: list[int]  # positions of non-tensor outputs
    untranslated: list[str]
    notes: list[str] = field(default_factory=list)  # for the trace's x_notes, about this body

    @property
    def ok(self) -> bool:
        return not self.untranslated


def _val(node: Any) -> Any:
    return node.meta.get("val") if hasattr(node, "meta") else None


def _is_tensor_val(v: Any) -> bool:
    try:
        import torch

        return isinstance(v, torch.Tensor)
    except Exception:  # pragma: no cover
        return False


def _shape_key(v: Any) -> Optional[tuple]:
    if not _is_tensor_val(v):
        return None
    return tuple(str(d) for d in v.shape)


def _concrete_shape(v: Any) -> Optional[list[int]]:
    if not _is_tensor_val(v):
        return None
    out = []
    for d in v.shape:
        if type(d) is not int:
            return None
        out.append(d)
    return out


def _is_float32(v: Any) -> bool:
    try:
        import torch

        return _is_tensor_val(v) and v.dtype == torch.float32
    except Exception:  # pragma: no cover
        return False


_NUMBER = (int, float)


def _is_number(x: Any) -> bool:
    return isinstance(x, _NUMBER) and not isinstance(x, bool)


class _Refuse(Exception):
    pass


def _tensor_arg(x: Any) -> tuple:
    import torch.fx

    if isinstance(x, torch.fx.Node):
        v = _val(x)
        if v is not None and not _is_tensor_val(v):
            raise _Refuse("non-tensor operand")
        return ("n", x.name)
    raise _Refuse("operand is not a graph value")


def _operand(x: Any, steps: list) -> tuple:
    """A tensor operand, or a Python number made a 0-d full first."""
    if _is_number(x):
        steps.append(("full", [], {"sizes": [], "scalar": f32(x)}))
        return ("s", len(steps) - 1)
    return _tensor_arg(x)


def _arg(node: Any, i: int, name: str, default: Any = None) -> Any:
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _binary(node: Any, op: str) -> NodeTranslation:
    alpha = _arg(node, 2, "alpha", 1)  # positional in add.Scalar, sub.Scalar
    if not (_is_number(alpha) and alpha == 1):
        raise _Refuse("alpha != 1")
    steps: list = []
    a = _operand(node.args[0], steps)
    b = _operand(node.args[1], steps)
    if a[0] == "s" and b[0] == "s":
        raise _Refuse("two scalar operands")
    steps.append((op, [a, b], {}))
    return NodeTranslation(steps)


def _unary(node: Any, op: str) -> NodeTranslation:
    return NodeTranslation([(op, [_tensor_arg(node.args[0])], {})])


def _norm_dims(dims: Sequence[int], rank: int) -> list[int]:
    return [d % rank if rank else d for d in dims]


def _permute(node: Any) -> NodeTranslation:
    x = node.args[0]
    dims = list(node.args[1])
    v = _val(x)
    if not _is_tensor_val(v):
        raise _Refuse("permute of an unknown rank")
    dims = _norm_dims(dims, v.dim())
    if dims == list(range(v.dim())):
        return _unary(node, "alias")
    if v.dim() == 2 and dims == [1, 0]:
        return _unary(node, "t")
    raise _Refuse(f"permute {dims} of a {v.dim()}-d tensor")


def _t(node: Any) -> NodeTranslation:
    v = _val(node.args[0])
    if not _is_tensor_val(v):
        raise _Refuse("t of an unknown rank")
    if v.dim() < 2:
        return _unary(node, "alias")
    return _unary(node, "t")


def _transpose(node: Any) -> NodeTranslation:
    v = _val(node.args[0])
    if not _is_tensor_val(v):
        raise _Refuse("transpose of an unknown rank")
    d0, d1 = _norm_dims([node.args[1], node.args[2]], v.dim())
    if d0 == d1:
        return _unary(node, "alias")
    if v.dim() == 2:
        return _unary(node, "t")
    raise _Refuse(f"transpose of a {v.dim()}-d tensor")


def _addmm(node: Any) -> NodeTranslation:
    beta = node.kwargs.get("beta", 1)
    alpha = node.kwargs.get("alpha", 1)
    if not (_is_number(beta) and beta == 1 and _is_number(alpha) and alpha == 1):
        raise _Refuse("addmm with beta or alpha != 1")
    bias, a, b = (_tensor_arg(x) for x in node.args[:3])
    return NodeTranslation([("mm", [a, b], {}), ("add", [("s", 0), bias], {})])


def _threshold_backward(node: Any) -> NodeTranslation:
    grad, result, threshold = node.args[:3]
    if not (_is_number(threshold) and threshold == 0):
        raise _Refuse("threshold_backward with a threshold != 0")
    return NodeTranslation([("relu_backward", [_tensor_arg(grad), _tensor_arg(result)], {})])


def _is_zero_fill(x: Any) -> bool:
    import torch.fx

    if _is_number(x):
        return x == 0
    if isinstance(x, torch.fx.Node) and x.op == "call_function":
        name = target_name(x.target)
        if name in ("aten.full.default",):
            value = _arg(x, 1, "fill_value")
            sizes = list(x.args[0])
            return _is_number(value) and value == 0 and sizes == []
        if name in ("aten.scalar_tensor.default",):
            return _is_number(x.args[0]) and x.args[0] == 0
    return False


def _where(node: Any) -> NodeTranslation:
    import torch.fx

    cond, a, b = node.args[:3]
    if (
        isinstance(cond, torch.fx.Node)
        and cond.op == "call_function"
        and target_name(cond.target) == "aten.le.Scalar"
        and _is_number(cond.args[1])
        and cond.args[1] == 0
        and _is_zero_fill(a)
    ):
        result = cond.args[0]
        if _shape_key(_val(result)) != _shape_key(_val(node)):
            raise _Refuse("where(le(r, 0), 0, g) with r broadcast")
        return NodeTranslation([("relu_backward", [_tensor_arg(b), _tensor_arg(result)], {})])
    raise _Refuse("where that is not the relu-backward pattern")


def _reduction_fields(node: Any) -> tuple[dict, list[int]]:
    """A sum's or mean's capsim fields ({} over every dim, else dims and
    keepdim) and the sizes it reduces; refuses a dtype or symbolic sizes."""
    if node.kwargs.get("dtype") is not None:
        raise _Refuse("with a dtype")
    shape = _concrete_shape(_val(node.args[0]))
    if shape is None:
        raise _Refuse("of a symbolic or unknown shape")
    name = target_name(node.target)
    if name.endswith(".default"):
        if len(node.args) > 1:
            raise _Refuse("with a dtype")
        return {}, shape
    dims = _arg(node, 1, "dim")
    keepdim = bool(_arg(node, 2, "keepdim", False))
    rank = len(shape)
    every = list(range(rank))
    dims = every if dims in (None, []) else _norm_dims(list(dims), rank)
    if len(set(dims)) != len(dims) or any(not 0 <= d < max(rank, 1) for d in dims):
        raise _Refuse("with dims out of range or repeated")
    reduced = [shape[d] for d in dims if d < rank]
    if sorted(dims) == every and not keepdim:
        return {}, reduced
    return {"dims": dims, "keepdim": True} if keepdim else {"dims": dims}, reduced


def _sum(node: Any) -> NodeTranslation:
    fields, _ = _reduction_fields(node)
    return NodeTranslation([("sum", [_tensor_arg(node.args[0])], fields)])


def _mean(node: Any) -> NodeTranslation:
    """mean = sum, then a division by the number of elements summed (what
    PyTorch's mean computes; the order of the additions is capsim's)."""
    fields, reduced = _reduction_fields(node)
    count = math.prod(reduced)
    if count == 0 or count >= 1 << 24:
        raise _Refuse(f"mean over {count} elements")
    return NodeTranslation([
        ("sum", [_tensor_arg(node.args[0])], fields),
        ("full", [], {"sizes": [], "scalar": f32(count)}),
        ("div", [("s", 0), ("s", 1)], {}),
    ])


def _amax(node: Any) -> NodeTranslation:
    """amax(x, dims, keepdim): capsim's amax with a sum's fields (no dims:
    every dim, as aten reads an empty list)."""
    shape = _concrete_shape(_val(node.args[0]))
    if shape is None or not shape:
        raise _Refuse("amax of a symbolic, unknown or 0-d shape")
    rank = len(shape)
    every = list(range(rank))
    dims = list(_arg(node, 1, "dim", []) or [])
    dims = every if not dims else _norm_dims(dims, rank)
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise _Refuse("amax with dims out of range or repeated")
    keepdim = bool(_arg(node, 2, "keepdim", False))
    if sorted(dims) == every and not keepdim:
        fields: dict = {}
    else:
        fields = {"dims": dims, "keepdim": True} if keepdim else {"dims": dims}
    return NodeTranslation([("amax", [_tensor_arg(node.args[0])], fields)])


def _pow(node: Any) -> NodeTranslation:
    """x ** 2 is x * x (one rounding either way), x ** 1 a copy of x; other
    exponents are refused."""
    x, exponent = _tensor_arg(node.args[0]), node.args[1]
    if _is_number(exponent) and exponent == 2:
        return NodeTranslation([("mul", [x, x], {})])
    if _is_number(exponent) and exponent == 1:
        return NodeTranslation([("clone", [x], {})])
    raise _Refuse(f"exponent {exponent!r}")


def _div(node: Any) -> NodeTranslation:
    if node.kwargs.get("rounding_mode") is not None:
        raise _Refuse("with a rounding mode")
    return _binary(node, "div")


def _reshaping_view(node: Any) -> NodeTranslation:
    """A view to another shape: alias when the shape is the same, else
    capsim's view of a contiguous operand (aten's view, _unsafe_view,
    squeeze, unsqueeze, and reshape where it does not copy)."""
    v = _val(node.args[0])
    src = _shape_key(v)
    if src is not None and src == _shape_key(_val(node)):
        return _unary(node, "alias")
    sizes = _concrete_shape(_val(node))
    if sizes is None or _concrete_shape(v) is None:
        raise _Refuse("a view of a symbolic or unknown shape")
    if not v.is_contiguous():
        raise _Refuse("a view of a non-contiguous tensor")
    return NodeTranslation([("view", [_tensor_arg(node.args[0])], {"sizes": sizes})])


def _expand(node: Any) -> NodeTranslation:
    src = _shape_key(_val(node.args[0]))
    if src is not None and src == _shape_key(_val(node)):
        return _unary(node, "alias")
    sizes = _concrete_shape(_val(node))
    if sizes is None:
        raise _Refuse("an expand to a symbolic or unknown shape")
    return NodeTranslation([("expand", [_tensor_arg(node.args[0])], {"sizes": sizes})])


def _slice(node: Any) -> NodeTranslation:
    x = node.args[0]
    dim = _arg(node, 1, "dim", 0)
    start = _arg(node, 2, "start", None)
    end = _arg(node, 3, "end", None)
    step = _arg(node, 4, "step", 1)
    shape = _concrete_shape(_val(x))
    if shape is None or not shape:
        raise _Refuse("slice of a symbolic or 0-d tensor")
    if dim % len(shape) != 0 or step != 1:
        raise _Refuse("slice not along dim 0 with step 1")
    n = shape[0]
    start = 0 if start is None else start
    end = n if end is None else end
    if not (type(start) is int and type(end) is int):
        raise _Refuse("slice with symbolic bounds")
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(start, min(n, end + n if end < 0 else end))
    return NodeTranslation([("slice", [_tensor_arg(x)], {"start": start, "end": end})])


def _full(node: Any) -> NodeTranslation:
    import torch

    name = target_name(node.target)
    sizes = list(node.args[0])
    if not all(type(s) is int for s in sizes):
        raise _Refuse("full with symbolic sizes")
    value = 0 if name == "aten.zeros.default" else _arg(node, 1, "fill_value")
    dtype = node.kwargs.get("dtype")
    if dtype not in (None, torch.float32) or not _is_number(value):
        raise _Refuse("full of a non-float32 value")
    return NodeTranslation([("full", [], {"sizes": sizes, "scalar": f32(value)})])


def _inplace(node: Any, op: str) -> NodeTranslation:
    if node.kwargs.get("alpha", 1) != 1:
        raise _Refuse("alpha != 1")
    if op == "copy_" and node.kwargs.get("non_blocking", False):
        pass  # a host-device hint; the values are the same
    return NodeTranslation([(op, [_tensor_arg(node.args[0]), _tensor_arg(node.args[1])], {})])


_RULES = {
    "aten.mm.default": lambda n: NodeTranslation([("mm", [_tensor_arg(n.args[0]), _tensor_arg(n.args[1])], {})]),
    "aten.addmm.default": _addmm,
    "aten.permute.default": _permute,
    "aten.t.default": _t,
    "aten.transpose.int": _transpose,
    "aten.relu.default": lambda n: _unary(n, "relu"),
    "aten.threshold_backward.default": _threshold_backward,
    "aten.where.self": _where,
    "aten.where.ScalarSelf": _where,
    "aten.add.Tensor": lambda n: _binary(n, "add"),
    "aten.add.Scalar": lambda n: _binary(n, "add"),
    "aten.sub.Tensor": lambda n: _binary(n, "sub"),
    "aten.sub.Scalar": lambda n: _binary(n, "sub"),
    "aten.mul.Tensor": lambda n: _binary(n, "mul"),
    "aten.mul.Scalar": lambda n: _binary(n, "mul"),
    "aten.div.Tensor": _div,
    "aten.div.Scalar": _div,
    "aten.pow.Tensor_Scalar": _pow,
    "aten.neg.default": lambda n: _unary(n, "neg"),
    "aten.exp.default": lambda n: _unary(n, "exp"),
    "aten.log.default": lambda n: _unary(n, "log"),
    "aten.sigmoid.default": lambda n: _unary(n, "sigmoid"),
    "aten.tanh.default": lambda n: _unary(n, "tanh"),
    "aten.rsqrt.default": lambda n: _unary(n, "rsqrt"),
    "aten.sqrt.default": lambda n: _unary(n, "sqrt"),
    "aten.reciprocal.default": lambda n: _unary(n, "reciprocal"),
    "aten.amax.default": _amax,
    "aten.clone.default": lambda n: _unary(n, "clone"),
    "aten.sum.default": _sum,
    "aten.sum.dim_IntList": _sum,
    "aten.mean.default": _mean,
    "aten.mean.dim": _mean,
    "aten.alias.default": lambda n: _unary(n, "alias"),
    "aten.detach.default": lambda n: _unary(n, "alias"),
    "aten.view.default": _reshaping_view,
    "aten._unsafe_view.default": _reshaping_view,
    "aten.reshape.default": _reshaping_view,
    "aten.squeeze.dim": _reshaping_view,
    "aten.squeeze.dims": _reshaping_view,
    "aten.unsqueeze.default": _reshaping_view,
    "aten.expand.default": _expand,
    "aten.copy_.default": lambda n: _inplace(n, "copy_"),
    "aten.add_.Tensor": lambda n: _inplace(n, "add_"),
    "aten.slice.Tensor": _slice,
    "aten.full.default": _full,
    "aten.zeros.default": _full,
}

TRANSLATED_OPS = tuple(sorted(_RULES))
MAX_OPS = 4096
MAX_INPUTS = 2048


class _Walk:
    """translate_graph's state: what it knows of the nodes so far."""

    def __init__(self, gm: Any) -> None:
        self.gm = gm
        self.tensor: set[str] = set()  # nodes with a tensor value
        self.dtype: dict[str, Optional[str]] = {}  # their dtype names (None: unknown)
        self.nodes: dict[str, NodeTranslation] = {}
        self.untranslated: dict[str, str] = {}
        self.symbolic: dict[str, str] = {}
        self.writers: list[str] = []
        self.tuples: dict[str, int] = {}  # generic node returning a tuple -> its result count
        # An op returning a tuple of views (split) -> each result's as_strided step.
        self.view_tuples: dict[str, list] = {}

    def is_tensor_node(self, x: Any) -> bool:
        return getattr(x, "name", None) in self.tensor and hasattr(x, "op")

    def note_value(self, node: Any, v: Any, unknown_is_tensor: bool = False) -> None:
        if _is_tensor_val(v) or (v is None and unknown_is_tensor):
            self.tensor.add(node.name)
            self.dtype[node.name] = str(v.dtype).replace("torch.", "") if v is not None else None

    def exact(self, node: Any, name: str) -> Optional[NodeTranslation]:
        """The exact translation, or None: no rule, a rule that refuses, an
        operand or a result that is not float32, a result over 8 dims."""
        rule = _RULES.get(name)
        if rule is None:
            return None
        try:
            nt = rule(node)
        except Exception:  # refused, or not what the rule expects: a generic op, never lost
            return None
        v = _val(node)
        if v is not None and _is_tensor_val(v) and (not _is_float32(v) or v.dim() > generic_op.MAX_DIMS):
            return None
        if any(r not in self.tensor or self.dtype.get(r) not in (None, "float32") for r in nt.refs()):
            return None
        return nt

    def generic(self, node: Any, name: str) -> NodeTranslation:
        operands, fields, symbolic, is_tuple = generic_op.generic_fields(node, name, self.is_tensor_node)
        views = self.pure_views(operands, fields, symbolic)
        if views is not None:
            if is_tuple and len(views) != 1:
                self.view_tuples[node.name] = views
                return NodeTranslation()  # each getitem is its own as_strided
            return NodeTranslation([views[0]])
        if symbolic:
            self.symbolic[node.name] = name
        if fields.get("writes"):
            self.writers.append(node.name)
        results = fields["results"]
        if not fields.get("writes") and all(r is None for r in results):
            return NodeTranslation()  # no tensor value: nothing to model
        if is_tuple and len(results) != 1:
            self.tuples[node.name] = len(results)
        return NodeTranslation([("generic", [("n", o.name) for o in operands], fields)], generic=True)

    def pure_views(self, operands: list, fields: dict, symbolic: bool) -> Optional[list]:
        """An op that only views (permute, select, unsqueeze, split, ...):
        per result, the as_strided step over the operand it views, which is
        exact; None if a result is fresh, changes the dtype or has symbolic
        sizes, or the op writes."""
        views = fields.get("views")
        results = fields["results"]
        if symbolic or fields.get("writes") or not views or not results:
            return None
        steps = []
        for meta, k in zip(results, views):
            if meta is None or k is None:
                return None
            operand = operands[k]
            if self.dtype.get(operand.name) != meta["dtype"]:
                return None
            extra = {"sizes": meta["sizes"], "strides": meta["strides"],
                     "storage_offset": meta["storage_offset"]}
            steps.append(("as_strided", [("n", operand.name)], extra))
        return steps

    def getitem(self, node: Any) -> NodeTranslation:
        src, index = node.args[0], node.args[1]
        if not _is_tensor_val(_val(node)):
            return NodeTranslation()
        views = self.view_tuples.get(getattr(src, "name", None))
        if views is not None and type(index) is int and -len(views) <= index < len(views):
            return NodeTranslation([views[index]])
        if getattr(src, "name", None) not in self.tuples and getattr(src, "name", None) in self.nodes:
            return NodeTranslation(same_as=src.name)  # a one-result op's value is its result
        if type(index) is not int:
            raise generic_op.Unexpressible("a getitem with a non-integer index")
        n = self.tuples.get(src.name, index + 1)
        return NodeTranslation([("getitem", [("n", src.name)], {"index": index % n})], generic=True)

    def call(self, node: Any) -> None:
        name = target_name(node.target)
        self.note_value(node, _val(node))
        try:
            if generic_op.is_getitem(node):
                self.nodes[node.name] = self.getitem(node)
                return
            nt = self.exact(node, name)
            if nt is None:
                nt = self.generic(node, name)
            elif name in ("aten.copy_.default", "aten.add_.Tensor"):
                self.writers.append(node.name)
            self.nodes[node.name] = nt
        except generic_op.Unexpressible as e:
            self.untranslated[node.name] = f"{name} ({e})"
        except Exception as e:  # a translator bug costs this node only, never the run
            self.untranslated[node.name] = f"{name} (translator error: {type(e).__name__}: {e})"

    def get_attr(self, node: Any) -> None:
        value = _val(node)
        owner = getattr(self.gm, "owning_module", None) or self.gm
        try:
            for part in str(node.target).split("."):
                owner = getattr(owner, part)
            value = owner
        except AttributeError:
            pass
        self.note_value(node, value)
        if not _is_tensor_val(value):
            self.nodes[node.name] = NodeTranslation()  # a submodule: a higher-order op's attrs name it
            return
        try:
            fields, symbolic = generic_op.get_attr_fields(node, value)
        except generic_op.Unexpressible as e:
            self.untranslated[node.name] = f"get_attr:{node.target} ({e})"
            return
        if symbolic:
            self.symbolic[node.name] = "get_attr"
        self.nodes[node.name] = NodeTranslation([("generic", [], fields)], generic=True)


def _placeholder_problem(node: Any, v: Any) -> Optional[str]:
    if v is None or not _is_tensor_val(v):
        return None
    try:
        generic_op.tensor_meta(v)
    except generic_op.Unexpressible as e:
        return f"input {node.name}: {e}"
    return None


def _graph_outputs(node: Any) -> tuple[list, list]:
    import torch.fx

    outputs: list[Optional[str]] = []
    output_is_tensor: list[bool] = []
    result = node.args[0]
    if not isinstance(result, (list, tuple)):
        result = [result]
    for r in result:
        if isinstance(r, torch.fx.Node):
            outputs.append(r.name)
            v = _val(r)
            output_is_tensor.append(v is None or _is_tensor_val(v))
        else:
            outputs.append(None)
            output_is_tensor.append(False)
    return outputs, output_is_tensor


def translate_graph(gm: Any) -> GraphTranslation:
    """Translates every node of `gm` (a torch.fx.GraphModule or Graph):
    exactly where a rule applies, else as a generic op; never raises for an
    unknown op (a node not even a generic op can express is untranslated)."""
    graph = gm.graph if hasattr(gm, "graph") else gm
    walk = _Walk(gm)
    placeholders: list[str] = []
    is_tensor: list[bool] = []
    problems: dict[str, str] = {}
    inputs_of: dict[str, list[str]] = {}
    order: list[str] = []
    outputs: list[Optional[str]] = []
    output_is_tensor: list[bool] = []
    for node in graph.nodes:
        if node.op == "placeholder":
            v = _val(node)
            placeholders.append(node.name)
            is_tensor.append(v is None or _is_tensor_val(v))
            walk.note_value(node, v, unknown_is_tensor=True)
            problem = _placeholder_problem(node, v)
            if problem is not None:
                problems[node.name] = problem
        elif node.op in ("call_function", "get_attr"):
            order.append(node.name)
            inputs_of[node.name] = [a.name for a in node.all_input_nodes]
            walk.call(node) if node.op == "call_function" else walk.get_attr(node)
        elif node.op in ("call_method", "call_module"):
            order.append(node.name)
            walk.untranslated[node.name] = f"{node.op}:{node.target}"
        elif node.op == "output":
            outputs, output_is_tensor = _graph_outputs(node)
    return GraphTranslation(
        placeholders, is_tensor, problems, walk.nodes, walk.untranslated, inputs_of, order, outputs,
        output_is_tensor, walk.writers, walk.symbolic,
    )


def _callable_inputs(tr: GraphTranslation, input_positions: Sequence[Optional[int]],
                     reasons: list) -> tuple[list[str], list[int], dict[str, int]]:
    """(tensor input names, positions of the non-tensor inputs, name ->
    value index) of a callable over the graph's placeholders."""
    inputs: list[str] = []
    int_positions: list[int] = []
    value_of: dict[str, int] = {}
    for k, pos in enumerate(input_positions):
        if pos is None or pos >= len(tr.placeholders):
            reasons.append("partition input that is not a graph input")
            continue
        name = tr.placeholders[pos]
        if not tr.placeholder_is_tensor[pos]:
            int_positions.append(k)
            continue
        if name in tr.placeholder_problem:
            reasons.append(tr.placeholder_problem[name])
        value_of[name] = len(inputs)
        inputs.append(name)
    return inputs, int_positions, value_of


def _callable_outputs(tr: GraphTranslation, output_positions: Sequence[Optional[int]],
                      reasons: list) -> tuple[list[Optional[str]], list[int]]:
    """(the graph values a callable returns, positions of its non-tensor outputs)."""
    wanted: list[Optional[str]] = []
    dropped: list[int] = []
    for k, pos in enumerate(output_positions):
        if pos is None or pos >= len(tr.outputs):
            reasons.append("partition output that is not a graph output")
            wanted.append(None)
            continue
        if not tr.output_is_tensor[pos] or tr.outputs[pos] is None:
            dropped.append(k)
            continue
        wanted.append(tr.outputs[pos])
    return wanted, dropped


def _needed(tr: GraphTranslation, wanted: Sequence[Optional[str]], value_of: dict, reasons: list) -> set:
    """The nodes the outputs need, through the translations' references."""
    needed: set[str] = set()
    stack = [w for w in wanted if w is not None]
    placeholder_set = set(tr.placeholders)
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        if name in placeholder_set:
            if name not in value_of and tr.placeholder_is_tensor[tr.placeholders.index(name)]:
                reasons.append(f"placeholder {name} is not an input of this callable")
            continue
        if name in tr.untranslated:
            reasons.append(tr.untranslated[name])
            # Go on through its inputs, so that every untranslated op the
            # outputs need is reported, not only the last one.
            stack.extend(tr.inputs_of.get(name, []))
            continue
        nt = tr.nodes.get(name)
        if nt is None:
            reasons.append(f"unknown node {name}")
            continue
        stack.extend(nt.refs())
    return needed


def _line(op: str, refs: list, extra: dict) -> dict:
    if op == "generic":  # the spec's order: op, target, attrs, args, results, views, writes
        line = {"op": op, "target": extra["target"], "attrs": extra["attrs"], "args": refs}
        line.update((k, v) for k, v in extra.items() if k not in line)
        return line
    line = {"op": op, "args": refs}
    line.update(extra)
    return line


def _ops(tr: GraphTranslation, needed: set, value_of: dict, n: int) -> list[dict]:
    """The needed nodes' capsim ops in graph order (value_of gets their values)."""
    ops: list[dict] = []
    for name in tr.order:
        if name not in needed:
            continue
        nt = tr.nodes[name]
        if nt.same_as is not None:
            value_of[name] = value_of[nt.same_as]
            continue
        local: list[int] = []
        for op, args, extra in nt.steps:
            refs = []
            for kind, ref in args:
                refs.append(local[ref] if kind == "s" else value_of[ref])
            ops.append(_line(op, refs, extra))
            local.append(n + len(ops) - 1)
        if local:
            value_of[name] = local[-1]
    return ops


def _whole_graph(tr: GraphTranslation, input_positions: Sequence, output_positions: Sequence) -> bool:
    return (sorted(p for p in input_positions if p is not None) == list(range(len(tr.placeholders)))
            and sorted(p for p in output_positions if p is not None) == list(range(len(tr.outputs))))


def _notes(tr: GraphTranslation, needed: set) -> list[str]:
    hinted = sorted({tr.symbolic[n] for n in needed if n in tr.symbolic})
    if not hinted:
        return []
    return [f"generic ops with symbolic sizes, written at the example inputs' sizes: {', '.join(hinted)}"]


def build_function(
    tr: GraphTranslation,
    input_positions: Optional[Sequence[Optional[int]]] = None,
    output_positions: Optional[Sequence[Optional[int]]] = None,
) -> FunctionBody:
    """The body of one callable over the graph: its inputs are the graph's
    placeholders at `input_positions` (all of them by default), its outputs
    the graph's outputs at `output_positions` (all by default). A None
    position (a partition's intermediate) makes the function untranslated.
    The ops are those the outputs need and, in a callable over the whole
    graph, those that write an argument in place (a buffer's update)."""
    if input_positions is None:
        input_positions = list(range(len(tr.placeholders)))
    if output_positions is None:
        output_positions = list(range(len(tr.outputs)))
    reasons: list[str] = []
    inputs, int_positions, value_of = _callable_inputs(tr, input_positions, reasons)
    wanted, dropped = _callable_outputs(tr, output_positions, reasons)
    roots = list(wanted)
    if _whole_graph(tr, input_positions, output_positions):
        roots += tr.writers
    needed = _needed(tr, roots, value_of, reasons)
    ops: list[dict] = []
    outputs: list[int] = []
    if not reasons:
        ops = _ops(tr, needed, value_of, len(inputs))
        outputs = [value_of[w] for w in wanted if w is not None]
        if len(ops) > MAX_OPS:
            reasons.append(f"{len(ops)} ops (over {MAX_OPS})")
        if len(inputs) > MAX_INPUTS:
            reasons.append(f"{len(inputs)} inputs (over {MAX_INPUTS})")
    # Report each reason once, in a stable order.
    seen: list[str] = []
    for r in reasons:
        if r not in seen:
            seen.append(r)
    notes = _notes(tr, needed) if not seen else []
    return FunctionBody(inputs, ops if not seen else [], outputs, int_positions, dropped, sorted(seen), notes)


def op_names(reasons: Sequence[str]) -> list[str]:
    """The op (or other) names of untranslated reasons, without the why:
    "aten.view.default (a view that changes the shape)" -> "aten.view.default"."""
    out = {r.split(" (", 1)[0] for r in reasons}
    return sorted(out)
