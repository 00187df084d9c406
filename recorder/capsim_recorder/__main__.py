"""Command line: python -m capsim_recorder --out DIR [--program NAME ...] [--list].

`python -m capsim_recorder run -o TRACE [--max-steps N] [--max-bytes B]
[--static-shapes] -- SCRIPT [ARGS...]` records any script instead (launcher/command.py).

Records each chosen program (all by default; program_registry.py, recorded
as its kind says: program_runs.py) into DIR/NAME.jsonl, one process
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

    # torch is imported late (with the programs) so that --help works without it.
    from . import program_runs
    from .program_registry import CPU_KINDS, CUDAGRAPH_KINDS

    programs = program_runs.load(CUDAGRAPH_KINDS if args.cudagraphs else CPU_KINDS)
    names = _select(parser, args, programs, "--cudagraphs --list" if args.cudagraphs else "--list")
    if names is None:
        return 0
    if args.cudagraphs and not _has_device(args.device):
        return 77
    os.makedirs(args.out, exist_ok=True)
    bad = 0
    for name in names:
        path = os.path.join(args.out, f"{name}.jsonl")
        ok = program_runs.record(programs[name], path, device=args.device, timeout_s=args.timeout,
                                 summary_path=args.summary)
        bad += not ok
    return 1 if bad else 0


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


def _has_device(device: str) -> bool:
    """Whether --cudagraphs' device is there (a CUDA one needs a GPU)."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        print("capsim_recorder: --cudagraphs needs a CUDA device (torch.cuda.is_available() is False)",
              file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
