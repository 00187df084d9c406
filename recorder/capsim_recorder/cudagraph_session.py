"""One cudagraph program's recording: the actions the program did, the
function lines of the graphs Inductor compiled, and the events the tree
manager's observer reported, buffered and written as one capsim trace.

The trace is buffered because its function lines must precede every action
(docs/trace-format.md section 1) while Inductor compiles a graph only at its
first call, in the middle of the program; it is written at the end, in order.

Names. capsim's actions name Python objects. The session keeps a registry
from live tensors (weak references only: the recorder must not change what
lives) to names: the program's own (`rec.param`, `rec.tensor`), the outputs
of each compiled call (`<function>_<call>_<k>`), `<param>.grad` after
AccumulateGrad, and `t<k>` for a tensor a call received that nobody named
(autograd's grad of the loss, say), which gets a `new_tensor` action first.
When a named tensor dies (its weak reference fires), the name is dropped:
inside a call whose argument it was, into that call's `consume`; otherwise
as a `del` action before the next action.

This module imports nothing from torch at import time; the compile hooks
(cudagraph_hooks.py) and the observer (cudagraph_events.py) call into it.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from . import aten_translate
from .cudagraph_events import OBSERVED_KINDS, FidInfo, drop_positions, int_positions_of, is_tensor, safe_ptr

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
class Entry:
    name: str
    kind: str  # param, input, output, auto, grad
    ref: Any = None  # weak reference to the Python object (identity lookups)
    sref: Any = None  # weak reference to its storage (liveness)
    sig: Any = None  # (data_ptr, sizes, strides, dtype) when bound
    dead: bool = False  # the storage died
    dropped: bool = False  # the name was dropped in the trace (del, consume, rebinding)

    def obj(self) -> Any:
        return self.ref() if self.ref is not None else None

    def expired(self) -> bool:
        if self.sref is not None:
            try:
                return bool(self.sref.expired())
            except Exception:
                return False
        return self.obj() is None


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


@dataclass
class PartitionRecord:
    """One callable Inductor handed to cudagraphify (a graph or a partition)."""

    graph: GraphRecord
    index: int
    static_input_idxs: list
    placeholder_names: list
    function: Optional["FunctionRecord"] = None


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


def storage_ref(t: Any) -> Any:
    """A weak reference to t's storage (PyTorch's StorageWeakRef, which the
    tree manager uses too), or None."""
    try:
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(t.untyped_storage())
    except Exception:
        return None


def signature(t: Any) -> Any:
    try:
        return (safe_ptr(t), tuple(t.size()), tuple(t.stride()), str(t.dtype))
    except Exception:
        return None


# Which name a tensor with several goes by: the program's own first.
KIND_ORDER = {"param": 0, "grad": 1, "input": 2, "auto": 3, "output": 4}


class Registry:
    """Names of tensors. A name lives while its tensor's storage lives (the
    Python object may die earlier: autograd keeps the tensor, not the
    object); the registry holds weak references only."""

    def __init__(self) -> None:
        self._by_id: dict[int, list[Entry]] = {}
        self.names: dict[str, Entry] = {}
        self.held: set[str] = set()

    def bind(self, t: Any, name: str, kind: str) -> Entry:
        entry = Entry(name, kind)
        old = self.names.get(name)
        if old is not None:
            old.dropped = True
        try:
            entry.ref = weakref.ref(t)
        except TypeError:
            entry.ref = None
        entry.sref = storage_ref(t)
        entry.sig = signature(t)
        self._by_id.setdefault(id(t), []).append(entry)
        self.names[name] = entry
        return entry

    def live(self, e: Entry) -> bool:
        return not e.dropped and not e.dead and self.names.get(e.name) is e

    def entries(self, t: Any) -> list[Entry]:
        """The live names of t: the same object, or (if its object died) the
        same memory and layout."""
        found = [e for e in self._by_id.get(id(t), []) if self.live(e) and e.obj() is t]
        if found:
            return found
        sig = signature(t)
        if sig is None or sig[0] is None:
            return []
        return [e for e in self.names.values() if self.live(e) and e.sig == sig and not e.expired()]

    def lookup(self, t: Any) -> Optional[str]:
        found = self.entries(t)
        if not found:
            return None
        best = min(range(len(found)), key=lambda i: (KIND_ORDER.get(found[i].kind, 9), -i))
        return found[best].name

    def matches(self, name: str, t: Any) -> bool:
        e = self.names.get(name)
        if e is None or not self.live(e):
            return False
        if e.obj() is t:
            return True
        return e.sig is not None and e.sig == signature(t) and not e.expired()

    def obj(self, name: str) -> Any:
        e = self.names.get(name)
        return e.obj() if e is not None and not e.dropped else None

    def poll(self) -> list[Entry]:
        """Names whose storage died since the last poll (params and grads
        excepted: capsim manages their lifetime itself; so are held names,
        which the caller drops itself)."""
        out = []
        for e in list(self.names.values()):
            if e.dropped or e.dead or e.kind in ("param", "grad") or e.name in self.held:
                continue
            if e.expired():
                e.dead = True
                out.append(e)
        return out

    def sweep(self) -> None:
        for name in [n for n, e in self.names.items() if e.dropped or e.dead]:
            del self.names[name]
        for key in [k for k, es in self._by_id.items() if all(e.dropped or e.dead for e in es)]:
            del self._by_id[key]


class Session:
    """Buffers one program's trace. The program drives it through
    `CudagraphRecorder` (cudagraph_recorder.py); the compile hooks and the
    tree observer feed it; `write()` produces the file."""

    def __init__(self, name: str, *, generation_fn=None) -> None:
        self.name = name
        self.items: list[Item] = []
        self.orphan_events: list = []
        self.graphs: list[GraphRecord] = []
        self.graph_local: dict[Any, int] = {}
        self.next_local = 0
        self.functions: dict[str, FunctionRecord] = {}
        self.notes: list[str] = []
        self.untranslated_reasons: list[str] = []
        self.builtin: Optional[str] = None  # the optimizer whose step is running
        self.optimizers: dict[str, Any] = {}  # name -> (weakref(opt), [param names], kind)
        self.step_graph_names: dict[str, int] = {}
        self.registry = Registry()
        self.call_depth = 0
        self.calls = 0
        self.auto = 0
        self.lock = threading.RLock()
        self.tls = threading.local()
        self.generation_fn = generation_fn
        self.last_generation = generation_fn() if generation_fn else None
        self.graph_calls: list = []  # (GraphRecord, arg names, output names) of the current backward
        self.last_forward_call: dict[int, tuple] = {}  # graph local id -> (arg names, output names)
        self.in_backward = False
        self.program_error: Optional[tuple[str, str]] = None
        self.step_inputs: dict[str, list[str]] = {}
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

    # -- actions and events --------------------------------------------------

    def flush_deaths(self) -> None:
        """`del` for each name whose tensor died since the last action."""
        with self.lock:
            for e in self.registry.poll():
                e.dropped = True
                self._append(Item("del", {"name": e.name}, note=f"del {e.name}"))
            self.registry.sweep()

    def _append(self, item: Item) -> Item:
        self.items.append(item)
        return item

    def action(self, kind: str, fields: dict, note: str = "") -> Item:
        with self.lock:
            if self.call_depth == 0:
                self.flush_deaths()
            return self._append(Item(kind, dict(fields), note=note or kind))

    def event(self, kind: str, fields: dict) -> None:
        with self.lock:
            if self.items:
                self.items[-1].events.append((kind, dict(fields)))
            else:
                self.orphan_events.append((kind, dict(fields)))

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
        fields: dict = {"name": name, "sizes": [int(s) for s in t.size()]}
        fill = uniform_fill(t)
        if fill is not None:
            fields["fill"] = fill
        self.action("new_tensor", fields, note=f"new_tensor {name} (made by PyTorch)")
        self.registry.bind(t, name, "auto")
        try:
            strides = [int(x) for x in t.stride()]
            if strides != contiguous_strides(fields["sizes"]) and any(fields["sizes"]):
                self.notes.append(
                    f"{name}: strides {strides} (new_tensor is contiguous in capsim); "
                    f"storage offset {int(t.storage_offset())}"
                )
        except Exception:
            pass
        return name

    # -- compile side (cudagraph_hooks.py) -----------------------------------

    def new_graph(self, graph_id: Any, mode: Any, gm: Any, static_input_idxs: Sequence[int]) -> GraphRecord:
        with self.lock:
            m = mode_name(mode)
            if self.builtin is not None:
                local = -1 - len(self.graphs)  # an optimizer step: no fwd/bwd number
            elif graph_id is not None and graph_id in self.graph_local:
                local = self.graph_local[graph_id]
            else:
                local = self.next_local
                self.next_local += 1
                if graph_id is not None:
                    self.graph_local[graph_id] = local
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

    def _unique(self, name: str) -> str:
        if name not in self.functions:
            return name
        k = 1
        while f"{name}_{k}" in self.functions:
            k += 1
        return f"{name}_{k}"

    def _body(self, g: GraphRecord, inputs=None, outputs=None):
        if g.translation is None:
            return None, [g.translate_error or "no graph"]
        body = aten_translate.build_function(g.translation, inputs, outputs)
        return body, body.untranslated

    def finish_graph(self, g: GraphRecord, partition_maps: Optional[Sequence[Any]]) -> None:
        """After Inductor returned: one function per cudagraphified callable
        (whole graph or partition), or one for the graph run without the tree."""
        with self.lock:
            g.cudagraphed = bool(g.partitions)
            if not g.partitions:
                name = g.base if g.builtin else self._unique(g.base)
                body, why = self._body(g)
                f = FunctionRecord(name, g.mode, g, body, list(g.static_input_idxs), list(why), builtin=g.builtin)
                g.functions.append(f)
                if not g.builtin:
                    self.functions[name] = f
                return
            maps = list(partition_maps or [])
            for k, p in enumerate(g.partitions):
                if g.builtin:
                    name = g.base
                elif len(g.partitions) == 1:
                    name = self._unique(g.base)
                else:
                    name = self._unique(f"{g.base}_p{k}")
                if maps and len(maps) == len(g.partitions):
                    pm = maps[k]
                    body, why = self._body(g, list(pm.input_index_mapping), list(pm.output_index_mapping))
                elif not maps and len(g.partitions) == 1:
                    body, why = self._body(g)
                else:
                    body, why = None, [f"{len(g.partitions)} cudagraphified callables for {len(maps)} partition maps"]
                f = FunctionRecord(name, g.mode, g, body, list(p.static_input_idxs), list(why), builtin=g.builtin)
                p.function = f
                g.functions.append(f)
                if not g.builtin:
                    self.functions[name] = f

    def make_step(self, g: GraphRecord, opt_name: str) -> None:
        """A graph found to be `opt_name`'s step only at its first call (the
        launcher): from now on it is named and written as the built-in
        programs' optimizer steps are (no function line, no call action;
        its tree events go with the optimizer_step action)."""
        with self.lock:
            assert g.builtin is None and g.calls == 0, "a graph becomes a step before its first call"
            g.builtin = opt_name
            g.base = f"{opt_name}.step"
            for f in g.functions:
                self.functions.pop(f.name, None)
                f.name = g.base
                f.builtin = opt_name

    def on_compile_skip(self, message: str) -> None:
        stack = getattr(self.tls, "compiling", None)
        if stack:
            stack[-1].skip_messages.append(message)
        else:
            fields = {"message": message}
            if "mutated inputs" in message:
                fields = {"id": "S1", "message": message}
            self.event("skip", fields)

    # -- the tree side (cudagraph_events.TreeObserver's sink) ------------------

    def bind_function(self, fid: int, inputs: Sequence[Any], static_input_idxs: Sequence[int], mode: Any) -> FidInfo:
        part: Optional[PartitionRecord] = getattr(self.tls, "partition", None)
        ints = int_positions_of(inputs)
        if part is None or part.function is None:
            name = self._unique(f"fid{fid}")
            self.notes.append(f"FunctionID {fid}: the tree manager got a callable the compile hooks did not see")
            f = FunctionRecord(name, mode_name(mode), None, None, list(static_input_idxs), ["unmapped callable"])
            self.functions[name] = f
            return FidInfo(name, drop_positions(ints))
        f = part.function
        if f.builtin:
            return FidInfo(f.name, self._step_remap(f.builtin, inputs, ints))
        tensors = len(inputs) - len(ints)
        if f.body is not None and f.body.ok and tensors != len(f.body.inputs):
            # (Integer inputs may differ: a partition takes the SymInts its
            # kernels need, appended; they go to int_key either way.)
            self.notes.append(
                f"{f.name}: {tensors} tensor inputs at run time, {len(f.body.inputs)} in the graph"
            )
            f.untranslated.append("tensor inputs differ between graph and run")
        remap = drop_positions(ints)
        self._note_params(f, inputs, remap)
        return FidInfo(f.name, remap)

    def _note_params(self, f: FunctionRecord, inputs: Sequence[Any], remap) -> None:
        """param_input_idxs from the first call: inputs that are nn.Parameters."""
        if f.param_input_idxs is not None:
            return
        params = []
        for i, t in enumerate(inputs):
            if not is_tensor(t):
                continue
            is_param = type(t).__name__ == "Parameter" or any(
                e.kind == "param" for e in self.registry.entries(t)
            )
            j = remap(i)
            if is_param and j is not None:
                params.append(j)
        f.param_input_idxs = params

    def _step_remap(self, opt_name: str, inputs: Sequence[Any], ints: list[int]):
        """The optimizer step's inputs in capsim's order (params, grads, then
        per param its state), matched by identity; PyTorch's order if any
        input is not one of those."""
        entry = self.optimizers.get(opt_name)
        roles: list[str] = []
        fallback = drop_positions(ints)
        if entry is None:
            return fallback
        opt = entry[0]()
        if opt is None:
            return fallback
        params = [p for group in opt.param_groups for p in group["params"]]
        n = len(params)
        per = 1 if entry[2] == "sgd" else 3
        keys = ["momentum_buffer"] if entry[2] == "sgd" else ["exp_avg", "exp_avg_sq", "step"]
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
        for i, t in enumerate(inputs):
            if i in ints:
                roles.append("int")
                continue
            hit = where.get(id(t))
            roles.append(hit[1] if hit else "other")
            if hit:
                mapping[i] = hit[0]
        self.step_inputs.setdefault(opt_name, roles)
        tensors = len(inputs) - len(ints)
        if len(mapping) != tensors or tensors != (2 + per) * n or len(set(mapping.values())) != tensors:
            self.notes.append(
                f"{opt_name}.step: inputs are not capsim's params, grads and state ({roles});"
                " its events keep PyTorch's input indices"
            )
            return fallback
        return lambda i: mapping.get(i)

    def on_run_enter(self, fid: int, info: FidInfo, inputs: Sequence[Any]) -> Any:
        with self.lock:
            f = self.functions.get(info.function)
            part = getattr(self.tls, "partition", None)
            if part is not None and part.function is not None and part.function.name == info.function:
                f = part.function
            new_invocation = self._new_invocation()
            count = getattr(self.tls, "tree_runs", None)
            if count is not None:
                self.tls.tree_runs = count + 1
            if f is None or f.builtin:
                return None
            f.called = True
            args: list[str] = []
            int_key: list[int] = []
            for v in inputs:
                if isinstance(v, int) and not isinstance(v, bool):
                    int_key.append(int(v))
                elif is_tensor(v):
                    args.append(self.name_of(v))
            fields: dict = {"function": f.name, "args": args, "outputs": []}
            if int_key:
                fields["int_key"] = int_key
            default = f.mode != "backward"
            if self.generation_fn is not None and new_invocation != default:
                fields["new_invocation"] = new_invocation
            self.calls += 1
            item = self.action("call", fields, note=f"call {f.name}")
            self.call_depth += 1
            return (item, f, args, self.calls, weak_refs(inputs))

    def on_run_exit(self, token: Any, outputs: Any, error: Optional[BaseException]) -> None:
        with self.lock:
            if token is None:
                return
            item, f, args, number, refs = token
            self.call_depth -= 1
            names: list[str] = []
            if error is None and outputs is not None:
                k = 0
                for out in list(outputs):
                    if not is_tensor(out):
                        continue
                    names.append(self._bind_output(out, f"{safe_name(f.name)}_{number}_{k}", refs))
                    k += 1
            item.fields["outputs"] = names
            if self.call_depth == 0:
                self._settle_call_deaths(item, args)

    def _bind_output(self, out: Any, name: str, input_refs: Sequence[Any]) -> str:
        """A name for an output; "" (capsim drops it) for an output that is
        one of the call's own inputs passed through (a saved input or a
        parameter): the program holds it by its own name. (A replay's cached
        output, the same object as the previous replay's, gets a new name:
        capsim hands out its cached tensors the same way.)"""
        if any(r() is out for r in input_refs):
            return ""
        self.registry.bind(out, name, "output")
        return name

    def _settle_call_deaths(self, item: Item, args: list[str]) -> None:
        """Names that died during the call: its own arguments moved into it
        (consume); the others are dropped (del) right after it."""
        consumed = []
        for e in self.registry.poll():
            e.dropped = True
            if e.name in args and item.action == "call":  # eager_call has no consume
                if e.name not in consumed:
                    consumed.append(e.name)
            else:
                self._append(Item("del", {"name": e.name}, note=f"del {e.name}"))
        if consumed:
            item.fields["consume"] = consumed
        self.registry.sweep()

    def on_set_to_running_backward(self) -> None:
        self.action("set_to_running_backward", {})

    # -- graph-level calls (cudagraph_hooks.GraphCall) --------------------------

    def _new_invocation(self) -> bool:
        """Whether Dynamo entered a compiled frame since the previous call
        (GenerationTracker.generation moved): a new torch.compile invocation.
        Asked once per graph call: a graph's second partition is not new."""
        pending = getattr(self.tls, "graph_new_invocation", None)
        if pending is not None:
            self.tls.graph_new_invocation = False
            return pending
        generation = self.generation_fn() if self.generation_fn else None
        new = generation is not None and generation != self.last_generation
        self.last_generation = generation
        return new

    def graph_call_enter(self, g: GraphRecord, inputs: Sequence[Any]) -> Any:
        """A call of a compiled graph, before Inductor's callable runs."""
        with self.lock:
            if self.on_graph_call is not None:
                self.on_graph_call(g, inputs)
            g.calls += 1
            self.tls.graph_new_invocation = None
            self.tls.graph_new_invocation = self._new_invocation()
            if not g.cudagraphed and g.builtin and g.skip_messages:
                # An optimizer step Inductor did not cudagraph: its events go
                # with the optimizer_step action.
                name = f"{g.builtin}.step"
                if g.calls == 1:
                    for m in g.skip_messages:
                        skip = {"id": "S1"} if "mutated inputs" in m else {}
                        skip.update({"function": name, "message": m})
                        self.event("skip", skip)
                self.event("eager", {"function": name, "reason": "compile_time_skip"})
            arg_names = [self.name_of(v, create=False) if is_tensor(v) else None for v in inputs]
            token = {"graph": g, "args": arg_names, "item": None}
            if not g.cudagraphed and not g.builtin and g.functions:
                new_invocation = self.tls.graph_new_invocation
                self.tls.graph_new_invocation = None
                f = g.functions[0]
                f.called = True
                self._note_params(f, inputs, drop_positions(int_positions_of(inputs)))
                ints = [int(v) for v in inputs if isinstance(v, int) and not isinstance(v, bool)]
                args = [self.name_of(v) for v in inputs if is_tensor(v)]
                self.calls += 1
                if g.skip_messages or self.no_cudagraphs:
                    # cudagraphs were skipped when Inductor compiled it (a
                    # call that capsim should run eagerly, compile_time_skip),
                    # or there are none on this device.
                    fields: dict = {"function": f.name, "args": args, "outputs": []}
                    if ints:
                        fields["int_key"] = ints
                    if self.generation_fn is not None and bool(new_invocation) != (f.mode != "backward"):
                        fields["new_invocation"] = bool(new_invocation)
                    item = self.action("call", fields, note=f"call {f.name}")
                    if g.calls == 1 and not g.skip_messages:
                        self.event("compile", {"function": f.name, "static_input_idxs": self._static_of(f)})
                    elif g.calls == 1:
                        for m in g.skip_messages:
                            skip = {"id": "S1"} if "mutated inputs" in m else {}
                            skip.update({"function": f.name, "message": m})
                            self.event("skip", skip)
                else:
                    item = self.action("eager_call", {"function": f.name, "args": args, "outputs": []},
                                       note=f"eager_call {f.name}")
                self.call_depth += 1
                token["item"] = item
                token["args_all"] = args
                token["refs"] = weak_refs(inputs)
                token["number"] = self.calls
            return token

    def graph_call_exit(self, token: Any, outputs: Any, error: Optional[BaseException], tree_runs: int) -> None:
        with self.lock:
            self.tls.graph_new_invocation = None
            g: GraphRecord = token["graph"]
            item = token["item"]
            if item is not None:
                self.call_depth -= 1
                names = []
                if error is None and outputs is not None:
                    k = 0
                    for out in list(outputs):
                        if is_tensor(out):
                            names.append(self._bind_output(
                                out, f"{safe_name(g.functions[0].name)}_{token['number']}_{k}", token["refs"]))
                            k += 1
                item.fields["outputs"] = names
                if g.skip_messages and error is None:
                    self.event("eager", {"function": g.functions[0].name, "reason": "compile_time_skip"})
                if self.call_depth == 0:
                    self._settle_call_deaths(item, token["args_all"])
            elif g.cudagraphed and tree_runs == 0 and error is None:
                self.notes.append(f"{g.base}: a call that reached no tree manager (call not in the trace)")
            out_names = []
            if outputs is not None:
                for out in list(outputs):
                    out_names.append(self.registry.lookup(out) if is_tensor(out) else None)
            if g.mode == "forward":
                self.last_forward_call[g.local_id] = (token["args"], out_names)
            elif g.mode == "backward" and self.in_backward:
                self.graph_calls.append((g, token["args"], out_names))
                # Kept until the recorder's accumulate_grad has used them.
                self.registry.held.update(n for n in out_names if n)

    # -- writing ---------------------------------------------------------------

    def used_functions(self) -> list[FunctionRecord]:
        return [f for f in self.functions.values() if f.called and not f.builtin]

    def untranslated(self) -> list[str]:
        reasons: list[str] = []
        for f in self.used_functions():
            if f.body is None or not f.body.ok or f.untranslated:
                reasons.extend(f.untranslated or ["no body"])
        return sorted(set(reasons))

    def _static_of(self, f: FunctionRecord) -> list[int]:
        """f's static_input_idxs in capsim's input order (SymInts dropped)."""
        if f.body is None:
            return []
        remap = drop_positions(f.body.int_positions)
        return sorted({j for j in (remap(i) for i in f.static_input_idxs) if j is not None})

    def function_lines(self) -> list[dict]:
        lines = []
        for f in self.used_functions():
            body = f.body
            static = self._static_of(f)
            lines.append({
                "function": f.name,
                "mode": f.mode,
                "inputs": list(body.inputs),
                "ops": list(body.ops),
                "outputs": list(body.outputs),
                "static_input_idxs": static,
                "param_input_idxs": sorted(f.param_input_idxs or []),
            })
        return lines

    def plan(self) -> tuple[list[dict], list[Item], list[str]]:
        """(function lines, items, untranslated op names) as they will be
        written: without function lines or the actions that need them when
        some graph did not translate."""
        self.flush_deaths()
        reasons = self.untranslated()
        items = [it for it in self.items]
        if not reasons:
            return self.function_lines(), items, []
        self.untranslated_reasons = reasons
        static_names = {it.fields.get("name") for it in items if it.action == "new_tensor"}
        kept: list[Item] = []
        for it in items:
            keep = it.action in STANDALONE_ACTIONS and (
                it.action in ("mark_step_begin",) or it.fields.get("name") in static_names
            )
            if keep and it.action == "new_tensor" and it.note.endswith("(made by PyTorch)"):
                keep = False
            if keep:
                kept.append(Item(it.action, it.fields, list(it.events), it.note))
                continue
            # (A compile event without a fid, of a graph no tree took, is
            # the call's own and goes with it; the tree's events stay.)
            moved = [(k, dict(f, x_from=it.note)) for k, f in it.events
                     if not (k == "compile" and "fid" not in f)]
            if kept:
                kept[-1].events.extend(moved)
            else:
                self.orphan_events.extend(moved)
        return [], kept, aten_translate.op_names(reasons)


    def write(self, path: str, *, producer: str, seed: int, config: dict, extensions: dict) -> dict:
        """Writes the trace (header, function lines, actions and their
        events); returns counts for the summary."""
        from .trace_writer import TraceWriter

        functions, items, untranslated = self.plan()
        ext = dict(extensions)
        if untranslated:
            ext["x_untranslated"] = untranslated
            ext["x_untranslated_why"] = list(self.untranslated_reasons)
        if self.step_inputs:
            ext["x_step_inputs"] = {k: v for k, v in sorted(self.step_inputs.items())}
        if self.orphan_events:
            ext["x_events_before_any_action"] = len(self.orphan_events)
        if self.notes:
            ext["x_notes"] = list(dict.fromkeys(self.notes))
        events = 0
        with TraceWriter(path) as w:
            w.header(producer=producer, name=self.name, seed=seed, config=config,
                     observes=list(OBSERVED_KINDS), extensions=ext)
            for f in functions:
                w.function(f)
            for it in items:
                index = w.action(it.action, it.fields)
                for kind, fields in it.events:
                    w.event(index, kind, fields)
                    events += 1
        return {
            "actions": len(items),
            "events": events,
            "bytes": w.bytes_written,
            "functions": [f["function"] for f in functions],
            "untranslated": untranslated,
        }


def contiguous_strides(sizes: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(list(sizes)):
        out.insert(0, acc)
        acc *= max(int(s), 1)
    return out


def weak_refs(values: Sequence[Any]) -> list:
    out = []
    for v in values:
        if is_tensor(v):
            try:
                out.append(weakref.ref(v))
            except TypeError:
                pass
    return out


def safe_name(name: str) -> str:
    """A function name made fit for an object name (no '.')."""
    return name.replace(".", "_")


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
