"""The compiled optimizer in capsim's vocabulary, shared by the CPU programs
(optimizer/recorder.py), record()'s optimizer watch (launcher/optimizer.py)
and the cudagraph half (cudagraph/program_api.py, launcher/cudagraphs.py):
a torch.optim optimizer's create_optimizer fields, the map from a compiled
step's inputs to capsim's input order (params, grads, then each param's
state), and the step's `optimizer traced` and `compile` events.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from .. import aten_translate, torch_compat
from ..trace_writer import TraceWriter

OBSERVES = ["optimizer", "compile", "zero_grad"]
STATE_KEYS = {"sgd": ["momentum_buffer"], "adam": ["exp_avg", "exp_avg_sq", "step"],
              "adamw": ["exp_avg", "exp_avg_sq", "step"]}


def optimizer_fields(name: str, opt: torch.optim.Optimizer, params: Sequence[str]) -> dict:
    """A create_optimizer action's fields for a torch.optim optimizer."""
    kind = type(opt).__name__.lower()
    d = opt.defaults
    fields: dict = {"name": name, "kind": kind, "params": list(params)}
    if kind == "sgd":
        fields["sgd"] = {
            "lr": aten_translate.f32(float(d["lr"])),
            "momentum": aten_translate.f32(float(d.get("momentum", 0.0))),
            "dampening": aten_translate.f32(float(d.get("dampening", 0.0))),
            "weight_decay": aten_translate.f32(float(d.get("weight_decay", 0.0))),
            "nesterov": bool(d.get("nesterov", False)),
        }
    elif kind in ("adam", "adamw"):
        beta1, beta2 = d["betas"]
        fields["adam"] = {
            "lr": aten_translate.f32(float(d["lr"])),
            "beta1": aten_translate.f32(float(beta1)),
            "beta2": aten_translate.f32(float(beta2)),
            "eps": aten_translate.f32(float(d["eps"])),
            "weight_decay": aten_translate.f32(float(d.get("weight_decay", 0.0))),
        }
    else:
        raise ValueError(f"capsim has no optimizer kind {kind!r}")
    return fields


def recompile_reason(failures: Sequence[str]) -> str:
    """capsim's reason for Dynamo's guard failure text of a recompiled step:
    a `p.grad is None` guard, the guard on the state's length, or another."""
    text = " ".join(failures)
    if ".grad is " in text:
        return "grad_none_guard"
    if "self.state[" in text:
        return "optimizer_state_guard"
    return "guard_failure"


def capsim_order(opt: torch.optim.Optimizer, kind: str, inputs: Sequence[Any]) -> Optional[dict[int, int]]:
    """Inductor input position -> capsim's input index (params with a grad,
    their grads, then each one's state in STATE_KEYS order), by identity;
    None when some tensor input is none of those."""
    params = [p for group in opt.param_groups for p in group["params"] if p.grad is not None]
    n = len(params)
    where: dict[int, int] = {}
    next_state = 2 * n
    for i, p in enumerate(params):
        where[id(p)] = i
        where[id(p.grad)] = n + i
        state = opt.state.get(p, {})
        for key in STATE_KEYS[kind]:
            s = state.get(key)
            if isinstance(s, torch.Tensor):
                where[id(s)] = next_state
                next_state += 1
    mapping: dict[int, int] = {}
    for pos, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            continue
        if id(t) not in where:
            return None
        mapping[pos] = where[id(t)]
    return mapping


def write_traced_event(writer: TraceWriter, index: int, name: str, opt: torch.optim.Optimizer) -> None:
    """The `traced` event of a step's first compile: what it marked static
    (mark_static_address's attribute): every param, the state it found, the
    grads the program marked."""
    get_static_address_type = torch_compat.static_address_type
    params = [p for group in opt.param_groups for p in group["params"]]
    state = [v for p in params for v in opt.state.get(p, {}).values() if isinstance(v, torch.Tensor)]
    grads = [p.grad for p in params if p.grad is not None]
    marked = lambda ts: sum(1 for t in ts if get_static_address_type(t) is not None)  # noqa: E731
    writer.event(index, "optimizer", {"name": name, "what": "traced",
                                      "static_params": marked(params),
                                      "static_state": marked(state),
                                      "static_grads": marked(grads)})


def write_compile_events(writer: TraceWriter, index: int, name: str, with_grad: Sequence[bool],
                         static: Sequence[int], mapping: dict[int, int],
                         failures: Sequence[str]) -> None:
    """A step's compile event (after a recompile event when Dynamo's guards
    failed first): `function` names the params with a grad, and the static
    indices are in capsim's input order through `mapping`."""
    fields = step_compile_fields(name, with_grad, static, mapping)
    if failures:
        recompile: dict[str, Any] = {"function": fields["function"], "recompile": True,
                                     "reason": recompile_reason(failures)}
        if recompile["reason"] == "guard_failure":
            recompile["x_guard_failures"] = list(failures)
        writer.event(index, "compile", recompile)
    writer.event(index, "compile", fields)


def step_compile_fields(name: str, with_grad: Sequence[bool], static: Sequence[int],
                        mapping: dict[int, int]) -> dict:
    """A step's compile event: when some params have no grad, `step_params`
    says which have one (what capsim explain reads) and `function` names them
    for people; the static indices are in capsim's input order."""
    kept = [i for i, g in enumerate(with_grad) if g]
    fields: dict[str, Any] = {"function": f"{name}.step",
                              "static_input_idxs": sorted(mapping[i] for i in static if i in mapping)}
    if len(kept) != len(with_grad):
        fields["function"] = f"{name}.step[{', '.join(str(i) for i in kept)}]"
        fields["step_params"] = kept
    return fields
