"""`capsim expect` from Python, for the pytest plugin (pytest_plugin.py):
the limits a `@pytest.mark.capsim(...)` marker states, the capsim binary,
the command line, and what capsim's answer means. No torch, no pytest, so
that all of it is testable (and importable) anywhere.

The command's contract (cli/expect_command.cpp, docs/ci-recipe.md):

    capsim expect FILE [--max-recordings V] [--max-rerecords V]
        [--max-copy-bytes-per-call V] [--max-eager-fallbacks V]
        [--errors V] [--warnings V] [--limits PATH.toml] [--json]
        [--junit PATH] [--keep-going]

V is `N` (the whole run) or `FUNCTION=N` (one compiled function, by its
name in the trace's function lines); each flag repeats. Exit 0: every limit
holds; 1: some limit is broken, stdout has per limit `ok   LIMIT (SCOPE):
FIGURE <= MAX` or `FAIL LIMIT (SCOPE): FIGURE > MAX`, each FAIL followed by
capsim's explanation, indented; 2: bad input, one `capsim: error: ...` line
on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

# The limits, in the order their flags are written (capsim's own order).
LIMIT_KEYS = ("max_recordings", "max_rerecords", "max_copy_bytes_per_call",
              "max_eager_fallbacks", "errors", "warnings")
# The marker's other keywords.
OPTION_KEYS = ("limits", "keep_going")
# A bare `@pytest.mark.capsim`: no error a GPU would raise (an overwritten
# output, E1, above all), the one limit every training loop wants.
DEFAULT_LIMITS: Mapping[str, int] = {"errors": 0}
# The environment variable that names the binary (else `capsim` on PATH).
BINARY_ENV = "CAPSIM_BIN"
# A function name as the trace's function lines have them (`fwd0`, `opt.step`).
_FUNCTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_COUNT = re.compile(r"^[0-9]+$")
# The longest trace/report file stem made from a test's node id.
MAX_STEM = 120


class MarkerError(ValueError):
    """The marker's arguments are not a set of limits capsim takes."""


@dataclass
class Expectation:
    """What one marker asks: the limit flags (in LIMIT_KEYS order), an
    optional TOML limits file (absolute), and --keep-going."""
    flags: list[str] = field(default_factory=list)
    limits_file: Optional[str] = None
    keep_going: bool = False

    def args(self) -> list[str]:
        """The flags of `capsim expect` after FILE."""
        out = list(self.flags)
        if self.limits_file is not None:
            out += ["--limits", self.limits_file]
        if self.keep_going:
            out.append("--keep-going")
        return out


# -- the marker ------------------------------------------------------------------


def _count(key: str, value: Any) -> int:
    # bool is an int in Python: `max_rerecords=True` is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MarkerError(f"{key}: expected a count (an int >= 0), got {value!r}")
    return value


def _scoped(key: str, function: Any, value: Any) -> str:
    if not isinstance(function, str) or not _FUNCTION.match(function):
        raise MarkerError(f"{key}: {function!r} is not a compiled function's name")
    return f"{function}={_count(key, value)}"


def _from_text(key: str, text: str) -> str:
    """`N` or `FUNCTION=N`, as capsim's flag takes it."""
    if _COUNT.match(text):
        return text
    function, eq, count = text.partition("=")
    if eq and _COUNT.match(count):
        return _scoped(key, function, int(count))
    raise MarkerError(f"{key}: expected N or FUNCTION=N, got {text!r}")


def limit_values(key: str, value: Any) -> list[str]:
    """The values of one limit's flag: an int (the whole run), a dict
    {function: int}, a string `N` / `FUNCTION=N`, or a list of these."""
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in limit_values(key, item)]
    if isinstance(value, dict):
        return [_scoped(key, f, n) for f, n in value.items()]
    if isinstance(value, str):
        return [_from_text(key, value)]
    return [str(_count(key, value))]


def _flags(limits: Mapping[str, Any]) -> list[str]:
    flags: list[str] = []
    for key in LIMIT_KEYS:
        if key in limits:
            flag = "--" + key.replace("_", "-")
            for value in limit_values(key, limits[key]):
                flags += [flag, value]
    return flags


def expectation(args: tuple, kwargs: Mapping[str, Any], base_dir: str) -> Expectation:
    """The Expectation of `@pytest.mark.capsim(*args, **kwargs)` on a test
    in `base_dir` (where a relative `limits=` file is looked up)."""
    if args:
        raise MarkerError("takes keyword arguments only, e.g. capsim(max_rerecords=0)")
    unknown = sorted(set(kwargs) - set(LIMIT_KEYS) - set(OPTION_KEYS))
    if unknown:
        raise MarkerError(f"unknown argument(s) {', '.join(unknown)}; the limits are "
                          f"{', '.join(LIMIT_KEYS)}, and limits=PATH.toml, keep_going=True")
    limits = {k: v for k, v in kwargs.items() if k in LIMIT_KEYS}
    limits_file = kwargs.get("limits")
    if limits_file is not None and not isinstance(limits_file, (str, os.PathLike)):
        raise MarkerError(f"limits: expected a path to a TOML file, got {limits_file!r}")
    keep_going = kwargs.get("keep_going", False)
    if not isinstance(keep_going, bool):
        raise MarkerError(f"keep_going: expected True or False, got {keep_going!r}")
    if not limits and limits_file is None:
        limits = dict(DEFAULT_LIMITS)
    path = None if limits_file is None else os.path.join(base_dir, os.fspath(limits_file))
    return Expectation(_flags(limits), path, keep_going)


# -- the binary --------------------------------------------------------------------


@dataclass
class Binary:
    """Where capsim is (`path`), or why it was not found (`missing`)."""
    path: Optional[str]
    missing: str = ""


HOW_TO_GET_IT = ("build it (`make install` in capsim's checkout; docs/ci-recipe.md) and put it "
                 "on PATH, or set CAPSIM_BIN to its path")


def find_binary(environ: Mapping[str, str],
                which: Callable[[str], Optional[str]] = shutil.which) -> Binary:
    """CAPSIM_BIN when set (a path, or a name looked up on PATH), else
    `capsim` on PATH."""
    named = environ.get(BINARY_ENV, "")
    if named:
        path = which(named) if os.sep not in named else named
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return Binary(os.path.abspath(path))
        return Binary(None, f"{BINARY_ENV}={named} is not an executable file; {HOW_TO_GET_IT}")
    path = which("capsim")
    if path:
        return Binary(os.path.abspath(path))
    return Binary(None, f"not found: no {BINARY_ENV} set and no capsim on PATH; {HOW_TO_GET_IT}")


# -- names -------------------------------------------------------------------------


def file_stem(nodeid: str) -> str:
    """A file name stem for a test's trace and report, from its node id
    (`examples/ci/test_train.py::test_x[a]` ->
    `examples_ci_test_train.py__test_x_a_`): readable, and the same at
    every run so that what capsim prints is too."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", nodeid).strip(".") or "test"
    if len(stem) <= MAX_STEM:
        return stem
    digest = hashlib.sha1(nodeid.encode("utf-8")).hexdigest()[:10]
    return f"{stem[:MAX_STEM - 11]}-{digest}"


# -- the trace before capsim reads it ------------------------------------------------


def _header(path: str) -> Optional[dict]:
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    try:
        header = json.loads(first)
    except ValueError:
        return None
    return header if isinstance(header, dict) and header.get("type") == "header" else None


def _has_calls(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        for line in f:
            # The recorder writes `"action": "call"` (and eager_call) with a space.
            if '"call"' in line or '"eager_call"' in line:
                return True
    return False


def trace_problem(path: str) -> Optional[str]:
    """Why a recorded trace cannot answer the marker's question (a check
    of it would pass for want of anything to check), or None."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return "the recorder wrote no trace"
    header = _header(path)
    if header is None:
        return "the trace's first line is not a header"
    untranslated = header.get("x_untranslated")
    if untranslated:
        return (f"the compiled graphs use op(s) capsim cannot express ({', '.join(untranslated)}),"
                " so the trace has no compiled calls to check (recorder/README.md lists the ops)")
    stopped = [n for n in header.get("x_notes", []) if str(n).startswith("recording stopped")]
    if stopped:
        return f"the recording is incomplete: {stopped[0]}"
    if not _has_calls(path):
        return ("the test's body made no call of a torch.compile'd function: nothing to check"
                " (was it compiled with mode=\"reduce-overhead\" and called inside the test?)")
    return None


# -- running it ----------------------------------------------------------------------


@dataclass
class Verdict:
    """capsim's answer: `holds` (exit 0), or a failure to report: `kind` is
    `broken` (exit 1), `bad_input` (2), `no_expect` (a capsim without the
    command) or `crashed` (anything else), `text` the message."""
    holds: bool
    kind: str = "holds"
    text: str = ""


def command(binary: str, trace: str, expectation: Expectation,
            junit: Optional[str] = None) -> list[str]:
    cmd = [binary, "expect", trace, *expectation.args()]
    if junit is not None:
        cmd += ["--junit", junit]
    return cmd


def _summary(stdout: str) -> str:
    """`N of M limits broken` from capsim's `ok`/`FAIL` lines."""
    lines = stdout.splitlines()
    failed = sum(1 for l in lines if l.startswith("FAIL "))
    total = failed + sum(1 for l in lines if l.startswith("ok "))
    return f"{failed} of {total} limits broken" if total else "limits broken"


def verdict_of(returncode: int, stdout: str, stderr: str, shown: str) -> Verdict:
    """What a finished `capsim expect` said. `shown`: the command as the
    message names it."""
    if returncode == 0:
        return Verdict(True)
    if returncode == 1:
        head = f"capsim expect: {_summary(stdout)}"
        return Verdict(False, "broken", f"{head}\n{stdout.rstrip()}\n(command: {shown})")
    error = stderr.strip().splitlines()
    if returncode == 2 and error and "unknown subcommand 'expect'" in error[-1]:
        return Verdict(False, "no_expect",
                       f"this capsim has no `expect` command ({error[-1]}); {HOW_TO_GET_IT}")
    if returncode == 2:
        line = error[-1] if error else "(nothing on stderr)"
        return Verdict(False, "bad_input", f"capsim expect refused its input: {line}\n"
                                           f"(command: {shown})")
    tail = "\n".join(error[-5:]) or "(nothing on stderr)"
    return Verdict(False, "crashed", f"capsim expect ended with status {returncode}:\n{tail}\n"
                                     f"(command: {shown})")


def run(cmd: list[str], cwd: str, timeout: float) -> Verdict:
    """`cmd` in `cwd` (where the trace is, so that capsim names it by its
    file name), at most `timeout` seconds."""
    # (Named `capsim`, not by its path: the message is the same on every machine.)
    shown = shlex.join(["capsim", *cmd[1:]])
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Verdict(False, "crashed", f"capsim expect did not finish in {timeout:g} s "
                                         f"(command: {shown})")
    except OSError as e:
        return Verdict(False, "crashed", f"capsim could not be run: {e} (command: {shown})")
    return verdict_of(done.returncode, done.stdout, done.stderr, shown)
