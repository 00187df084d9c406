"""Writes capsim-trace version 1 files (JSON Lines), without importing torch.

This module knows the envelope of docs/trace-format.md: the header line, action
lines and event lines, their `seq` and `index` counters, the key order
producers use, and the output rule (a regular file is replaced atomically
through a temporary beside it; a FIFO or device is written in place; `-` is
standard output; see TraceWriter). It does not know
what an autograd graph is; the recorder hands it ready field dictionaries.
Keeping torch out of it lets its unit tests run with a plain python3.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import stat
import sys
import tempfile
from typing import Any, Iterator, Mapping, Optional, Sequence

from .action_schema import action_problem

FORMAT = "capsim-trace"
VERSION = 1
CAPSIM_VERSION = "0.1.0"

# The nine header config fields, in the order the spec's table lists them.
CONFIG_KEYS = (
    "inline_inbuilt_nn_modules",
    "cudagraph_support_input_mutation",
    "cudagraph_unexpected_rerecord_limit",
    "skip_cudagraph_warmup",
    "force_cudagraphs_warmup",
    "slow_path_cudagraph_asserts",
    "zero_grad_static_error",
    "plain_api",
    "poison_freed",
)

# Additive keys (docs/trace-format.md section 3): written after the others,
# only when the caller gives them. `torch_profile` names the release whose
# tree manager ran (absent: classic, 2.5 to 2.8); `cudagraphs` is false for a
# run that made no CUDA graphs (triton.cudagraphs off, or a CPU run; absent:
# true).
OPTIONAL_CONFIG_KEYS = ("torch_profile", "cudagraphs")
TORCH_PROFILES = ("2.9", "2.10", "2.11", "2.12", "2.13", "2.14", "2.15")


def torch_profile_of(version: str) -> Optional[str]:
    """capsim's profile name for a PyTorch version such as "2.11.0+cu130",
    or None for classic (2.5 to 2.8) and for releases capsim does not model
    (sim/core/torch_profile.cpp, torch_profile_for)."""
    parts = version.split("+")[0].split(".")
    if len(parts) < 2 or parts[0] != "2" or not parts[1].isdigit():
        return None
    name = f"2.{int(parts[1])}"
    return name if name in TORCH_PROFILES else None


# capsim's defaults for those settings (sim/core/cudagraph_config.hpp), which are
# PyTorch 2.11's; a recorder writes the values it reads from PyTorch instead.
DEFAULT_CONFIG = {
    "inline_inbuilt_nn_modules": True,
    "cudagraph_support_input_mutation": True,
    "cudagraph_unexpected_rerecord_limit": 128,
    "skip_cudagraph_warmup": False,
    "force_cudagraphs_warmup": False,
    "slow_path_cudagraph_asserts": True,
    "zero_grad_static_error": False,
    "plain_api": False,
    "poison_freed": False,
}
assert tuple(DEFAULT_CONFIG) == CONFIG_KEYS

# Limits from docs/trace-format.md section 8 (a line) and section 5 (names).
MAX_LINE_BYTES = 1 << 20
MAX_NAME_BYTES = 256
# What amend_header adds to a header at most (well within a line).
MAX_NOTES = 100
MAX_NOTE_BYTES = 1000


class TraceWriteError(ValueError):
    """A line the format cannot hold (NaN, a too-long line, a bad order)."""


class LineTooLong(TraceWriteError):
    """A line over the format's limit of MAX_LINE_BYTES (section 8)."""


def _check_value(value: Any, where: str) -> None:
    # json.dumps would write NaN/Infinity, which are not JSON and which the
    # format cannot represent; refuse them here with a useful location.
    if isinstance(value, float) and not math.isfinite(value):
        raise TraceWriteError(f"{where}: non-finite float {value!r}")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TraceWriteError(f"{where}: non-string key {key!r}")
            _check_value(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]")


def encode_line(fields: Mapping[str, Any]) -> str:
    """One compact JSON line, keys in insertion order, ended by a newline.

    Floats come out as Python's repr (json uses float.__repr__), UTF-8 is kept
    as is (ensure_ascii=False).
    """
    _check_value(dict(fields), "line")
    text = json.dumps(
        fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    if len(text.encode("utf-8")) + 1 > MAX_LINE_BYTES:
        raise LineTooLong(f"line longer than {MAX_LINE_BYTES} bytes, the trace format's limit")
    return text + "\n"


def check_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise TraceWriteError(f"name must be a non-empty string, got {name!r}")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise TraceWriteError(f"name longer than {MAX_NAME_BYTES} bytes: {name!r}")
    return name


class TraceWriter:
    """Writes one trace: a header, then actions each followed by their events.

    Use as a context manager. Where the lines go depends on what PATH is, so
    that no output can destroy something that is not a trace file:

    - a regular file, or nothing yet: a temporary made by mkstemp in the same
      directory (".NAME.XXXX.tmp", never a fixed PATH.tmp that could be a
      user's file), flushed line by line (a killed recorder leaves a valid
      prefix there), renamed onto PATH on a clean exit and removed on an
      exception, so that no partial trace is left under either name and a
      file already at PATH stays as it was. The result has the mode a plain
      open() would give: the old file's, or 0o666 & ~umask;
    - a symlink: followed first; the link stays, its target gets the rules;
    - a FIFO, a device, a socket: opened for writing in place (no truncation,
      no rename, never removed); a failure cannot take back what went out;
    - "-": standard output, flushed and never closed;
    - a directory: refused with TraceWriteError before anything is written.

    With `log=True` (capsim_recorder.record, the `run` launcher) a regular
    file is written in place instead, flushed line by line, and kept when the
    block raises: a recording of a user's script is a log, and a script that
    fails or is killed leaves the valid prefix of its trace under PATH.
    """

    def __init__(self, path: str, log: bool = False) -> None:
        self.path = path
        self.log = log
        self.bytes_written = 0
        self.tmp_path: Optional[str] = None  # set while a temporary is open
        self._target: Optional[str] = None   # what the temporary replaces
        self._file = None
        self._seq = 0
        self._next_action = 0
        self._header_written = False
        self._pending: Optional[list[str]] = None  # lines held by atomic()

    # -- file lifetime -------------------------------------------------------

    def __enter__(self) -> "TraceWriter":
        if self.path == "-":
            self._file = sys.stdout
            return self
        target = os.path.realpath(self.path)
        st = _stat_or_none(target)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise TraceWriteError(f"{self.path}: is a directory")
        if self.log and (st is None or stat.S_ISREG(st.st_mode)):
            self._file = open(target, "w", encoding="utf-8")
            return self
        if st is None or stat.S_ISREG(st.st_mode):
            mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
            self._file, self.tmp_path = _open_temporary(target, mode)
            self._target = target
        else:
            self._file = _open_in_place(target)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._file is not None
        file, self._file = self._file, None
        tmp_path, self.tmp_path = self.tmp_path, None
        try:
            if file is sys.stdout:
                file.flush()
            else:
                file.close()
        except BaseException:
            if tmp_path is not None:
                os.remove(tmp_path)
            raise
        ok = exc_type is None and self._header_written
        if tmp_path is not None:
            if ok:
                os.replace(tmp_path, self._target)
            else:
                os.remove(tmp_path)
        if exc_type is None and not self._header_written:
            raise TraceWriteError("trace closed without a header line")

    def _emit(self, fields: Mapping[str, Any]) -> None:
        if self._file is None:
            raise TraceWriteError("writer is not open (use it as a context manager)")
        line = encode_line(fields)
        if self._pending is not None:
            self._pending.append(line)
        else:
            self._file.write(line)
            self._file.flush()
        self._seq += 1
        self.bytes_written += len(line.encode("utf-8"))

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """The lines written inside go out together when the block ends, or
        not at all when it raises (seq, index and bytes_written back as they
        were): a recorder that fails half-way through a step leaves no half
        of it. A nested block's lines go out with the outermost block's, and
        only its own are dropped when it raises."""
        outer = self._pending is not None
        if not outer:
            self._pending = []
        saved = (len(self._pending), self._seq, self._next_action, self.bytes_written)
        try:
            yield
        except BaseException:
            del self._pending[saved[0]:]
            self._seq, self._next_action, self.bytes_written = saved[1:]
            if not outer:
                self._pending = None
            raise
        if not outer:
            lines, self._pending = self._pending, None
            if lines and self._file is not None:
                self._file.write("".join(lines))
                self._file.flush()

    # -- lines ---------------------------------------------------------------

    def header(
        self,
        *,
        producer: str,
        name: str,
        seed: int,
        config: Mapping[str, Any],
        observes: Optional[Sequence[str]] = None,
        extensions: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """Line 0. `config` must hold exactly the nine fields of CONFIG_KEYS;
        `extensions` are x_ fields appended after the standard ones."""
        if self._seq != 0:
            raise TraceWriteError("the header must be the first line")
        missing = [k for k in CONFIG_KEYS if k not in config]
        extra = [k for k in config if k not in CONFIG_KEYS and k not in OPTIONAL_CONFIG_KEYS]
        if missing or extra:
            raise TraceWriteError(f"config: missing {missing}, unknown {extra}")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise TraceWriteError(f"seed must be a non-negative integer, got {seed!r}")
        fields: dict[str, Any] = {
            "seq": 0,
            "type": "header",
            "format": FORMAT,
            "version": VERSION,
            "producer": producer,
            "capsim_version": CAPSIM_VERSION,
            "name": check_name(name),
            "seed": seed,
            # Re-ordered into the spec's order whatever order the caller used.
            "config": {k: config[k] for k in CONFIG_KEYS + OPTIONAL_CONFIG_KEYS if k in config},
        }
        profile = config.get("torch_profile")
        if profile is not None and profile not in TORCH_PROFILES:
            raise TraceWriteError(f"config: unknown torch_profile {profile!r}")
        if observes is not None:
            fields["observes"] = list(observes)
        fields.update(_extensions(extensions))
        self._emit(fields)
        self._header_written = True

    def function(self, fields: Mapping[str, Any]) -> None:
        """A function line (section 4): after the header, before any action.
        `fields` starts with "function" (the name); the envelope is added."""
        if not self._header_written:
            raise TraceWriteError("a function line before the header")
        if self._next_action != 0:
            raise TraceWriteError("a function line after an action")
        check_name(fields.get("function", ""))
        line: dict[str, Any] = {"seq": self._seq, "type": "function"}
        _merge(line, fields)
        self._emit(line)

    def action(self, action: str, fields: Mapping[str, Any]) -> int:
        """An action line; returns its index (for the events it causes).
        Its kind and fields must be capsim's (action_schema.py)."""
        if not self._header_written:
            raise TraceWriteError("an action before the header")
        problem = action_problem(action, fields)
        if problem is not None:
            raise TraceWriteError(f"action line: {problem}")
        index = self._next_action
        line: dict[str, Any] = {
            "seq": self._seq,
            "type": "action",
            "index": index,
            "action": action,
        }
        _merge(line, fields)
        self._emit(line)
        self._next_action += 1
        return index

    def event(self, action_index: int, event: str, fields: Mapping[str, Any]) -> None:
        """An event line caused by the latest action, which must be action_index."""
        if self._next_action == 0 or action_index != self._next_action - 1:
            raise TraceWriteError(
                f"an event must name the latest action ({self._next_action - 1}),"
                f" got {action_index}"
            )
        line: dict[str, Any] = {
            "seq": self._seq,
            "type": "event",
            "action": action_index,
            "event": event,
        }
        _merge(line, fields)
        self._emit(line)


def amend_header(path: str, notes: Sequence[str]) -> bool:
    """Adds `notes` to the header's `x_notes` of the finished trace at `path`
    (after any it has), rewriting the file through a temporary beside it:
    what a recording learnt after its header went out (a step it skipped,
    and why). Only a regular file can be rewritten; returns whether it was.
    The header stays far within the line limit: at most MAX_NOTES notes of
    at most MAX_NOTE_BYTES each are added, the rest counted in a last one."""
    target = os.path.realpath(path)
    st = _stat_or_none(target)
    if not notes or st is None or not stat.S_ISREG(st.st_mode):
        return False
    with open(target, encoding="utf-8", newline="\n") as src:
        header = json.loads(src.readline())
        old = list(header.get("x_notes", []))
        new = [n for n in dict.fromkeys(notes) if n not in old]
        added = [n if len(n) <= MAX_NOTE_BYTES else n[:MAX_NOTE_BYTES] + "..."
                 for n in new[:MAX_NOTES]]
        if len(new) > MAX_NOTES:
            added.append(f"{len(new) - MAX_NOTES} more notes (on stderr)")
        header["x_notes"] = old + added
        dst, tmp_path = _open_temporary(target, stat.S_IMODE(st.st_mode))
        try:
            with dst:
                dst.write(encode_line(header))
                shutil.copyfileobj(src, dst)
        except BaseException:
            os.remove(tmp_path)
            raise
    os.replace(tmp_path, target)
    return True


def _stat_or_none(path: str) -> Optional[os.stat_result]:
    """os.stat(path), or None where nothing is there yet (a dangling link's
    target is "nothing yet": it gets created, the link kept)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _umask() -> int:
    """The process umask. It can only be read by setting it, so it is set to 0
    and put back at once."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _open_temporary(target: str, mode: int):
    """A text file open on a new temporary beside `target` (same directory, so
    os.replace is a rename within one file system), with permission bits
    `mode` (mkstemp makes 0o600); returns (file, temporary's path)."""
    directory, base = os.path.split(target)
    fd, tmp_path = tempfile.mkstemp(dir=directory, prefix="." + base + ".", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        file = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    except BaseException:
        os.close(fd)
        os.remove(tmp_path)
        raise
    return file, tmp_path


def _open_in_place(target: str):
    """A text file open for writing on something that is not a regular file
    (a FIFO, a device): O_WRONLY without O_TRUNC or O_CREAT, so that it is
    written to and never truncated, created or replaced. A FIFO blocks here
    until a reader opens it; a socket fails with an OSError, untouched."""
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    try:
        return os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    except BaseException:
        os.close(fd)
        raise


def _extensions(extensions: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (extensions or {}).items():
        if not key.startswith("x_"):
            raise TraceWriteError(f"extension field {key!r} must start with x_")
        out[key] = value
    return out


def _merge(line: dict[str, Any], fields: Mapping[str, Any]) -> None:
    for key, value in fields.items():
        if key in line:
            raise TraceWriteError(f"field {key!r} clashes with the envelope")
        line[key] = value
