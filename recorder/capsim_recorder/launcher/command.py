"""`python -m capsim_recorder run -o TRACE [--max-steps N] [--max-bytes B]
[--static-shapes | --cudagraphs] -- SCRIPT [ARGS...]`: runs SCRIPT as `python SCRIPT ARGS`
would (as __main__, with sys.argv and sys.path[0] set), inside
capsim_recorder.record() (recording.py).

Exit status: the script's (0 when it ends normally or calls sys.exit(0));
when it raises, what the recorder saw stays in TRACE, its traceback and one
line on stderr say where the script failed, and the status is Python's for
an uncaught exception, 1. Bad usage is 2 (argparse).
"""

from __future__ import annotations

import argparse
import os
import runpy
import shlex
import sys
import traceback


def _where(tb, script: str) -> str:
    """The innermost frame of the script's own file, else the innermost."""
    frames = traceback.extract_tb(tb)
    own = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(script)]
    frames = own or frames
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def output_onto_input(output: str, inputs: list[str]) -> str | None:
    """The refusal when `output` is one of `inputs` (by device and inode, so a
    link counts, as capsim's own guard in cli/path_roles.hpp): the rename that
    puts the trace in place would replace the script. None when it is not."""
    if output == "-":
        return None
    for path in inputs:
        try:
            if os.path.samefile(output, path):
                return (f"{output}: is the input {path}; writing it would destroy it"
                        " (choose another output)")
        except OSError:  # either does not exist
            continue
    return None


def run_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m capsim_recorder run",
        description="Record any PyTorch script's backwards as a capsim trace.")
    parser.add_argument("-o", "--output", required=True, help="the trace to write")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="record at most this many backwards (later ones run unrecorded)")
    parser.add_argument("--max-bytes", type=int, default=None,
                        help="stop recording past this many bytes (default 256 MiB)")
    parser.add_argument("--static-shapes", action="store_true",
                        help="compiled autograd with dynamic=False (default: dynamic=True)")
    parser.add_argument("--cudagraphs", action="store_true",
                        help="record the cudagraph trees (the backwards run as the script runs"
                             " them, not under compiled autograd); see launcher/cudagraphs.py")
    parser.add_argument("script", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = parser.parse_args(argv)
    if args.max_steps is not None and args.max_steps < 0:
        parser.error(f"--max-steps: must be at least 0, got {args.max_steps}")
    if args.max_bytes is not None and args.max_bytes < 1:
        parser.error(f"--max-bytes: must be positive, got {args.max_bytes}")
    if args.static_shapes and args.cudagraphs:
        parser.error("--static-shapes is compiled autograd's flag; --cudagraphs runs none")
    if not os.path.isfile(args.script):
        parser.error(f"{args.script}: no such script")
    refused = output_onto_input(args.output, [args.script])
    if refused:
        parser.error(refused)
    script_args = args.args[1:] if args.args[:1] == ["--"] else args.args

    from ..recording import DEFAULT_MAX_BYTES, record

    command = shlex.join(["python", "-m", "capsim_recorder", "run", "-o",
                          os.path.basename(args.output)]
                         + (["--cudagraphs"] if args.cudagraphs else [])
                         + ["--", os.path.basename(args.script)] + script_args)
    saved_argv, saved_path0 = sys.argv, sys.path[0]
    sys.argv = [args.script] + script_args
    sys.path[0] = os.path.dirname(os.path.abspath(args.script))
    status = 0
    try:
        with record(args.output, max_steps=args.max_steps,
                    max_bytes=args.max_bytes or DEFAULT_MAX_BYTES,
                    dynamic=not args.static_shapes, command=command, reset=True,
                    cudagraphs=args.cudagraphs) as session:
            try:
                runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int) and e.code is not None:
                    print(e.code, file=sys.stderr)  # as Python prints sys.exit("message")
            except BaseException as e:  # the script's failure, reported, not re-raised
                traceback.print_exception(type(e), e, e.__traceback__)
                where = _where(e.__traceback__, args.script)
                print(f"capsim_recorder: {args.script} raised at {where}: "
                      f"{type(e).__name__}: {e}; the trace keeps the {session.steps} backwards"
                      f" recorded before ({args.output})", file=sys.stderr)
                status = 130 if isinstance(e, KeyboardInterrupt) else 1  # as Python's
                session.script_failed(e)
            steps = session.steps
    finally:
        sys.argv, sys.path[0] = saved_argv, saved_path0
    if status == 0:
        print(f"capsim_recorder: {steps} backwards recorded -> {args.output}", file=sys.stderr)
    return status
