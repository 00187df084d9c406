"""Command line: python -m capsim_recorder --out DIR [--program NAME ...] [--list].

Records each chosen program (all by default) into DIR/NAME.jsonl, one process
for all of them; each program starts from reset Dynamo state and seed 0, so a
program's trace is the same whether it runs alone or with the others.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)

    # torch is imported late so that --help works without it.
    from .programs import PROGRAMS

    if args.list:
        for prog in PROGRAMS.values():
            print(f"{prog.name:28} {prog.description}")
        return 0
    if not args.out:
        parser.error("--out DIR is required (or --list)")
    names = args.program or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        parser.error(f"unknown program(s): {', '.join(unknown)} (see --list)")

    from .recorder import record_program

    os.makedirs(args.out, exist_ok=True)
    for name in names:
        path = os.path.join(args.out, f"{name}.jsonl")
        backwards, captures = record_program(PROGRAMS[name], path)
        print(f"{name}: {backwards} backwards, {captures} captures -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
