"""A pytest plugin: CUDA-graph limits on a test, checked on a CPU.

    @pytest.mark.capsim(max_rerecords=0, max_copy_bytes_per_call={"fwd0": 0})
    def test_training_step():
        train(steps=6)        # torch.compile(mode="reduce-overhead") inside

The test's body runs inside the recorder's cudagraph form
(`capsim_recorder.record(path, cudagraphs=True)`, what `python -m
capsim_recorder run --cudagraphs` does), then `capsim expect` checks the
trace against the limits, as a GPU would run it (a CPU recording is
simulated with CUDA graphs on). A broken limit fails the test with capsim's
explanation; docs/ci-recipe.md has a CI workflow and a worked example.

The marker's keywords are `capsim expect`'s limits (expect.LIMIT_KEYS):
an int for the whole run, {"FUNCTION": n} for one compiled function (its
name in the trace: `fwd0`, `bwd0`, ...), or a list of both; `limits=PATH`
(a TOML file, relative to the test's file) and `keep_going=True` pass
through. A bare marker means `errors=0`.

Loaded by the `pytest11` entry point when the recorder is pip-installed,
else with `-p capsim_recorder.pytest_plugin`. torch is imported only when a
marked test runs, so collecting without torch works.

Options: --capsim-trace-dir DIR keeps each marked test's trace (else it goes
into a temporary directory, removed after the test); --capsim-junit-dir DIR
passes `--junit DIR/TEST.xml` to capsim; when capsim is missing (neither
CAPSIM_BIN nor `capsim` on PATH, or a capsim without `expect`), a marked
test fails, or is skipped with `--capsim-missing=skip`, CAPSIM_MISSING=skip
or the ini option `capsim_missing = skip`; the ini option `capsim_timeout`
(seconds, default 300) bounds one `capsim expect`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import pytest

from . import expect

MARKER = "capsim"
MISSING_ENV = "CAPSIM_MISSING"
MISSING_CHOICES = ("fail", "skip")
DEFAULT_TIMEOUT_S = 300
# Seconds for `capsim expect --help`, asked once per session.
PROBE_TIMEOUT_S = 60

_BINARY = pytest.StashKey[expect.Binary]()

MARKER_HELP = ("capsim(max_recordings=, max_rerecords=, max_copy_bytes_per_call=, "
               "max_eager_fallbacks=, errors=, warnings=, limits=PATH.toml, keep_going=False): "
               "record the test's torch.compile(mode='reduce-overhead') calls and fail it when "
               "`capsim expect` predicts a broken limit on a GPU (capsim_recorder.pytest_plugin)")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("capsim", "capsim: CUDA-graph limits of @pytest.mark.capsim tests")
    group.addoption("--capsim-missing", choices=MISSING_CHOICES, default=None,
                    help="when capsim is missing: fail (default) or skip the marked tests "
                         f"(also {MISSING_ENV}, ini capsim_missing)")
    group.addoption("--capsim-trace-dir", default=None, metavar="DIR",
                    help="keep each marked test's trace in DIR (default: removed after the test)")
    group.addoption("--capsim-junit-dir", default=None, metavar="DIR",
                    help="capsim expect --junit DIR/TEST.xml for each marked test")
    parser.addini("capsim_missing", "fail or skip a marked test when capsim is missing",
                  default="fail")
    parser.addini("capsim_timeout", "seconds one capsim expect may take",
                  default=str(DEFAULT_TIMEOUT_S))


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    missing_policy(config)  # a bad value stops the session at once
    timeout_s(config)


def missing_policy(config: Any) -> str:
    """--capsim-missing, else CAPSIM_MISSING, else the ini option."""
    value = (config.getoption("capsim_missing") or os.environ.get(MISSING_ENV)
             or config.getini("capsim_missing") or "fail")
    if value not in MISSING_CHOICES:
        raise pytest.UsageError(f"capsim: the missing-binary policy must be fail or skip, "
                                f"got {value!r} ({MISSING_ENV} or ini capsim_missing)")
    return value


def timeout_s(config: Any) -> float:
    text = config.getini("capsim_timeout")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise pytest.UsageError(f"capsim: ini capsim_timeout must be a positive number of "
                                f"seconds, got {text!r}")
    return value


# -- before the body ------------------------------------------------------------------


def _probe(binary: expect.Binary) -> expect.Binary:
    """The binary, or missing when it has no `expect` (an older capsim)."""
    if binary.path is None:
        return binary
    try:
        done = subprocess.run([binary.path, "expect", "--help"], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return expect.Binary(None, f"{binary.path} could not be run: {e}")
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        return expect.Binary(None, f"{binary.path} has no `expect` command ({said}); "
                                   f"{expect.HOW_TO_GET_IT}")
    return binary


def find_capsim(config: Any) -> expect.Binary:
    """The capsim binary, looked up and probed once per session."""
    if _BINARY not in config.stash:
        config.stash[_BINARY] = _probe(expect.find_binary(os.environ))
    return config.stash[_BINARY]


def _skip(reason: str) -> Exception:
    """A skip reported at the test (not at this plugin's line), where this
    pytest can say so."""
    try:
        return pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # a pytest without the keyword
        return pytest.skip.Exception(reason)


@dataclass
class Plan:
    """What a marked test needs before its body runs."""
    expectation: expect.Expectation
    binary: str
    stem: str  # the trace's and report's file name, without extension


def plan(item: Any, marker: Any) -> Plan:
    """Fails (or skips) the test before its body runs when the marker is
    wrong or capsim is missing: the body's time would be spent for nothing."""
    try:
        wanted = expect.expectation(marker.args, marker.kwargs, str(item.path.parent))
    except expect.MarkerError as e:
        raise pytest.fail.Exception(f"@pytest.mark.capsim: {e}", pytrace=False) from None
    binary = find_capsim(item.config)
    if binary.path is None:
        if missing_policy(item.config) == "skip":
            raise _skip(f"capsim: {binary.missing}")
        raise pytest.fail.Exception(f"capsim: {binary.missing}", pytrace=False)
    return Plan(wanted, binary.path, expect.file_stem(item.nodeid))


@contextlib.contextmanager
def trace_dir(config: Any) -> Iterator[tuple[str, bool]]:
    """(directory, kept): --capsim-trace-dir's, or a temporary one."""
    kept = config.getoption("capsim_trace_dir")
    if kept is None:
        with tempfile.TemporaryDirectory(prefix="capsim-") as directory:
            yield directory, False
        return
    try:
        os.makedirs(kept, exist_ok=True)
    except OSError as e:
        raise pytest.fail.Exception(f"capsim: --capsim-trace-dir {kept}: {e}",
                                    pytrace=False) from None
    yield os.path.abspath(kept), True


# -- the recording ---------------------------------------------------------------------


class RecorderFailed(Exception):
    """The recorder (not the test) could not start or finish."""


def open_recording(item: Any, path: str) -> Any:
    """The context manager that records the body into `path`: the
    recorder's cudagraph form, Dynamo reset first so that every graph the
    body runs is compiled under its hooks. (The plugin's tests replace
    this function to run without torch.)"""
    try:
        import torch  # only here: collecting needs no torch
    except ImportError as e:
        raise RecorderFailed(f"torch is not importable ({e}); the recorder needs torch 2.8 "
                             f"or later") from None
    del torch  # imported to fail here, named, rather than inside the recorder
    from .recording import record

    return record(path, cudagraphs=True, reset=True, command=f"pytest {item.nodeid}")


def start(item: Any, path: str) -> Any:
    """The recording, entered; a failure to start fails the test, with
    the recorder named, before the body runs."""
    try:
        recording = open_recording(item, path)
        recording.__enter__()
    except Exception as e:
        why = str(e) if isinstance(e, RecorderFailed) else _why(e)
        raise pytest.fail.Exception(f"capsim: the recorder could not start: {why}",
                                    pytrace=False) from None
    return recording


def stop(recording: Any, body_error: Optional[tuple]) -> Optional[str]:
    """Ends the recording (the body's exception, if any, handed in as a
    `with` block would); returns the recorder's own failure, if any."""
    error = body_error[1] if body_error else None
    try:
        recording.__exit__(*(body_error or (None, None, None)))
    except BaseException as e:
        if e is not error:
            return _why(e)
    finally:
        _forget_compiled()
    return None


def _forget_compiled() -> None:
    """Dynamo reset after the recording too: a later test must not run
    graphs compiled under the recorder's hooks."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.compiler.reset()


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


# -- after the body ----------------------------------------------------------------------


def _trace_note(trace: str, kept: bool) -> str:
    if kept:
        return f"trace: {trace} (capsim explain --as-on-a-gpu {trace} explains every decision)"
    return "(--capsim-trace-dir DIR keeps the trace for capsim explain)"


def check(item: Any, how: Plan, trace: str, kept: bool) -> Optional[Exception]:
    """capsim's verdict on the trace: None when every limit holds, else
    the exception (a failure, or a skip by the missing policy) to end the
    test with."""
    problem = expect.trace_problem(trace)
    if problem:
        return pytest.fail.Exception(f"capsim: cannot check this test: {problem}\n"
                                     f"{_trace_note(trace, kept)}", pytrace=False)
    junit_dir = item.config.getoption("capsim_junit_dir")
    junit = None
    if junit_dir is not None:
        try:
            os.makedirs(junit_dir, exist_ok=True)
        except OSError as e:
            return pytest.fail.Exception(f"capsim: --capsim-junit-dir {junit_dir}: {e}",
                                         pytrace=False)
        junit = os.path.abspath(os.path.join(junit_dir, how.stem + ".xml"))
    cmd = expect.command(how.binary, os.path.basename(trace), how.expectation, junit)
    verdict = expect.run(cmd, os.path.dirname(trace), timeout_s(item.config))
    if verdict.holds:
        return None
    if verdict.kind == "no_expect" and missing_policy(item.config) == "skip":
        return _skip(f"capsim: {verdict.text}")
    return pytest.fail.Exception(f"{verdict.text}\n{_trace_note(trace, kept)}", pytrace=False)


def _end_with(outcome: Any, error: Exception) -> None:
    """The test ends with `error` instead of its result."""
    force = getattr(outcome, "force_exception", None)
    if force is None:  # pluggy 1.0: an old-style wrapper's raise is the way
        raise error
    force(error)  # pluggy 1.1 on: a raise here would be warned about


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Iterator[None]:
    """A marked test's body, recorded, then checked by capsim. The body's
    own failure (or skip) stands as it is; capsim is not asked then."""
    marker = pyfuncitem.get_closest_marker(MARKER)
    if marker is None:
        yield
        return
    how = plan(pyfuncitem, marker)
    with trace_dir(pyfuncitem.config) as (directory, kept):
        trace = os.path.join(directory, how.stem + ".jsonl")
        recording = start(pyfuncitem, trace)
        outcome = yield
        failed = stop(recording, outcome.excinfo)
        if outcome.excinfo is not None:
            if failed:
                pyfuncitem.add_report_section("call", "capsim", f"the recorder failed: {failed}")
            return
        if failed:
            _end_with(outcome, pytest.fail.Exception(
                f"capsim: the recorder failed as the test ended: {failed}", pytrace=False))
            return
        error = check(pyfuncitem, how, trace, kept)
        if error is not None:
            _end_with(outcome, error)
