"""Reads of compiled graphs' outputs by the script's own eager code, for
record(cudagraphs=True) (launcher/cudagraphs.py).

Reading an output of a cudagraphed call after a later generation has
overwritten it is the error capsim calls E1 (docs/cudagraph-trees.md). A
script reads outputs outside any compiled region: `loss.item()`, `print(out)`,
`torch.stack(losses)`. Each such read is written as capsim's `read` action, so
that capsim can say whether it comes too late; on a CPU, where no CUDA graph
is made, `capsim explain --as-on-a-gpu` then predicts the E1 a GPU would raise.

The reads are seen through a TorchDispatchMode that asks to be left out of
compilation (`ignore_compile_internals`, PyTorch 2.11 on): Dynamo still
compiles under it, and it sees the eager aten ops the script runs. On a
release without that hook a pushed mode would make Dynamo skip compiling, so
nothing is watched there (`supported()`). Only outputs of compiled graphs
that are still bound in the trace are read (a backward's grads are not: its
accumulate_grad actions took them); ops inside a compiled graph's call,
inside a recorded backward, run by PyTorch's own machinery (`is_script`) or
after the recording closed are not the script's. One `read` per name between
two graph calls: the first access is the one that raises.

An output is found by identity, or by its memory and layout, so a
`detach()` of it (AOTAutograd's own, or the script's `kept.append(out.detach())`)
is the output too. Not followed: a view of another shape or offset made
outside the compiled region (`out[0]`, `out.flatten()`) and read later.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch

from .. import torch_compat

# Modules between an op's caller and __torch_dispatch__ (torch_compat's
# DISPATCH_MACHINERY, and this one): the caller is the first frame above them.
_MACHINERY = torch_compat.DISPATCH_MACHINERY + (__name__,)

# PyTorch's own machinery (torch_compat.TORCH_INTERNALS): what they run is not
# the script's read (AOTAutograd's runtime wrappers, the autograd engine's
# Python half, an optimizer's step, the tree manager, Dynamo and Inductor).
# Everything else of torch (torch.nn, torch.functional, Tensor's own methods,
# its printing) runs an op for its caller, and counts as the script.
_TORCH_INTERNALS = torch_compat.TORCH_INTERNALS
# The corpus's launcher programs play the script's part.
SCRIPT_STAND_INS = ("capsim_recorder.launcher.programs",)


def op_caller(frame: Any) -> str:
    """The module whose code ran the op being dispatched (from `frame`
    outwards); "" when only the dispatch machinery is on the stack."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module not in _MACHINERY:
            return module
        frame = frame.f_back
    return ""


def is_script(module: str) -> bool:
    """Whether an op run by `module` is the script's, directly or through
    PyTorch's user-facing code: not PyTorch's internals nor the recorder's
    (the corpus's launcher programs play the script's part)."""
    if module in SCRIPT_STAND_INS:
        return True
    if module in ("", "capsim_recorder") or module.startswith("capsim_recorder."):
        return False
    return not any(module == p or module.startswith(p + ".") for p in _TORCH_INTERNALS)


def supported() -> bool:
    """Whether a mode can watch without changing what Dynamo compiles."""
    return torch_compat.reads_supported()


class ReadWatch(torch_compat.dispatch_mode_class()):
    """Calls `on_tensors(func, tensors)` with the tensor arguments of every
    aten op the script runs while it is pushed, then runs the op."""

    def __init__(self, on_tensors: Callable[[Any, list], None]) -> None:
        super().__init__()
        self.on_tensors = on_tensors

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            tensors = [t for t in torch_compat.tree_leaves((args, kwargs))
                       if isinstance(t, torch.Tensor)]
            if tensors and is_script(op_caller(sys._getframe(1))):
                self.on_tensors(func, tensors)
        except Exception:  # the recorder's part only: the op runs whatever it did
            pass
        return func(*args, **kwargs)


def pop_or_mute(watch: ReadWatch) -> None:
    """Takes `watch` off the dispatch mode stack when it is on top; under a
    mode the script pushed since (a recording stopped by a limit inside the
    script's own `with SomeMode():`), popping would take the script's mode
    instead, so `watch` stays and stops watching."""
    watch.on_tensors = lambda func, tensors: None
    if torch_compat.current_dispatch_mode() is watch:
        watch.__exit__(None, None, None)
