"""The stack traces of a compiled graph's outputs: what PyTorch prints in E1
("accessing tensor output of CUDAGraphs that has been overwritten ...
Stack trace: {st}"), for a function line's `stack_traces`.

PyTorch keeps one entry per graph output (CompiledFxGraph.cudagraph_info.
stack_traces, handed to the tree manager's add_function): the output node's
meta["output_stack_traces"] where set (2.12 on: a snapshot taken before the
post-grad passes, which may strip a node's stack_trace), else each output
argument's `stack_trace` (None for one that is not a node). A partition's
entries are the graph's at its output_index_mapping (2.12 on, a list of
graph outputs per partition output: the first user-visible one, else the
first). format_dealloc_msg prints `stack_trace.strip()`, or "[Could not
find stack trace]" for None or "".

One difference from PyTorch's text: a frame's file under the working
directory is written relative to it (`File "train.py"`, not the absolute
path), so that a trace does not depend on where the checkout lives and
re-records byte for byte.

A function line lists tensor outputs only (non-tensor outputs are left out,
aten_translate.FunctionBody.dropped_outputs), so its entries are those of
the graph outputs it returns, in order.

S1 ("skipping cudagraphs due to mutated inputs (N instances). Found from :
\n {trace}") quotes a mutated input's mutating use instead
(cudagraph_utils.py get_mutating_use_stack_trace_from_node): the
placeholder's only user's trace, else a copy_ user's. `mutating_uses`
finds it for each mutated placeholder of a graph, and `for_inputs` lays
them out per input of a function line (`mutating_use_stack_traces`).
PyTorch prints that trace as it is (no strip). No torch import.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

# The trace format's limits (docs/trace-format.md, the function line).
MAX_CHARS = 4096  # per entry: longer ones keep their end (the innermost frame)
MAX_ENTRIES = 256  # more outputs: no `stack_traces`


def _output_node(gm: Any) -> Any:
    graph = getattr(gm, "graph", gm)
    found = None
    for node in getattr(graph, "nodes", ()):
        if getattr(node, "op", None) == "output":
            found = node
    return found


def _is_node(x: Any) -> bool:
    return hasattr(x, "op") and isinstance(getattr(x, "meta", None), dict)


def of_gm(gm: Any) -> Optional[list]:
    """PyTorch's per-output stack traces of `gm` (as CompiledFxGraph builds
    them), or None where gm has no output node."""
    out = _output_node(gm)
    if out is None or not getattr(out, "args", None):
        return None
    meta = getattr(out, "meta", None) or {}
    snapshot = meta.get("output_stack_traces")
    if snapshot:
        return list(snapshot)
    result = out.args[0]
    if not isinstance(result, (list, tuple)):
        result = [result]
    return [x.meta.get("stack_trace") if _is_node(x) else None for x in result]


def of_graph(gm: Any, compiled: Any = None) -> Optional[list]:
    """Per graph output, the stack trace PyTorch hands the trees: the
    compiled graph's own (cudagraph_info, a cache hit's too) where it has
    one, else computed from gm (after the compile, gm has had the post-grad
    passes PyTorch's value was computed after)."""
    info = getattr(compiled, "cudagraph_info", None)
    traces = getattr(info, "stack_traces", None)
    if isinstance(traces, (list, tuple)):
        return list(traces)
    return of_gm(gm)


def user_visible(compiled: Any) -> Optional[set]:
    """The graph outputs PyTorch counts as user-visible for a partition's
    choice (2.12 on), or None where unknown."""
    info = getattr(compiled, "cudagraph_info", None)
    idxs = getattr(info, "user_visible_output_idxs", None)
    if idxs is None:
        return None
    return {int(i) for i in idxs}


def for_partition(traces: Optional[Sequence], mapping: Sequence[Any],
                  visible: Optional[set]) -> Optional[list]:
    """A partition's per-output traces from the graph's: an entry of
    `mapping` is a graph output index, None, or (2.12 on) a list of them.
    An entry that cannot be told (several graph outputs with different
    traces, the user-visible ones unknown) is None."""
    if traces is None:
        return None
    result: list = []
    for entry in mapping:
        idxs = entry if isinstance(entry, (list, tuple)) else ([] if entry is None else [entry])
        idxs = [i for i in idxs if isinstance(i, int) and 0 <= i < len(traces)]
        if not idxs:
            result.append(None)
            continue
        picks = {_clean(traces[i]) for i in idxs}
        if visible is not None:
            chosen = [i for i in idxs if i in visible] or idxs
            result.append(traces[chosen[0]])
        else:
            result.append(traces[idxs[0]] if len(picks) == 1 else None)
    return result


def _clean(trace: Any) -> Optional[str]:
    """As format_dealloc_msg prints it (None: "[Could not find stack
    trace]"), cut to the format's limit."""
    if not isinstance(trace, str) or not trace:
        return None
    text = trace.strip()
    text = text.replace('File "' + os.getcwd().rstrip(os.sep) + os.sep, 'File "')
    return text[-MAX_CHARS:] if len(text) > MAX_CHARS else text


def for_function(traces: Optional[Sequence], dropped: Sequence[int], n_outputs: int) -> Optional[list]:
    """A function line's `stack_traces`: the callable's per-output traces
    (`traces`) less its non-tensor outputs (`dropped`), cleaned; None (no
    field) when unknown, when no entry has a trace, when the count does not
    match the line's `n_outputs`, or over MAX_ENTRIES."""
    if traces is None:
        return None
    skip = set(dropped)
    kept = [_clean(t) for k, t in enumerate(traces) if k not in skip]
    if len(kept) != n_outputs or n_outputs > MAX_ENTRIES:
        return None
    if all(t is None for t in kept):
        return None
    return kept


def _relative(trace: str) -> str:
    """A trace with the working directory's frames relative, cut to the limit."""
    text = trace.replace('File "' + os.getcwd().rstrip(os.sep) + os.sep, 'File "')
    return text[-MAX_CHARS:] if len(text) > MAX_CHARS else text


def _writes(user: Any, placeholder: Any) -> bool:
    """Whether node `user` writes `placeholder` in place: an argument its
    op's schema marks as written (copy_'s self, add_'s self, out=...)."""
    schema = getattr(getattr(user, "target", None), "_schema", None)
    if schema is None:
        return False
    args = list(getattr(user, "args", ()) or ())
    kwargs = dict(getattr(user, "kwargs", {}) or {})
    for k, arg in enumerate(getattr(schema, "arguments", ())):
        alias = getattr(arg, "alias_info", None)
        if alias is None or not getattr(alias, "is_write", False):
            continue
        value = args[k] if k < len(args) else kwargs.get(getattr(arg, "name", None))
        if value is placeholder:
            return True
    return False


def _is_copy(node: Any) -> bool:
    return str(getattr(node, "target", "")) in ("aten.copy_.default", "aten::copy_")


def mutating_uses(gm: Any) -> dict:
    """Placeholder name -> the stack trace PyTorch's S1 would quote for it,
    for each placeholder of gm that some node writes in place and that has
    such a trace."""
    graph = getattr(gm, "graph", gm)
    found: dict = {}
    for node in getattr(graph, "nodes", ()):
        if getattr(node, "op", None) != "placeholder":
            continue
        users = list(getattr(node, "users", ()) or ())
        if not any(_writes(u, node) for u in users):
            continue
        trace = None
        if len(users) == 1:
            trace = users[0].meta.get("stack_trace")
        else:
            trace = next((u.meta.get("stack_trace") for u in users
                          if _is_copy(u) and u.meta.get("stack_trace")), None)
        if isinstance(trace, str) and trace:
            found[node.name] = _relative(trace)
    return found


def for_inputs(traces: Optional[dict], inputs: Sequence[str]) -> Optional[list]:
    """A function line's `mutating_use_stack_traces` over its inputs (graph
    placeholder names), or None (no field) when none has one or there are
    more than MAX_ENTRIES."""
    if not traces or len(inputs) > MAX_ENTRIES:
        return None
    kept = [traces.get(name) for name in inputs]
    return kept if any(t is not None for t in kept) else None
