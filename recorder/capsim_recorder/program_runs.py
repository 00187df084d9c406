"""The built-in programs recorded, one dispatch on their kind
(program_registry.py): `load` imports the modules that register the
programs of some kinds, `record` records one program into its trace as its
kind says and prints its line. Each kind's own recorder lives with its
programs' half; this module only joins them, and imports them (and torch)
when a program of theirs is recorded.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Optional, Sequence

from . import program_registry
from .program_registry import Program

# Where each kind's programs register themselves (relative to the package).
MODULES = {
    "autograd": ".programs",
    "optimizer": ".optimizer.programs",
    "launcher": ".launcher.programs",
    "cudagraph": ".cudagraph.programs",
}


def load(kinds: Sequence[str]) -> dict[str, Program]:
    """The programs of `kinds`, by name (program_registry.programs)."""
    for kind in kinds:
        importlib.import_module(MODULES[kind], __package__)
    return program_registry.programs(kinds)


def _autograd(program: Program, path: str, **_: Any) -> bool:
    from .recorder import record_program

    backwards, captures = record_program(program, path)
    print(f"{program.name}: {backwards} backwards, {captures} captures -> {path}")
    return True


def _optimizer(program: Program, path: str, **_: Any) -> bool:
    from .optimizer.recorder import record_optimizer_program

    record_optimizer_program(program, path)
    print(f"{program.name}: compiled optimizer -> {path}")
    return True


def _launcher(program: Program, path: str, **_: Any) -> bool:
    from .launcher.programs import record_launcher_program
    from .recorder import release

    backwards = record_launcher_program(program, path, release())
    print(f"{program.name}: {backwards} backwards, under record() -> {path}")
    return True


def _cudagraph(program: Program, path: str, *, device: str, timeout_s: Optional[int],
               summary_path: Optional[str]) -> bool:
    from .cudagraph.runner import record_one

    return record_one(program, path, device, timeout_s, summary_path)


RECORDERS: dict[str, Callable[..., bool]] = {
    "autograd": _autograd,
    "optimizer": _optimizer,
    "launcher": _launcher,
    "cudagraph": _cudagraph,
}


def record(program: Program, path: str, *, device: str = "cuda", timeout_s: Optional[int] = None,
           summary_path: Optional[str] = None) -> bool:
    """Records `program` into the trace at `path`; whether it recorded
    cleanly. A CPU kind's failure raises; a cudagraph program's is its line
    (`device`, `timeout_s` and `summary_path` are for those)."""
    return RECORDERS[program.kind](program, path, device=device, timeout_s=timeout_s,
                                   summary_path=summary_path)
