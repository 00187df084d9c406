"""What a script's plain statements become in a cudagraph recording
(record(cudagraphs=True); cudagraphs.py holds the recording): the wraps
(wraps.py, through the recording, their sink) report each statement here,
and this turns it into the program API's actions (cudagraph/program_api.py),
as the built-in programs state them by hand:

  an nn.Parameter, first seen as an optimizer's or a compiled graph's
      new_tensor parameter=true, named after the nn.Module attribute that
      holds it in a frame of the script (`model_0_weight`), else `p<k>`
  any other tensor a compiled graph receives
      new_tensor `t<k>` (the session's own rule)
  torch.optim SGD, Adam, AdamW made         create_optimizer
  a compiled graph that steps one           optimizer_step (its first call finds it)
  opt.zero_grad(set_to_none=...)            zero_grad (an optimizer made above)
  model.zero_grad(set_to_none=...), p.grad = None, opt.zero_grad(...) of any other
      optimizer (Adadelta, ...)             clear_grads (the module's or optimizer's
                                            variable, or p's name; its parameters)
  torch._dynamo.mark_static_address(t)      mark_static
  torch.compiler.cudagraph_mark_step_begin  mark_step_begin
  an op of the script reading a compiled output
                                            read (reads.py)
  an exception out of the script            an error event (PyTorch's text) when
                                            PyTorch's cudagraph code raised it, else
                                            a note; it goes on to the script unchanged
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any, Optional

import torch

from ..cudagraph.session import uniform_fill
from ..optimizer.fields import STATE_KEYS, capsim_order, step_compile_fields
from .failures import raised_by_cudagraphs, script_frame, why
from .optimizer import optimizer_params, reads_a_grad
from .params import MAX_PARAMS
from .script_names import module_names, variable_name


class ScriptStatements:
    """The statements of one recording's script (`recording`: the
    CudagraphRecording, for its session, program API and limits)."""

    def __init__(self, recording: Any) -> None:
        self.recording = recording
        self.session = recording.session
        self.rec = recording.rec
        self.optimizer_refs: list[tuple[Any, str, str]] = []  # (weakref, name in the trace, kind)
        self.stepped: set[str] = set()  # optimizers whose step graph was found
        self.names: set[str] = set()
        self.read_since_call: set[str] = set()  # names read since the last graph call
        self.clearing = False  # inside a grad clear the trace has: PyTorch's own part passes

    # -- names ---------------------------------------------------------------

    def unique(self, name: str) -> str:
        base, n = name, 2
        while name in self.names or name in self.session.registry.names:
            name = f"{base}{n}"
            n += 1
        self.names.add(name)
        return name

    def name_parameter(self, t: Any) -> Optional[str]:
        """The session's on_unnamed: an nn.Parameter becomes a parameter of
        the trace; anything else is left to the session (`t<k>`)."""
        if not isinstance(t, torch.nn.Parameter):
            return None
        return self.new_parameter(t, module_names(sys._getframe(1)))

    def new_parameter(self, p: Any, names: dict[int, str]) -> str:
        """`p`'s new_tensor parameter=true, named after the module attribute
        that holds it (`names`: script_names.module_names)."""
        return self.rec.param(self.unique(names.get(id(p)) or "p"), p)

    # -- what the wraps report -------------------------------------------------

    def reads(self, func: Any, tensors: list) -> None:
        """The script's op `func` read `tensors`: a `read` of each that is a
        bound output of a compiled graph, once between two graph calls
        (reads.py). Not inside a graph's call or a backward."""
        s = self.session
        r = self.recording
        if not r.live() or r.busy or s.closed or getattr(s.tls, "tree_runs", None) is not None:
            return
        for t in tensors:
            # (By memory and layout too: AOTAutograd's wrappers hand the
            # script a detached alias of the graph's output, not the object;
            # a view of another shape or offset, `out[0]`, by its storage:
            # on a GPU reading it reads the output's memory.)
            found = s.registry.entries(t) or s.registry.outputs_sharing_storage(t)
            for e in found:
                if e.kind == "output" and not e.dropped and e.name not in self.read_since_call:
                    self.read_since_call.add(e.name)
                    s.action("read", {"name": e.name}, note=f"read {e.name}")

    def created(self, opt: Any, frame: Any) -> None:
        kind = type(opt).__name__.lower()
        if kind not in STATE_KEYS:
            self.recording.skip(f"{type(opt).__name__} optimizers (capsim models SGD, Adam, AdamW)")
            return
        names = module_names(frame)
        params = []
        for p in optimizer_params(opt):
            params.append(self.session.registry.lookup(p) or self.new_parameter(p, names))
        opt_name = self.unique(variable_name(opt, frame) or "opt")
        self.rec.create_optimizer(opt_name, opt, params)
        self.optimizer_refs.append((weakref.ref(opt), opt_name, kind))

    def _find_step(self, g: Any, inputs: Any) -> Optional[dict]:
        """Whether `g` (at its first call) is a followed optimizer's step:
        then made one, and its compile event's fields returned."""
        for ref, name, kind in self.optimizer_refs:
            opt = ref()
            mapping = capsim_order(opt, kind, inputs) if opt is not None else None
            if not mapping or not reads_a_grad(opt, mapping):
                continue
            if name in self.stepped:
                self.session.notes.append(f"{name}: a second graph of its step (a graph break?),"
                                          f" written as a graph of its own")
                return None
            self.stepped.add(name)
            self.session.make_step(g, name)
            with_grad = [p.grad is not None for p in optimizer_params(opt)]
            return step_compile_fields(name, with_grad, g.static_input_idxs, mapping)
        return None

    def graph_call(self, g: Any, inputs: Any) -> None:
        """The session's on_graph_call. A graph whose first call takes one
        followed optimizer's params, grads and state (by identity, as
        optimizer.py finds steps), and reads a grad, is its compiled step:
        capsim's optimizer_step, once per call."""
        self.read_since_call.clear()
        compile_event = None
        if g.calls == 0 and g.builtin is None and g.mode != "backward":
            compile_event = self._find_step(g, inputs)
        if g.builtin is not None:  # (only make_step sets it in this form)
            self.session.action("optimizer_step", {"name": g.builtin})
            if compile_event is not None and not g.cudagraphed:
                # A tree announces the step's compile when it binds the graph
                # (cudagraph/manager_wraps.py); a graph no tree takes has only this.
                self.session.event("compile", compile_event)

    def follows(self, opt: Any) -> bool:
        """Whether `opt` is in the trace (create_optimizer): its zero_grad is
        then zero_grad, any other optimizer's a grad clear."""
        return any(ref() is opt for ref, _name, _kind in self.optimizer_refs)

    def zero_grad(self, opt: Any, set_to_none: bool) -> None:
        name = next((n for ref, n, _kind in self.optimizer_refs if ref() is opt), None)
        if name is not None:
            self.session.action("zero_grad", {"name": name, "set_to_none": bool(set_to_none)})

    def param_name(self, p: Any, names: dict[int, str]) -> str:
        """p's name as a parameter of the trace (new_tensor parameter=true
        the first time)."""
        found = [e.name for e in self.session.registry.entries(p) if e.kind == "param"]
        return found[0] if found else self.new_parameter(p, names)

    def clear_grads(self, module: Any, params: list, set_to_none: bool, frame: Any) -> None:
        """`module.zero_grad(set_to_none)` or an optimizer's
        `opt.zero_grad(set_to_none)` (`module`: the module or optimizer,
        named after its variable), or `p.grad = None` (module None: named
        after p):
        clear_grads, one per MAX_PARAMS parameters (no event: this form
        observes the tree manager's kinds only)."""
        names = module_names(frame)
        param_names = [self.param_name(p, names) for p in params]
        if module is None:
            name = param_names[0]
        else:
            name = variable_name(module, frame) or type(module).__name__
        for k in range(0, max(1, len(params)), MAX_PARAMS):
            self.session.action("clear_grads", {"name": name,
                                                "params": param_names[k:k + MAX_PARAMS],
                                                "set_to_none": bool(set_to_none)})

    def reassigned(self, p: Any, new: Any, frame: Any) -> None:
        """The script's `p.data = new` (same sizes and dtype): reassign_data,
        with `new`'s fill when it is uniform (else capsim draws values)."""
        fields: dict = {"name": self.param_name(p, module_names(frame))}
        fill = uniform_fill(new)
        if fill is not None:
            fields["fill"] = fill
        self.session.action("reassign_data", fields)

    def marked(self, t: Any, guard: bool) -> None:
        fields: dict = {"name": self.session.name_of(t)}
        if guard:
            fields["guard"] = True
        self.session.action("mark_static", fields)

    def step_begin(self) -> None:
        self.session.action("mark_step_begin", {})

    def raised(self, e: BaseException) -> None:
        """The script raised `e`. An exception of PyTorch's cudagraph code
        (on its traceback, or one the observer classifies: E1, E3, E4, A1)
        is an error event with PyTorch's text; any other (the script's own,
        or PyTorch's outside the cudagraph code, say a torch.load that
        fails) is a note with its type and message, since capsim's model
        has nothing to compare it with."""
        r = self.recording
        try:
            observer = r.driver.observer
            classified = observer is not None and "id" in observer.error_fields(e, None)
            if classified or raised_by_cudagraphs(e):
                self.rec.record_error(e)
                self.session.program_error = (type(e).__name__, str(e))
                return
            where = script_frame(e)
            at = f" at {os.path.basename(where.f_code.co_filename)}:{where.f_lineno}" if where else ""
            self.session.notes.append(f"the script raised {why(e)}{at}")
        except Exception as failure:  # the recorder's own: the script's exception goes on
            r.note(f"the script's exception could not be recorded ({why(failure)})")
