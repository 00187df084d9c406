"""The built-in cudagraph programs' runs (`python -m capsim_recorder
--cudagraphs`): one program on the one cudagraph driver (driver.py) with the
program API (program_api.py), its trace written even when it raised, then a
clean slate for the next; `record_one` runs one and says how it went in a
summary line.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading
import traceback
from typing import Any, Optional

import torch

from .. import torch_compat
from ..recorder import PRODUCER, SEED, torch_config
from .driver import CudagraphDriver, torch_driver
from .program_api import CudagraphRecorder

COMMAND = "python -m capsim_recorder --cudagraphs --out build/torch-cudagraphs --program {name}"
# What the built-in programs need of PyTorch's internals (torch_compat.self_check).
NEEDS = (torch_compat.CUDAGRAPHS,)


class ProgramTimeout(Exception):
    pass


def device_description(device: torch.device) -> str:
    if device.type != "cuda":
        return str(device)
    try:
        name = torch.cuda.get_device_name(device)
        major, minor = torch.cuda.get_device_capability(device)
        return f"{name} (sm_{major}{minor}), CUDA runtime {torch.version.cuda}"
    except Exception as e:  # pragma: no cover - GPU only
        return f"cuda ({type(e).__name__})"


def reset_state(seed: int) -> None:
    torch.compiler.reset()
    torch_compat.counters().clear()
    gc.collect()
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


@contextlib.contextmanager
def alarm(seconds: Optional[int]):
    """A ProgramTimeout after `seconds` (main thread, POSIX only); PyTorch
    code that does not return to Python is cut by the caller's own timeout."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum, frame):
        raise ProgramTimeout(f"the program ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _run(program: Any, driver: CudagraphDriver, rec: CudagraphRecorder, dev: torch.device,
         timeout_s: Optional[int], log: Any) -> dict:
    """Runs the program with the driver installed; the summary's status."""
    summary: dict = {"status": "recorded", "error": None}
    driver.install()
    try:
        with torch_compat.fresh_compile_patches(getattr(program, "inductor_config", None)), alarm(timeout_s):
            try:
                program.run(rec)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
            except BaseException as e:  # noqa: BLE001 - the trace records whatever stopped the program
                rec.record_error(e)
                summary["status"] = "exception"
                summary["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                driver.session.program_error = (type(e).__name__, str(e))
                log(f"{program.name}: {type(e).__name__}: {e}")
                log("".join(traceback.format_exception(type(e), e, e.__traceback__, limit=12)))
                if isinstance(e, KeyboardInterrupt):
                    raise
    finally:
        driver.uninstall()
    return summary


def record_cudagraph_program(program: Any, path: str, device: str = "cuda", timeout_s: Optional[int] = None,
                             log=None) -> dict:
    """Runs one program and writes its trace at `path`. Returns a summary:
    {"status": "recorded"|"exception", "error": text, "actions", "events",
    "functions", "untranslated", "notes"}. A trace is written even when the
    program raised (up to that point, with an error event); what the hooks
    and the observer could not do is in its x_notes (driver.py)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dev = torch.device(device)
    torch_compat.compile_fx_module()
    reset_state(SEED)
    driver = torch_driver(program.name, dev.type)
    driver.self_check(NEEDS)
    rec = CudagraphRecorder(driver.session, driver.observer, dev)
    summary = _run(program, driver, rec, dev, timeout_s, log)
    counts = write_driver(driver, path, program.name, dev, getattr(program, "inductor_config", None))
    summary.update(counts)
    summary["notes"] = driver.notes()
    # The next program starts from nothing: no tree manager, no compiled code.
    del rec
    try:
        reset_state(SEED)
    except Exception as e:  # pragma: no cover - GPU only
        log(f"{program.name}: reset after the program failed: {type(e).__name__}: {e}")
    return summary


def write_driver(driver: CudagraphDriver, path: str, name: str, device: torch.device,
                 inductor_config: Optional[dict] = None, command: Optional[str] = None,
                 config: Optional[dict] = None) -> dict:
    """The driver's trace with the header's extensions (release, device,
    command, the program's Inductor settings)."""
    extensions = {
        "x_torch_version": torch.__version__,
        "x_device": device_description(device),
        "x_command": command or COMMAND.format(name=name),
    }
    if inductor_config:
        extensions["x_inductor_config"] = dict(inductor_config)
    return driver.write(path, producer=PRODUCER, seed=SEED, config=config or torch_config(),
                        extensions=extensions)


def record_one(program: Any, path: str, device: str, timeout_s: Optional[int],
               summary_path: Optional[str] = None) -> bool:
    """Records one built-in program into `path`, with one line on stdout and
    in summary_path (appended and flushed as it ends). Returns whether it
    recorded cleanly; its failure never stops the programs after it."""
    name = program.name
    print(f"{name}: recording", file=sys.stderr, flush=True)
    ok = True
    try:
        s = record_cudagraph_program(program, path, device=device, timeout_s=timeout_s)
        if s["status"] == "recorded":
            line = (f"{name}: recorded, {s['actions']} actions, {s['events']} events, "
                    f"functions {s['functions']}")
            if s["untranslated"]:
                line += f", untranslated {s['untranslated']}"
        else:
            ok = False
            line = f"{name}: exception {s['error']} (trace written up to it, {s['events']} events)"
        if s.get("notes"):
            line += f", {len(s['notes'])} notes (x_notes)"
    except BaseException as e:  # noqa: BLE001 - one program must not stop the others
        ok = False
        line = f"{name}: exception {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''} (no trace)"
        traceback.print_exc()
        if isinstance(e, KeyboardInterrupt):
            raise
    print(line, flush=True)
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    return ok
