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


def module_names(frame: Any) -> dict[int, str]:
    """id(param) -> `var_path_to_param` for the nn.Modules the script's frames
    hold, innermost frame first (capsim names have no dots)."""
    names: dict[int, str] = {}
    for ns in namespaces(frame):
        for var, value in list(ns.items()):
            if isinstance(value, torch.nn.Module) and not var.startswith("_"):
                for pname, p in value.named_parameters():
                    names.setdefault(id(p), f"{var}_{pname}".replace(".", "_"))
    return names


def variable_name(obj: Any, frame: Any) -> Optional[str]:
    for ns in namespaces(frame):
        for var, value in list(ns.items()):
            if value is obj and not var.startswith("_"):
                return var
    return None
