"""Whose an exception is, for record()'s two forms (launcher/session.py,
cudagraphs.py): the recorder's own failures become notes and never reach
the script; the script's own exceptions (and PyTorch's, raised for the
script) pass through unchanged; only PyTorch's cudagraph code's become a
cudagraph trace's `error` events.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator

from .. import torch_compat
from .patching import called_by_torch

# The failures said on stderr one by one; later ones are counted at the end.
MAX_STDERR_NOTES = 20


def why(e: BaseException) -> str:
    """`Type: first line of the message` (at most 300 characters)."""
    text = str(e).splitlines()[0][:300] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def say(text: str, said: int) -> int:
    """One line on stderr for a note, while fewer than MAX_STDERR_NOTES
    were said; returns the new count."""
    if said < MAX_STDERR_NOTES:
        print(f"capsim_recorder: {text}", file=sys.stderr, flush=True)
    return said + 1


def frames(e: BaseException) -> Iterator[Any]:
    """The frames of e's traceback, outermost first."""
    tb = e.__traceback__
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _module(frame: Any) -> str:
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def _recorders(module: str) -> bool:
    return module == "capsim_recorder" or module.startswith("capsim_recorder.")


def script_frame(e: BaseException) -> Any:
    """The innermost frame of e's traceback that is neither torch's nor the
    recorder's (nor runpy's, which runs the script), or None."""
    inner = None
    for frame in frames(e):
        module = _module(frame)
        if not called_by_torch(frame) and not _recorders(module) and module != "runpy":
            inner = frame
    return inner


def raised_by_script(e: BaseException) -> bool:
    """Whether the innermost Python frame that raised `e` is the script's
    (not torch's, not the recorder's): a hook of its own, say."""
    inner = None
    for frame in frames(e):
        inner = frame
    if inner is None:
        return False
    return not _recorders(_module(inner)) and not called_by_torch(inner)


def raised_by_cudagraphs(e: BaseException) -> bool:
    """Whether PyTorch's cudagraph code (the tree manager, its utilities)
    is on e's traceback."""
    return any(_module(frame) in torch_compat.CUDAGRAPH_MODULES for frame in frames(e))
