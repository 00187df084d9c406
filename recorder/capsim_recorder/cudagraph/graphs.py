"""The compiled graphs of a cudagraph recording and their function lines.

The compile hooks (hooks.py) report each graph Inductor compiles
(`new_graph`, with its aten graph translated by aten_translate.py) and each
callable it handed to the trees (`finish_graph`); the observer asks, at a
FunctionID's first run, which function it is (`bind_function`). A graph is
named by mode and number (`fwd0`, `bwd0`, `fwd0_p1` for a partition); an
optimizer's compiled step is `NAME.step`, gets no function line (capsim
builds it itself) and has its inputs put in capsim's order. No torch import.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import aten_translate
from . import stack_traces
from .records import MODE_PREFIX, FunctionRecord, GraphRecord, PartitionRecord, mode_name
from .values import FidInfo, drop_positions, int_positions_of, is_tensor


class GraphTable:
    """Graphs and functions of one session (`s`: the Session, for its lock,
    per-thread state, notes, registry and events)."""

    def __init__(self, session: Any) -> None:
        self.s = session
        self.graphs: list[GraphRecord] = []
        self.graph_local: dict[Any, int] = {}
        self.next_local = 0
        self.functions: dict[str, FunctionRecord] = {}
        self.builtin: Optional[str] = None  # the optimizer whose step is running
        self.optimizers: dict[str, Any] = {}  # name -> (weakref(opt), [param names], kind)
        self.step_graph_names: dict[str, int] = {}
        self.step_inputs: dict[str, list[str]] = {}

    # -- the compile side (hooks.py) -------------------------------------------

    def _local_id(self, graph_id: Any) -> int:
        if self.builtin is not None:
            return -1 - len(self.graphs)  # an optimizer step: no fwd/bwd number
        if graph_id is not None and graph_id in self.graph_local:
            return self.graph_local[graph_id]
        local = self.next_local
        self.next_local += 1
        if graph_id is not None:
            self.graph_local[graph_id] = local
        return local

    def new_graph(self, graph_id: Any, mode: Any, gm: Any, static_input_idxs: Sequence[int]) -> GraphRecord:
        with self.s.lock:
            m = mode_name(mode)
            local = self._local_id(graph_id)
            builtin = self.builtin
            if builtin is not None:
                n = self.step_graph_names.get(builtin, 0)
                self.step_graph_names[builtin] = n + 1
                base = f"{builtin}.step"
            else:
                base = f"{MODE_PREFIX[m]}{local}"
            g = GraphRecord(local, graph_id, m, base, builtin, static_input_idxs=list(static_input_idxs))
            try:
                g.translation = aten_translate.translate_graph(gm)
            except Exception as e:  # the translator must not stop the run
                g.translate_error = f"translator error: {type(e).__name__}: {e}"
            self.graphs.append(g)
            return g

    def unique(self, name: str) -> str:
        if name not in self.functions:
            return name
        k = 1
        while f"{name}_{k}" in self.functions:
            k += 1
        return f"{name}_{k}"

    @staticmethod
    def _body(g: GraphRecord, inputs=None, outputs=None):
        if g.translation is None:
            return None, [g.translate_error or "no graph"]
        body = aten_translate.build_function(g.translation, inputs, outputs)
        return body, body.untranslated

    def _add(self, g: GraphRecord, name: str, body: Any, why: list, static: list,
             traces: Optional[list] = None) -> FunctionRecord:
        """`traces`: the callable's per-output stack traces (all its outputs)."""
        f = FunctionRecord(name, g.mode, g, body, list(static), list(why), builtin=g.builtin)
        if body is not None and body.ok:
            f.stack_traces = stack_traces.for_function(traces, body.dropped_outputs, len(body.outputs))
            f.mutating_use_stack_traces = stack_traces.for_inputs(g.mutating_uses, body.inputs)
        if not g.builtin:  # (symbolic sizes of generic ops, aten_translate.FunctionBody.notes)
            self.s.notes.extend(f"{name}: {note}" for note in getattr(body, "notes", None) or ())
        g.functions.append(f)
        if not g.builtin:
            self.functions[name] = f
        return f

    def finish_graph(self, g: GraphRecord, partition_maps: Optional[Sequence[Any]]) -> None:
        """After Inductor returned: one function per cudagraphified callable
        (whole graph or partition), or one for the graph run without the tree."""
        with self.s.lock:
            g.cudagraphed = bool(g.partitions)
            if not g.partitions:
                body, why = self._body(g)
                self._add(g, g.base if g.builtin else self.unique(g.base), body, why, g.static_input_idxs,
                          g.stack_traces)
                return
            maps = list(partition_maps or [])
            for k, p in enumerate(g.partitions):
                if g.builtin:
                    name = g.base
                elif len(g.partitions) == 1:
                    name = self.unique(g.base)
                else:
                    name = self.unique(f"{g.base}_p{k}")
                traces = None
                if maps and len(maps) == len(g.partitions):
                    pm = maps[k]
                    mapping = list(pm.output_index_mapping)
                    body, why = self._body(g, list(pm.input_index_mapping), graph_positions(mapping))
                    traces = stack_traces.for_partition(g.stack_traces, mapping, g.visible_outputs)
                elif not maps and len(g.partitions) == 1:
                    body, why = self._body(g)
                    traces = g.stack_traces
                else:
                    body, why = None, [f"{len(g.partitions)} cudagraphified callables for {len(maps)} partition maps"]
                if p.stack_traces is not None:  # (what the tree got for this callable)
                    traces = p.stack_traces
                p.function = self._add(g, name, body, why, p.static_input_idxs, traces)

    def make_step(self, g: GraphRecord, opt_name: str) -> None:
        """A graph found to be `opt_name`'s step only at its first call (the
        launcher): from now on it is named and written as the built-in
        programs' optimizer steps are (no function line, no call action;
        its tree events go with the optimizer_step action)."""
        with self.s.lock:
            assert g.builtin is None and g.calls == 0, "a graph becomes a step before its first call"
            g.builtin = opt_name
            g.base = f"{opt_name}.step"
            for f in g.functions:
                self.functions.pop(f.name, None)
                f.name = g.base
                f.builtin = opt_name

    def on_compile_skip(self, message: str) -> None:
        stack = getattr(self.s.tls, "compiling", None)
        if stack:
            stack[-1].skip_messages.append(message)
        else:
            fields = {"message": message}
            if "mutated inputs" in message:
                fields = {"id": "S1", "message": message}
            self.s.event("skip", fields)

    # -- the tree side (the observer's bind_function) ---------------------------

    def bind_function(self, fid: int, inputs: Sequence[Any], static_input_idxs: Sequence[int], mode: Any) -> FidInfo:
        part: Optional[PartitionRecord] = getattr(self.s.tls, "partition", None)
        ints = int_positions_of(inputs)
        if part is None or part.function is None:
            name = self.unique(f"fid{fid}")
            self.s.notes.append(f"FunctionID {fid}: the tree manager got a callable the compile hooks did not see")
            f = FunctionRecord(name, mode_name(mode), None, None, list(static_input_idxs), ["unmapped callable"])
            self.functions[name] = f
            return FidInfo(name, drop_positions(ints))
        f = part.function
        if f.builtin:
            return FidInfo(f.name, self.step_remap(f.builtin, inputs, ints))
        tensors = len(inputs) - len(ints)
        if f.body is not None and f.body.ok and tensors != len(f.body.inputs):
            # (Integer inputs may differ: a partition takes the SymInts its
            # kernels need, appended; they go to int_key either way.)
            self.s.notes.append(
                f"{f.name}: {tensors} tensor inputs at run time, {len(f.body.inputs)} in the graph"
            )
            f.untranslated.append("tensor inputs differ between graph and run")
        remap = drop_positions(ints)
        self.note_params(f, inputs, remap)
        return FidInfo(f.name, remap)

    def note_params(self, f: FunctionRecord, inputs: Sequence[Any], remap) -> None:
        """param_input_idxs from the first call: inputs that are nn.Parameters."""
        if f.param_input_idxs is not None:
            return
        params = []
        for i, t in enumerate(inputs):
            if not is_tensor(t):
                continue
            is_param = type(t).__name__ == "Parameter" or any(
                e.kind == "param" for e in self.s.registry.entries(t)
            )
            j = remap(i)
            if is_param and j is not None:
                params.append(j)
        f.param_input_idxs = params

    def step_remap(self, opt_name: str, inputs: Sequence[Any], ints: list[int]):
        """The optimizer step's inputs in capsim's order (params, grads, then
        per param its state), matched by identity; PyTorch's order if any
        input is not one of those."""
        entry = self.optimizers.get(opt_name)
        fallback = drop_positions(ints)
        opt = entry[0]() if entry is not None else None
        if opt is None:
            return fallback
        mapping, roles, expected = step_input_map(opt, entry[2], inputs, ints)
        self.step_inputs.setdefault(opt_name, roles)
        tensors = len(inputs) - len(ints)
        if len(mapping) != tensors or tensors != expected or len(set(mapping.values())) != tensors:
            self.s.notes.append(
                f"{opt_name}.step: inputs are not capsim's params, grads and state ({roles});"
                " its events keep PyTorch's input indices"
            )
            return fallback
        return lambda i: mapping.get(i)


def graph_positions(mapping: Sequence[Any]) -> list:
    """A partition's output_index_mapping as one graph output per partition
    output (None: none): 2.12 on, an entry is the list of graph outputs that
    partition output is (the same value), not one index."""
    out: list = []
    for entry in mapping:
        if isinstance(entry, (list, tuple)):
            entry = entry[0] if entry else None
        out.append(entry)
    return out


def step_input_map(opt: Any, kind: str, inputs: Sequence[Any], ints: list[int]) -> tuple[dict, list, int]:
    """(PyTorch position -> capsim index, the role of each input, how many
    tensor inputs capsim's step has) for an optimizer of `kind`."""
    params = [p for group in opt.param_groups for p in group["params"]]
    n = len(params)
    per = 1 if kind == "sgd" else 3
    keys = ["momentum_buffer"] if kind == "sgd" else ["exp_avg", "exp_avg_sq", "step"]
    where: dict[int, tuple[int, str]] = {}
    for i, p in enumerate(params):
        where[id(p)] = (i, f"param_{i}")
        if p.grad is not None:
            where[id(p.grad)] = (n + i, f"grad_{i}")
        state = opt.state.get(p, {})
        for j, key in enumerate(keys):
            s = state.get(key)
            if s is not None:
                where[id(s)] = (2 * n + per * i + j, f"{key}_{i}")
    mapping: dict[int, int] = {}
    roles: list[str] = []
    for i, t in enumerate(inputs):
        if i in ints:
            roles.append("int")
            continue
        hit = where.get(id(t))
        roles.append(hit[1] if hit else "other")
        if hit:
            mapping[i] = hit[0]
    return mapping, roles, (2 + per) * n
