"""The one driver of every cudagraph recording: the built-in programs'
(`--cudagraphs`, runner.py) and any script's (`run --cudagraphs`,
record(cudagraphs=True), launcher/cudagraphs.py).

A recording is a Session fed by two sets of patches: Inductor's compile
entry points (hooks.CompileHooks) and the tree manager's methods
(observer.TreeObserver). Either can fail without stopping the program: a
method this release lacks is not patched, an exception inside a wrapper is
caught. Each failure is kept, and the driver writes all of them into the
trace's `x_notes` at every write (a checkpoint's and the last), so that a
trace PyTorch left incomplete says so in both forms. The release's
self-check (torch_compat.announce) goes there too, at the start.

No torch import at import time: `CudagraphDriver` takes the classes and the
module it patches (tests/fake_tree.py's stand-ins in the tests), and
`torch_driver()` builds one over PyTorch's through torch_compat.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .. import torch_compat
from .hooks import CompileHooks
from .observer import TreeObserver
from .session import Session


class CudagraphDriver:
    """Session, compile hooks and tree observer of one recording, installed
    and uninstalled together; `write()` puts their failures in x_notes."""

    def __init__(self, session: Session, hooks: CompileHooks, observer: TreeObserver) -> None:
        self.session = session
        self.hooks = hooks
        self.observer = observer
        self.installed = False

    @classmethod
    def over(cls, name: str, *, compile_fx_module: Any, manager_cls: Any, node_cls: Any,
             generation_fn: Optional[Callable[[], Any]] = None, skip_log_modules: Sequence[Any] = (),
             get_block_count: Optional[Callable[[Any], Optional[int]]] = None,
             dealloc_message_prefix: Optional[str] = None) -> "CudagraphDriver":
        """A driver over the given compile module and tree classes (not installed)."""
        session = Session(name, generation_fn=generation_fn)
        hooks = CompileHooks(session, compile_fx_module)
        observer = TreeObserver(session, manager_cls, node_cls, skip_log_modules=skip_log_modules,
                                get_block_count=get_block_count,
                                dealloc_message_prefix=dealloc_message_prefix)
        return cls(session, hooks, observer)

    def self_check(self, needs: Sequence[str], log: Optional[Callable[[str], None]] = None) -> list:
        """The release's missing entry points (torch_compat.self_check), said
        on stderr and kept for x_notes."""
        lines = torch_compat.announce(needs, log)
        self.session.notes.extend(lines)
        return lines

    def install(self) -> None:
        self.hooks.install()
        self.observer.install()
        self.session.extra_kinds = list(self.observer.extra_kinds)
        self.installed = True

    def uninstall(self) -> None:
        self.observer.uninstall()
        self.hooks.uninstall()
        self.installed = False

    def failure_notes(self) -> list[str]:
        """What the hooks and the observer could not do, as x_notes lines."""
        return list(self.hooks.failures) + self.observer.failure_notes()

    def notes(self) -> list[str]:
        """Every x_notes line the trace gets, in order, once each."""
        return list(dict.fromkeys(list(self.session.notes) + self.failure_notes()))

    def write(self, path: str, *, producer: str, seed: int, config: dict, extensions: dict) -> dict:
        """The whole trace as it stands, failures in x_notes; its counts."""
        return self.session.write(path, producer=producer, seed=seed, config=config,
                                  extensions=extensions, extra_notes=self.failure_notes())


def torch_driver(name: str, device_type: str) -> CudagraphDriver:
    """A driver over PyTorch's Inductor and cudagraph trees (not installed):
    pool block counts on a CUDA device only."""
    compile_fx = torch_compat.compile_fx_module()
    manager_cls, node_cls = torch_compat.tree_classes()
    return CudagraphDriver.over(
        name,
        compile_fx_module=compile_fx,
        manager_cls=manager_cls,
        node_cls=node_cls,
        generation_fn=torch_compat.dynamo_generation,
        skip_log_modules=torch_compat.skip_log_modules(),
        get_block_count=torch_compat.block_counter() if device_type == "cuda" else None,
        dealloc_message_prefix=torch_compat.dealloc_prefix(manager_cls),
    )
