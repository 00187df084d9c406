"""The compiled optimizer on the CPU: what Dynamo and Inductor decide when
torch.compile traces `opt.step()`, written as a capsim trace that replay
compares with capsim's optimizer model (PR 107504, docs/cudagraph-trees.md
section 6). No GPU is needed: the static input indices Inductor receives
are computed by AOTAutograd the same way on every device.

A program gets an OptimizerRecorder and writes its loop in capsim's actions:

  rec.param(name, p)                new_tensor (parameter, requires_grad)
  rec.grads_from(loss)              loss.backward(); per param whose grad is
                                    now set: new_tensor gK, accumulate_grad,
                                    del gK (capsim's AccumulateGrad steals the
                                    grad when .grad was None, adds otherwise)
  rec.mark_static("w.grad", t, g)   mark_static, then mark_static_address
  rec.optimizer(name, opt, params)  create_optimizer
  rec.step(name, step)              optimizer_step: the compiled step
  rec.zero_grad(name, set_to_none)  zero_grad
  rec.drop(name)                    drop_optimizer, after the program dropped
                                    the optimizer and its compiled step

Events (`observes`: optimizer, compile, zero_grad):
  optimizer created / traced / dropped; `traced` counts the params, state
  and grads among the static inputs of the first compile of the step;
  `dropped` counts the param and state storages still alive.
  compile per Inductor compile of a step: `function` (capsim's name,
  "opt.step" or "opt.step[i, j]" by the params that have a grad) and
  `static_input_idxs` in capsim's input order (params, grads, then each
  param's state), mapped by identity from the inputs of the compiled
  graph's first call. A later compile is preceded by a `compile`
  recompile event whose reason comes from Dynamo's guard failure text.
  zero_grad with the number of grads it changed.

Inductor's FX graph cache and AOTAutograd's cache are turned off while a
program runs: with them on, 2.8.0 and 2.11.0 hand a warm-cache compile the
static indices of an earlier one (scripts/optimizer-static-inputs.py).
The hooks patch module attributes PyTorch looks up at call time, all
internal to PyTorch (README.md).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import weakref
from typing import Any, Callable, Iterator, Optional, Sequence

import torch

from .. import dtypes, torch_compat
from ..trace_writer import TraceWriter
from .fields import OBSERVES, capsim_order, optimizer_fields, write_compile_events, write_traced_event


class OptimizerRecorder:
    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.names: dict[int, str] = {}  # id(param) -> name
        self.optimizers: dict[str, tuple[Any, list[str], str]] = {}  # name -> (opt, params, kind)
        self.param_refs: dict[str, list] = {}  # optimizer -> weak references to its params
        self.state_refs: dict[str, list] = {}  # optimizer -> weak references to its state
        self.traced: set[str] = set()
        # While a step runs: the optimizer (weakly), and per Inductor compile its
        # static indices and its first call's input mapping (filled by the hooks).
        self.stepping: Optional[tuple[Any, str]] = None
        self.compiles: list[tuple[list[int], list]] = []
        self.fresh = 0
        self.notes: list[str] = []

    # -- tensors and grads ---------------------------------------------------------

    def param(self, name: str, p: torch.nn.Parameter) -> None:
        self.writer.action("new_tensor", {**dtypes.new_tensor_fields(name, p.shape, p.dtype), "parameter": True})
        self.names[id(p)] = name

    def grads_from(self, loss: torch.Tensor, params: Sequence[torch.nn.Parameter]) -> None:
        loss.backward()
        for p in params:
            if p.grad is None:
                continue
            g = f"g{self.fresh}"
            self.fresh += 1
            self.writer.action("new_tensor", dtypes.new_tensor_fields(g, p.grad.shape, p.grad.dtype))
            self.writer.action("accumulate_grad", {"param": self.names[id(p)], "grad": g})
            self.writer.action("del", {"name": g})

    def mark_static(self, name: str, t: torch.Tensor, guard: bool) -> None:
        self.writer.action("mark_static", {"name": name, "guard": bool(guard)})
        torch_compat.mark_static_address(t, guard=guard)

    # -- the optimizer -------------------------------------------------------------

    def optimizer(self, name: str, opt: torch.optim.Optimizer) -> None:
        tensors = [p for group in opt.param_groups for p in group["params"]]
        params = [self.names[id(p)] for p in tensors]
        fields = optimizer_fields(name, opt, params)
        index = self.writer.action("create_optimizer", fields)
        self.writer.event(index, "optimizer", {"name": name, "what": "created", "kind": fields["kind"],
                                               "params": len(params)})
        self.optimizers[name] = (weakref.ref(opt), params, fields["kind"])
        self.param_refs[name] = [weakref.ref(p) for p in tensors]
        self.state_refs[name] = []

    def step(self, name: str, step: Callable[[], Any]) -> None:
        guard_failures = torch_compat.guard_failures()
        index = self.writer.action("optimizer_step", {"name": name})
        ref, _, kind = self.optimizers[name]
        opt = ref()
        with_grad = [p.grad is not None for group in opt.param_groups for p in group["params"]]
        failures_before = sum(len(v) for v in guard_failures.values())
        self.stepping, self.compiles = (weakref.ref(opt), kind), []
        try:
            step()
        finally:
            self.stepping = None
        failures = [r for v in guard_failures.values() for r in v][failures_before:]
        if self.compiles and name not in self.traced:
            self.traced.add(name)
            self._traced_event(index, name, opt)
            failures = []  # the first trace is no recompile
        for k, (static, first) in enumerate(self.compiles):
            self._compile_events(index, name, with_grad, static, first, failures if k == 0 else [])
        self.compiles = []
        self.state_refs[name] = [weakref.ref(v) for state in opt.state.values()
                                 for v in state.values() if isinstance(v, torch.Tensor)]

    def _traced_event(self, index: int, name: str, opt: torch.optim.Optimizer) -> None:
        write_traced_event(self.writer, index, name, opt)

    def _compile_events(self, index: int, name: str, with_grad: list[bool], static: list[int],
                        first: list, failures: list[str]) -> None:
        if not first or first[0] is None:
            self.notes.append(f"{name}.step: a compiled graph whose inputs are not params, grads and state")
            return
        write_compile_events(self.writer, index, name, with_grad, static, first[0], failures)

    def zero_grad(self, name: str, set_to_none: bool) -> None:
        opt = self.optimizers[name][0]()
        changed = sum(1 for group in opt.param_groups for p in group["params"] if p.grad is not None)
        index = self.writer.action("zero_grad", {"name": name, "set_to_none": bool(set_to_none)})
        opt.zero_grad(set_to_none=set_to_none)
        self.writer.event(index, "zero_grad", {"name": name, "set_to_none": bool(set_to_none),
                                               "grads": changed})

    def drop(self, name: str) -> None:
        """After the program dropped its references to the optimizer and its
        compiled step: how many of its params and state tensors still live."""
        del self.optimizers[name]
        index = self.writer.action("drop_optimizer", {"name": name})
        gc.collect()
        alive = lambda refs: sum(1 for r in refs if r() is not None)  # noqa: E731
        self.writer.event(index, "optimizer", {
            "name": name, "what": "dropped",
            "params_alive": alive(self.param_refs.pop(name)),
            "state_alive": alive(self.state_refs.pop(name)),
        })


@contextlib.contextmanager
def inductor_hooks(on_compiled: Callable[[list[int]], Callable[[Any], None]]) -> Iterator[None]:
    """While the block runs: `on_compiled(static_input_idxs)` at each Inductor
    compile (what cudagraphify would get), and the callable it returns before
    each call of that compiled graph, with the call's inputs. Inductor's FX
    graph cache and AOTAutograd's cache are off (see the module's docstring)."""
    compiled_fx_graph = torch_compat.compiled_fx_graph()
    original = compiled_fx_graph.post_compile

    @functools.wraps(original)
    def post_compile(self, example_inputs, *args, **kwargs):
        result = original(self, example_inputs, *args, **kwargs)
        on_call = on_compiled(list(self.fx_kwargs.get("static_input_idxs") or ()))
        current = self.current_callable

        def call(inputs):
            on_call(inputs)
            return current(inputs)

        self.current_callable = call
        return result

    compiled_fx_graph.post_compile = post_compile
    patches = torch_compat.cache_off_settings()
    saved = [(owner, key, getattr(owner, key)) for owner, key, _ in patches]
    for owner, key, value in patches:
        setattr(owner, key, value)
    try:
        yield
    finally:
        compiled_fx_graph.post_compile = original
        for owner, key, value in saved:
            setattr(owner, key, value)


def compile_hooks(rec: OptimizerRecorder):
    """Each Inductor compile while a program runs: its static input indices
    and the capsim order of its first call's inputs (ints only: no references
    to the inputs are kept)."""
    def on_compiled(static: list[int]) -> Callable[[Any], None]:
        first: list = []
        rec.compiles.append((static, first))
        stepping = rec.stepping

        def on_call(inputs: Any) -> None:
            opt = stepping[0]() if stepping is not None else None
            if not first and opt is not None:
                first.append(capsim_order(opt, stepping[1], inputs))

        return on_call

    return inductor_hooks(on_compiled)


def record_optimizer_program(program: Any, path: str) -> int:
    """Runs one compiled-optimizer program into the trace at `path`; returns
    the number of Inductor compiles it saw. On an exception no partial trace
    is left (a file already at `path` stays as it was)."""
    from ..recorder import COMMAND, PRODUCER, SEED, release, reset_torch_state, torch_config

    reset_torch_state(SEED)
    with TraceWriter(path) as writer:
        extensions = {
            "x_torch_version": torch.__version__,
            "x_device": "cpu",
            "x_command": COMMAND.format(release=release(), name=program.name),
        }
        missing = torch_compat.announce((torch_compat.OPTIMIZER,))
        if missing:
            extensions["x_notes"] = missing
        writer.header(producer=PRODUCER, name=program.name, seed=SEED, config=torch_config(),
                      observes=OBSERVES, extensions=extensions)
        rec = OptimizerRecorder(writer)
        with compile_hooks(rec):
            program.run(rec)
        if rec.notes:
            raise RuntimeError(f"{program.name}: " + "; ".join(dict.fromkeys(rec.notes)))
    return len(rec.traced)
