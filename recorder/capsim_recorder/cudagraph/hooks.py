"""Where the recorder meets Inductor: which graph it compiled, which
callables it handed to the cudagraph trees, and each call of a compiled graph.

Patched for the length of one program (all module attributes, looked up by
PyTorch at call time, so a patch takes effect without touching torch.compile):

  torch._inductor.compile_fx._compile_fx_inner
      called by compile_fx_inner for every graph Inductor compiles, with the
      post-AOTAutograd aten graph and its kwargs (static_input_idxs,
      is_backward, is_inference, graph_id). The recorder translates the graph,
      runs the original, then pairs the callables handed to cudagraphify with
      the returned CompiledFxGraph's partition_maps and wraps its
      current_callable (one call of the graph).
  torch._inductor.compile_fx.cudagraphify
      imported by name inside output_code.cudagraph_post_compile and
      cudagraph_partition_post_compile at each use: one call per callable
      (the graph, or each graph partition) that goes to the trees, with its
      static_input_idxs before alignment. The callable it returns is wrapped
      so that the tree manager's add_function, which runs at its first call
      (and again per new int key), can be tied to that callable.

All of these are internal to PyTorch (see README.md); their names are
torch_compat.py's. No torch import.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import torch_compat
from . import stack_traces
from .records import PartitionRecord


class CompileHooks:
    def __init__(self, session: Any, compile_fx_module: Any) -> None:
        self.session = session
        self.cfx = compile_fx_module
        self.patched: list[tuple[Any, str, Any]] = []
        self.failures: list[str] = []

    def install(self) -> "CompileHooks":
        for name, make in ((torch_compat.COMPILE_FX_INNER, self._wrap_inner),
                           (torch_compat.CUDAGRAPHIFY, self._wrap_cudagraphify)):
            original = getattr(self.cfx, name, None)
            if original is None:
                self.failures.append(f"install: compile_fx.{name} not found")
                continue
            setattr(self.cfx, name, make(original))
            self.patched.append((self.cfx, name, original))
        return self

    def uninstall(self) -> None:
        while self.patched:
            owner, name, original = self.patched.pop()
            setattr(owner, name, original)

    # -- _compile_fx_inner ---------------------------------------------------------

    def _wrap_inner(self, original: Any) -> Any:
        hooks = self
        session = self.session

        @functools.wraps(original)
        def _compile_fx_inner(gm, example_inputs, **graph_kwargs):
            record = None
            try:
                mode = "forward"
                if graph_kwargs.get("is_backward"):
                    mode = "backward"
                elif graph_kwargs.get("is_inference"):
                    mode = "inference"
                record = session.new_graph(
                    graph_kwargs.get("graph_id"), mode, gm, list(graph_kwargs.get("static_input_idxs") or ())
                )
            except Exception as e:
                hooks.failures.append(f"_compile_fx_inner (before): {type(e).__name__}: {e}")
            stack = getattr(session.tls, "compiling", None)
            if stack is None:
                stack = session.tls.compiling = []
            if record is not None:
                stack.append(record)
            try:
                out = original(gm, example_inputs, **graph_kwargs)
            finally:
                if record is not None and stack and stack[-1] is record:
                    stack.pop()
            if record is None:
                return out
            try:
                # (After the compile: gm has had the post-grad passes.)
                record.stack_traces = stack_traces.of_graph(gm, out)
                record.visible_outputs = stack_traces.user_visible(out)
                record.mutating_uses = stack_traces.mutating_uses(gm)
            except Exception as e:
                hooks.failures.append(f"{record.base}: stack traces: {type(e).__name__}: {e}")
            try:
                session.finish_graph(record, getattr(out, "partition_maps", None))
                current = getattr(out, "current_callable", None)
                if current is not None and callable(current):
                    out.current_callable = GraphCall(session, record, current)
                else:
                    hooks.failures.append(f"{record.base}: no current_callable to wrap")
            except Exception as e:
                hooks.failures.append(f"_compile_fx_inner (after): {type(e).__name__}: {e}")
            return out

        return _compile_fx_inner

    # -- cudagraphify --------------------------------------------------------------

    def _wrap_cudagraphify(self, original: Any) -> Any:
        hooks = self
        session = self.session

        @functools.wraps(original)
        def cudagraphify(model, static_input_idxs=(), *args, **kwargs):
            part = None
            try:
                stack = getattr(session.tls, "compiling", None)
                if stack:
                    g = stack[-1]
                    names = [getattr(p, "name", None) for p in kwargs.get("placeholders", ()) or ()]
                    part = PartitionRecord(g, len(g.partitions), list(static_input_idxs or ()), names)
                    traces = kwargs.get("stack_traces")
                    if isinstance(traces, (list, tuple)):
                        part.stack_traces = list(traces)
                    g.partitions.append(part)
                else:
                    hooks.failures.append("cudagraphify called outside a compile the hooks saw")
            except Exception as e:
                hooks.failures.append(f"cudagraphify: {type(e).__name__}: {e}")
            run = original(model, static_input_idxs, *args, **kwargs)
            if part is None:
                return run
            return PartitionRun(session, part, run)

        return cudagraphify


class PartitionRun:
    """The callable cudagraphify returned, marked with its partition while it
    runs (so that the tree manager's add_function can be tied to it)."""

    def __init__(self, session: Any, part: PartitionRecord, run: Any) -> None:
        self._session = session
        self._part = part
        self._run = run

    def __call__(self, new_inputs):
        if self._session.closed:
            return self._run(new_inputs)
        tls = self._session.tls
        previous = getattr(tls, "partition", None)
        tls.partition = self._part
        try:
            return self._run(new_inputs)
        finally:
            tls.partition = previous

    def __getattr__(self, name):
        return getattr(self._run, name)


class GraphCall:
    """A compiled graph's current_callable, wrapped: each call is one call of
    the graph (its partitions' tree calls happen inside)."""

    def __init__(self, session: Any, record: Any, fn: Any) -> None:
        self._session = session
        self._record = record
        self._fn = fn

    def __call__(self, inputs):
        session = self._session
        if session.closed:
            return self._fn(inputs)
        token = None
        try:
            token = session.graph_call_enter(self._record, inputs)
        except Exception as e:
            session.notes.append(f"graph call enter: {type(e).__name__}: {e}")
        tls = session.tls
        previous = getattr(tls, "tree_runs", None)
        tls.tree_runs = 0
        error = None
        out = None
        try:
            out = self._fn(inputs)
            return out
        except BaseException as e:
            error = e
            raise
        finally:
            runs = tls.tree_runs
            tls.tree_runs = previous
            if token is not None:
                try:
                    session.graph_call_exit(token, out, error, runs)
                except Exception as e:
                    session.notes.append(f"graph call exit: {type(e).__name__}: {e}")

    def __getattr__(self, name):
        return getattr(self._fn, name)
