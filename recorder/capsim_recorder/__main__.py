"""Command line: python -m capsim_recorder --out DIR [--program NAME ...] [--list].

`python -m capsim_recorder run -o TRACE [--max-steps N] [--max-bytes B]
[--static-shapes] -- SCRIPT [ARGS...]` records any script instead (launcher/command.py).

Records each chosen program (all by default) into DIR/NAME.jsonl, one process
for all of them; each program starts from reset Dynamo state and seed 0, so a
program's trace is the same whether it runs alone or with the others.

With --cudagraphs it records the cudagraph-tree programs instead
(cudagraph/programs.py; a CUDA device, or --device cpu to check the recorder
without cudagraphs), with a per-program --timeout and a --summary file that
gets one line per program as it ends.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        from .launcher.command import run_command

        return run_command(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m capsim_recorder",
        description="Record small real PyTorch programs as capsim traces.",
    )
    parser.add_argument("--out", help="directory for NAME.jsonl (created if missing)")
    parser.add_argument(
        "--program", action="append", metavar="NAME",
        help="record only this program (repeatable); default: all",
    )
    parser.add_argument("--list", action="store_true", help="list the programs and exit")
    parser.add_argument(
        "--cudagraphs", action="store_true",
        help="the cudagraph-tree programs (mode='reduce-overhead', GPU) instead of the CPU ones",
    )
    parser.add_argument("--device", default="cuda", help="with --cudagraphs: cuda (default) or cpu")
    parser.add_argument("--timeout", type=int, default=60, help="with --cudagraphs: seconds per program")
    parser.add_argument("--summary", help="with --cudagraphs: append one line per program to this file")
    args = parser.parse_args(argv)

    if args.cudagraphs:
        return _cudagraphs(parser, args)

    # torch is imported late so that --help works without it.
    from .launcher.programs import PROGRAMS as LAUNCHER_PROGRAMS
    from .optimizer.programs import PROGRAMS as OPTIMIZER_PROGRAMS
    from .programs import PROGRAMS

    names = _select(parser, args, {**PROGRAMS, **OPTIMIZER_PROGRAMS, **LAUNCHER_PROGRAMS},
                    "--list")
    if names is None:
        return 0

    from .optimizer.recorder import record_optimizer_program
    from .launcher.programs import record_launcher_program
    from .recorder import record_program, release

    os.makedirs(args.out, exist_ok=True)
    for name in names:
        path = os.path.join(args.out, f"{name}.jsonl")
        if name in OPTIMIZER_PROGRAMS:
            record_optimizer_program(OPTIMIZER_PROGRAMS[name], path)
            print(f"{name}: compiled optimizer -> {path}")
            continue
        if name in LAUNCHER_PROGRAMS:
            backwards = record_launcher_program(LAUNCHER_PROGRAMS[name], path, release())
            print(f"{name}: {backwards} backwards, under record() -> {path}")
            continue
        backwards, captures = record_program(PROGRAMS[name], path)
        print(f"{name}: {backwards} backwards, {captures} captures -> {path}")
    return 0


def _select(parser: argparse.ArgumentParser, args: argparse.Namespace, programs: dict,
            list_flags: str) -> list | None:
    """The programs to record; None after printing them for --list."""
    if args.list:
        for prog in programs.values():
            print(f"{prog.name:28} {prog.description}")
        return None
    if not args.out:
        parser.error("--out DIR is required (or --list)")
    names = args.program or list(programs)
    unknown = [n for n in names if n not in programs]
    if unknown:
        parser.error(f"unknown program(s): {', '.join(unknown)} (see {list_flags})")
    return names


def _cudagraphs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .cudagraph.programs import PROGRAMS

    names = _select(parser, args, PROGRAMS, "--cudagraphs --list")
    if names is None:
        return 0
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("capsim_recorder: --cudagraphs needs a CUDA device (torch.cuda.is_available() is False)",
              file=sys.stderr)
        return 77
    from .cudagraph.runner import record_all

    bad = record_all(PROGRAMS, names, args.out, args.device, args.timeout, args.summary)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
