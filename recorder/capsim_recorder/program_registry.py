"""The one registry of the recorder's built-in programs, of every kind: each
program module registers its programs here (`program`), and the command
line picks them by kind and records each as its kind says
(program_runs.py).

  autograd   programs.py: compiled autograd, each backward through rec.backward
  optimizer  optimizer/programs.py: the compiled optimizer on the CPU
  launcher   launcher/programs.py: plain PyTorch under record(), no recorder calls
  cudagraph  cudagraph/programs.py: the cudagraph trees (`--cudagraphs`)

A name is unique among the kinds recorded together (a CPU program and a
cudagraph one may share one: their traces live in different corpora). No
torch import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

KINDS = ("autograd", "optimizer", "launcher", "cudagraph")
# What `python -m capsim_recorder` records, and what `--cudagraphs` does.
CPU_KINDS = ("autograd", "optimizer", "launcher")
CUDAGRAPH_KINDS = ("cudagraph",)


@dataclass(frozen=True)
class Program:
    """One registered program. `run` takes the kind's recorder (none for a
    launcher program, which runs as a plain script)."""

    name: str
    kind: str
    run: Callable[..., None]
    description: str
    # launcher: recorded as `run --cudagraphs` records a script.
    cudagraphs: bool = False
    # cudagraph: torch._inductor.config settings for this program only
    # (written to the header as x_inductor_config); None: PyTorch's defaults.
    inductor_config: Optional[dict] = None


_PROGRAMS: list[Program] = []


def program(kind: str, description: str, *, prefix: str = "", **options: Any):
    """A decorator registering a program function of `kind` under its own
    name after `prefix`; `options`: Program's kind-specific fields."""
    assert kind in KINDS, kind

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        _PROGRAMS.append(Program(prefix + fn.__name__, kind, fn, description, **options))
        return fn

    return register


def programs(kinds: Sequence[str]) -> dict[str, Program]:
    """The registered programs of `kinds` (their modules imported), by name,
    in the order of KINDS, then of registration."""
    chosen = sorted((p for p in _PROGRAMS if p.kind in kinds), key=lambda p: KINDS.index(p.kind))
    out: dict[str, Program] = {}
    for p in chosen:
        assert p.name not in out, f"two programs named {p.name}"
        out[p.name] = p
    return out
