"""Calls in a cudagraph recording: each call the tree manager got (the
observer's on_run_enter/on_run_exit: a `call` action with its args, outputs,
int_key and new_invocation), and each call of a compiled graph as the
compile hooks' GraphCall sees it (graph_call_enter/exit: an `eager_call` or a
`call` for a graph no tree took; the outputs of a backward, kept for the
program API's accumulate_grad). No torch import.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .records import GraphRecord, Item
from .values import FidInfo, drop_positions, int_positions_of, is_tensor, safe_name, weak_refs


def _int_key(inputs: Sequence[Any]) -> list[int]:
    return [int(v) for v in inputs if isinstance(v, int) and not isinstance(v, bool)]


def skip_fields(function: str, message: str) -> dict:
    skip = {"id": "S1"} if "mutated inputs" in message else {}
    skip.update({"function": function, "message": message})
    return skip


class CallLog:
    """The calls of one session (`s`: the Session)."""

    def __init__(self, session: Any, generation_fn: Any) -> None:
        self.s = session
        self.generation_fn = generation_fn
        self.last_generation = generation_fn() if generation_fn else None
        self.count = 0  # calls written (their outputs' names number them)
        self.graph_calls: list = []  # (GraphRecord, arg names, output names) of the current backward
        self.last_forward_call: dict[int, tuple] = {}  # graph local id -> (arg names, output names)
        self.in_backward = False

    # -- the tree side (the observer's sink) -----------------------------------

    def on_run_enter(self, fid: int, info: FidInfo, inputs: Sequence[Any]) -> Any:
        s = self.s
        with s.lock:
            f = s.table.functions.get(info.function)
            part = getattr(s.tls, "partition", None)
            if part is not None and part.function is not None and part.function.name == info.function:
                f = part.function
            new_invocation = self.new_invocation()
            count = getattr(s.tls, "tree_runs", None)
            if count is not None:
                s.tls.tree_runs = count + 1
            if f is None or f.builtin:
                return None
            f.called = True
            int_key = _int_key(inputs)
            args = [s.name_of(v) for v in inputs if not isinstance(v, int) and is_tensor(v)]
            fields: dict = {"function": f.name, "args": args, "outputs": []}
            if int_key:
                fields["int_key"] = int_key
            default = f.mode != "backward"
            if self.generation_fn is not None and new_invocation != default:
                fields["new_invocation"] = new_invocation
            self.count += 1
            item = s.action("call", fields, note=f"call {f.name}")
            s.buffer.call_depth += 1
            return (item, f, args, self.count, weak_refs(inputs))

    def on_run_exit(self, token: Any, outputs: Any, error: Optional[BaseException]) -> None:
        with self.s.lock:
            if token is None:
                return
            item, f, args, number, refs = token
            self._end_call(item, args, f.name, number, refs, outputs, error)

    def _end_call(self, item: Item, args: list, function: str, number: int, refs: list, outputs: Any,
                  error: Optional[BaseException]) -> None:
        buffer = self.s.buffer
        buffer.call_depth -= 1
        names: list[str] = []
        if error is None and outputs is not None:
            k = 0
            for out in list(outputs):
                if not is_tensor(out):
                    continue
                names.append(self.bind_output(out, f"{safe_name(function)}_{number}_{k}", refs))
                k += 1
        item.fields["outputs"] = names
        if buffer.call_depth == 0:
            buffer.settle_call_deaths(item, args)

    def bind_output(self, out: Any, name: str, input_refs: Sequence[Any]) -> str:
        """A name for an output; "" (capsim drops it) for an output that is
        one of the call's own inputs passed through (a saved input or a
        parameter): the program holds it by its own name. (A replay's cached
        output, the same object as the previous replay's, gets a new name:
        capsim hands out its cached tensors the same way.)"""
        if any(r() is out for r in input_refs):
            return ""
        self.s.registry.bind(out, name, "output")
        return name

    # -- graph-level calls (hooks.GraphCall) -------------------------------------

    def new_invocation(self) -> bool:
        """Whether Dynamo entered a compiled frame since the previous call
        (GenerationTracker.generation moved): a new torch.compile invocation.
        Asked once per graph call: a graph's second partition is not new."""
        tls = self.s.tls
        pending = getattr(tls, "graph_new_invocation", None)
        if pending is not None:
            tls.graph_new_invocation = False
            return pending
        generation = self.generation_fn() if self.generation_fn else None
        new = generation is not None and generation != self.last_generation
        self.last_generation = generation
        return new

    def _step_events(self, g: GraphRecord) -> None:
        """An optimizer step Inductor did not cudagraph: its events go with
        the optimizer_step action."""
        name = f"{g.builtin}.step"
        if g.calls == 1:
            for m in g.skip_messages:
                self.s.event("skip", skip_fields(name, m))
        self.s.event("eager", {"function": name, "reason": "compile_time_skip"})

    def _treeless_call(self, g: GraphRecord, inputs: Sequence[Any], token: dict) -> None:
        """A graph no tree took: an eager_call, or a call (cudagraphs skipped
        when Inductor compiled it, or none on this device)."""
        s = self.s
        new_invocation = s.tls.graph_new_invocation
        s.tls.graph_new_invocation = None
        f = g.functions[0]
        f.called = True
        s.table.note_params(f, inputs, drop_positions(int_positions_of(inputs)))
        ints = _int_key(inputs)
        args = [s.name_of(v) for v in inputs if is_tensor(v)]
        self.count += 1
        if g.skip_messages or s.no_cudagraphs:
            # cudagraphs were skipped when Inductor compiled it (a call that
            # capsim should run eagerly, compile_time_skip), or there are
            # none on this device.
            fields: dict = {"function": f.name, "args": args, "outputs": []}
            if ints:
                fields["int_key"] = ints
            if self.generation_fn is not None and bool(new_invocation) != (f.mode != "backward"):
                fields["new_invocation"] = bool(new_invocation)
            item = s.action("call", fields, note=f"call {f.name}")
            if g.calls == 1 and not g.skip_messages:
                s.event("compile", {"function": f.name, "static_input_idxs": s.static_of(f)})
            elif g.calls == 1:
                for m in g.skip_messages:
                    s.event("skip", skip_fields(f.name, m))
        else:
            item = s.action("eager_call", {"function": f.name, "args": args, "outputs": []},
                            note=f"eager_call {f.name}")
        s.buffer.call_depth += 1
        token.update(item=item, args_all=args, refs=weak_refs(inputs), number=self.count)

    def graph_call_enter(self, g: GraphRecord, inputs: Sequence[Any]) -> Any:
        """A call of a compiled graph, before Inductor's callable runs."""
        s = self.s
        with s.lock:
            if s.on_graph_call is not None:
                s.on_graph_call(g, inputs)
            g.calls += 1
            s.tls.graph_new_invocation = None
            s.tls.graph_new_invocation = self.new_invocation()
            if not g.cudagraphed and g.builtin and g.skip_messages:
                self._step_events(g)
            arg_names = [s.name_of(v, create=False) if is_tensor(v) else None for v in inputs]
            token = {"graph": g, "args": arg_names, "item": None}
            if not g.cudagraphed and not g.builtin and g.functions:
                self._treeless_call(g, inputs, token)
            return token

    def graph_call_exit(self, token: Any, outputs: Any, error: Optional[BaseException], tree_runs: int) -> None:
        s = self.s
        with s.lock:
            s.tls.graph_new_invocation = None
            g: GraphRecord = token["graph"]
            item = token["item"]
            if item is not None:
                name = g.functions[0].name
                self._end_graph_call(item, name, token, outputs, error, bool(g.skip_messages))
            elif g.cudagraphed and tree_runs == 0 and error is None:
                s.notes.append(f"{g.base}: a call that reached no tree manager (call not in the trace)")
            out_names = []
            if outputs is not None:
                for out in list(outputs):
                    out_names.append(s.registry.lookup(out) if is_tensor(out) else None)
            if g.mode == "forward":
                self.last_forward_call[g.local_id] = (token["args"], out_names)
            elif g.mode == "backward" and self.in_backward:
                self.graph_calls.append((g, token["args"], out_names))
                # Kept until the recorder's accumulate_grad has used them.
                s.registry.held.update(n for n in out_names if n)

    def _end_graph_call(self, item: Item, name: str, token: dict, outputs: Any,
                        error: Optional[BaseException], skipped: bool) -> None:
        s = self.s
        s.buffer.call_depth -= 1
        names = []
        if error is None and outputs is not None:
            k = 0
            for out in list(outputs):
                if is_tensor(out):
                    names.append(self.bind_output(out, f"{safe_name(name)}_{token['number']}_{k}", token["refs"]))
                    k += 1
        item.fields["outputs"] = names
        if skipped and error is None:
            s.event("eager", {"function": name, "reason": "compile_time_skip"})
        if s.buffer.call_depth == 0:
            s.buffer.settle_call_deaths(item, token["args_all"])
