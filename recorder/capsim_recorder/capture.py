"""Runs one backward under compiled autograd and reports what it captured.

Compiled autograd (torch._dynamo.compiled_autograd) turns a backward into an
FX graph: on a cache miss it traces the autograd graph and hands the
GraphModule to a compiler function; on a hit it reuses the compiled graph.
This module supplies the compiler function (it keeps the GraphModule and
returns it unchanged, so the graph runs as traced, without Inductor) and
reads three things per backward:

  captured  counters["compiled_autograd"]["captures"] went up   (internal)
  targets   the call_function targets of the captured graph      (torch.fx, public)
  uses      per call, the calls its arguments refer to            (torch.fx, public)
  graph     every node, one line each: target and arguments        (torch.fx, public)
  message   the verbose log's "Cache miss ..." line              (internal logger)

Entry points: torch._dynamo.compiled_autograd._enable (internal; the public
switch torch._dynamo.config.compiled_autograd only takes effect inside
torch.compile, and we want plain loss.backward() calls), torch._dynamo.utils.
counters (internal), torch._logging.set_logs(compiled_autograd_verbose=True)
(public) with the artifact logger below (its name is internal).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
import torch.fx

from . import torch_compat

VERBOSE_LOGGER = torch_compat.CA_VERBOSE_LOGGER
CACHE_MISS_PREFIX = "Cache miss"


@dataclass
class BackwardResult:
    captured: bool
    targets: list[str] = field(default_factory=list)
    uses: list[list[int]] = field(default_factory=list)
    graph: list[str] = field(default_factory=list)
    message: Optional[str] = None


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def graph_targets(gm: torch.fx.GraphModule) -> list[str]:
    """Every call_function node's target, in graph order, qualified.

    Written raw: operator.getitem and unwrap_maybe_dynamic_int included (capsim
    filters them itself).
    """
    out = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        out.append(target if isinstance(target, str) else torch_compat.qualified_name(target))
    return out


def graph_uses(gm: torch.fx.GraphModule) -> list[list[int]]:
    """Per call_function node (in the order of graph_targets), the calls its
    arguments refer to, as indices into that list, in order of first
    appearance, each once. Placeholders are not calls and are left out; the
    argument structure beyond that (constants, nesting, positions) is not
    written."""
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    index = {n: i for i, n in enumerate(calls)}
    out = []
    for n in calls:
        refs: list[int] = []
        torch.fx.node.map_arg((n.args, n.kwargs), lambda a: refs.append(index[a]) if a in index else None)
        out.append(list(dict.fromkeys(refs)))
    return out


def _value_text(value: Any, index: dict) -> str:
    """One argument in the node-line form of docs/trace-format.md §6.3: a node
    as %k (its position in the graph), Python's own spelling for constants,
    lists in brackets, tuples in parentheses (a 1-tuple with its comma)."""
    if isinstance(value, torch.fx.Node):
        return f"%{index[value]}"
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v, index) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_value_text(v, index) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value + "'"
    if isinstance(value, (torch.device, torch.dtype, torch.layout, torch.memory_format)):
        return str(value)
    # Anything else is named by its type, so that it shows as a difference
    # rather than as an address or a repr that changes from run to run.
    return f"<{type(value).__name__}>"


def graph_lines(gm: torch.fx.GraphModule) -> list[str]:
    """Every node of the captured graph in order, one line each:
    `%i = placeholder NAME`, `%i = TARGET(ARGS)` (the target qualified, raw,
    in the release's own spelling; keyword arguments after the positional
    ones as k=v) or `%i = output(ARGS)`. Node names and `num_users` are left
    out: they are printing, not graph."""
    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    out = []
    for i, n in enumerate(nodes):
        if n.op == "placeholder":
            out.append(f"%{i} = placeholder {n.target}")
            continue
        args = [_value_text(a, index) for a in n.args]
        args += [f"{k}={_value_text(v, index)}" for k, v in n.kwargs.items()]
        if n.op == "output":
            target = "output"
        elif isinstance(n.target, str):
            target = f"{n.op}:{n.target}"
        else:
            target = torch_compat.qualified_name(n.target)
        out.append(f"%{i} = {target}({', '.join(args)})")
    return out


class CompiledAutogradCapture:
    """One per program run. Installs the log handler on creation; close()
    removes it."""

    def __init__(self) -> None:
        self._graphs: list[torch.fx.GraphModule] = []
        # Whether the last backward() ran to its end (a failure after that
        # is a misreading of PyTorch, not a backward to run again).
        self.backward_done = False
        self._handler = _ListHandler()
        # set_logs turns the artifact on; _enable reads that setting each time
        # it is entered and then routes the C++ cache-miss messages to it.
        torch_compat.set_logs(compiled_autograd_verbose=True)
        self._logger = logging.getLogger(VERBOSE_LOGGER)
        self._logger.addHandler(self._handler)
        # The artifact also prints the whole graph to stderr through torch's
        # own handler; we only want it in our list.
        self._old_propagate = self._logger.propagate
        self._logger.propagate = False

    def close(self) -> None:
        self._logger.removeHandler(self._handler)
        self._logger.propagate = self._old_propagate
        torch_compat.set_logs()  # back to the defaults

    def _compiler_fn(self, gm: torch.fx.GraphModule) -> Any:
        self._graphs.append(gm)
        return gm

    def observing(self, compiler_fn: Any) -> Any:
        """`compiler_fn` (the script's own, when the script enables compiled
        autograd itself) with each graph kept first, as ours keeps it: the
        backward that captured it then finds its graph."""
        if compiler_fn == self._compiler_fn:
            return compiler_fn

        def kept_then_compiled(gm: torch.fx.GraphModule) -> Any:
            self._graphs.append(gm)
            return compiler_fn(gm)

        return kept_then_compiled

    def enabled(self, dynamic: bool = True):
        """The compiled-autograd context; a forward of a torch.compile region
        should run inside it too (PyTorch's advice in _enable)."""
        return torch_compat.compiled_autograd_enable(self._compiler_fn, dynamic)

    def backward(self, loss: torch.Tensor, dynamic: bool = True, **kwargs: Any) -> BackwardResult:
        """loss.backward(**kwargs) under compiled autograd (entered here unless
        the caller is already inside enabled()), and what it captured."""
        self.backward_done = False
        counters = torch_compat.counters()
        captures_before = counters["compiled_autograd"]["captures"]
        graphs_before = len(self._graphs)
        messages_before = len(self._handler.messages)
        if torch_compat.compiled_autograd_enabled():
            loss.backward(**kwargs)
        else:
            with self.enabled(dynamic):
                loss.backward(**kwargs)
        self.backward_done = True
        captures = counters["compiled_autograd"]["captures"] - captures_before
        graphs = self._graphs[graphs_before:]
        if captures != len(graphs) or captures > 1:
            # One backward captures at most once, and every capture reaches
            # the compiler function; anything else means we misread PyTorch.
            raise RuntimeError(
                f"compiled autograd: {captures} captures but {len(graphs)} graphs"
                " in one backward"
            )
        misses = [
            m for m in self._handler.messages[messages_before:]
            if m.startswith(CACHE_MISS_PREFIX)
        ]
        if not captures:
            return BackwardResult(captured=False, message=misses[0] if misses else None)
        return BackwardResult(
            captured=True,
            targets=graph_targets(graphs[0]),
            uses=graph_uses(graphs[0]),
            graph=graph_lines(graphs[0]),
            message=misses[0] if misses else None,
        )
