"""Names for the script's objects, from the script's own frames: a
parameter is named after the nn.Module attribute that holds it
(`model_0_weight`), an optimizer after the variable that holds it. Used by
record()'s optimizer watch (optimizer.py) and the cudagraph form
(cudagraphs.py).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

# The corpus's launcher programs play the script's part.
SCRIPT_STAND_INS = ("capsim_recorder.launcher.programs",)


def script_frames(frame: Any) -> list[Any]:
    """The frames from `frame` outwards, torch's and the recorder's left out."""
    out = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        # (The recorder's own frames lie between a wrap and the script; the
        # corpus's launcher programs play the script's part.)
        own = module in ("torch", "capsim_recorder") or module.startswith(("torch.", "capsim_recorder."))
        if not own or module in SCRIPT_STAND_INS:
            out.append(frame)
        frame = frame.f_back
    return out


def namespaces(frame: Any) -> list[dict]:
    seen: set[int] = set()
    out = []
    for f in script_frames(frame):
        for ns in (f.f_locals, f.f_globals):
            if id(ns) not in seen:
                seen.add(id(ns))
                out.append(ns)
    return out


def param_name(var: str, path: str) -> str:
    """A parameter's name in the trace: the variable that holds its module
    and the parameter's path in it, with torch.compile's wrapper
    (`_orig_mod.`) left out, so that a compiled model's parameter has the
    name it has uncompiled, and no `self_` when only a method's `self` holds
    it (`model_0_weight`, `fc_weight`). capsim names have no dots."""
    parts = [part for part in path.split(".") if part != "_orig_mod"]
    if var != "self":
        parts.insert(0, var)
    return "_".join(parts) or var


def module_names(frame: Any) -> dict[int, str]:
    """id(param) -> param_name(var, path) for the nn.Modules the script's
    frames hold, innermost frame first; a method's `self` only where no
    other variable holds the module."""
    names: dict[int, str] = {}
    spaces = namespaces(frame)
    for selves in (False, True):
        for ns in spaces:
            for var, value in list(ns.items()):
                if not isinstance(value, torch.nn.Module) or var.startswith("_"):
                    continue
                if (var == "self") != selves:
                    continue
                for pname, p in value.named_parameters():
                    names.setdefault(id(p), param_name(var, pname))
    return names


def variable_name(obj: Any, frame: Any) -> Optional[str]:
    """The variable that holds `obj` in the script's frames (a method's
    `self` only where no other does)."""
    spaces = namespaces(frame)
    for selves in (False, True):
        for ns in spaces:
            for var, value in list(ns.items()):
                if value is obj and not var.startswith("_") and (var == "self") == selves:
                    return var
    return None
