"""The dtypes of a forward op's first two operands, kept on its autograd node.

A node keeps `self_scalar_type` / `other_scalar_type` (AddBackward0,
SubBackward0, DivBackward0, ...) for the operands the forward was given, and
compiled autograd passes them to the captured graph. When an operand is
neither saved nor an edge (a Python number, as in `h + 1`, or a tensor that
needs no grad), the node itself no longer says what it was: a number and a
no-grad tensor look the same from the node. So while a recorded forward runs,
`watching()` pushes a TorchFunctionMode that, after each call whose result
has a grad_fn that the call made, puts the dtypes of the call's first two
positional arguments into `grad_fn.metadata[KEY]`: a tensor's dtype, and for
a Python number the one PyTorch wraps it as (bool: bool, int: int64, float:
float64, complex: complex128); anything else is None. node_fields.py reads
them back (`operand_dtype`) for an operand it cannot see otherwise.

The script is never harmed: the op runs exactly as it would (its result and
its exceptions are the op's own), the mode's own failures are swallowed, and
it steps aside while Dynamo (or export) traces, so that what torch.compile
compiles does not change. A node whose metadata cannot be set is skipped.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator, Optional

import torch
from torch.overrides import TorchFunctionMode

from . import torch_compat

KEY = "capsim_operand_dtypes"


def _number_dtypes() -> dict:
    # By exact type: bool is an int, and a numpy scalar is left out (None).
    return {bool: torch.bool, int: torch.int64, float: torch.float64,
            complex: torch.complex128}


_NUMBERS = _number_dtypes()


def _compiling() -> bool:
    """Whether Dynamo or export is tracing (constant-folded to True by Dynamo)."""
    return torch.compiler.is_compiling() or torch.compiler.is_dynamo_compiling()


def _dtype_of(arg: Any) -> Optional[Any]:
    if isinstance(arg, torch.Tensor):
        return arg.dtype
    return _NUMBERS.get(type(arg))


def _grad_fns(args: tuple) -> list:
    """The grad_fns the tensor arguments had before the call."""
    return [a.grad_fn for a in args if isinstance(a, torch.Tensor)]


def _note(out: Any, args: tuple, before: list) -> None:
    if not isinstance(out, torch.Tensor):
        return
    fn = out.grad_fn
    # Only a node the call made: not one it handed back (`t.contiguous()`,
    # `t.to(t.dtype)` return t itself) nor one made before the mode was pushed.
    if fn is None or any(fn is b for b in before):
        return
    dtypes = [_dtype_of(a) for a in args[:2]]
    fn.metadata.setdefault(KEY, dtypes + [None] * (2 - len(dtypes)))


def _unwrapped(func: Any) -> Any:
    """The PyTorch method behind one of the recorder's own wraps of the plain
    API (recording.py): `Tensor.register_hook` and `Tensor.backward` hand
    themselves, as looked up then (the wrap), to a mode; running the wrap
    again would note a hook twice. Anything else is `func` itself."""
    try:
        inner = getattr(func, "__wrapped__", None)
        if inner is not None and str(getattr(func, "__module__", "")).startswith("capsim_recorder."):
            return inner
    except Exception:  # an object with an odd __getattr__: it is not one of ours
        pass
    return func


class OperandDtypes(TorchFunctionMode):
    """Notes operand dtypes on the nodes the script's calls make, while
    `wanted()` says so; otherwise (and while compiling) only runs the call."""

    def __init__(self, wanted: Optional[Callable[[], bool]] = None) -> None:
        super().__init__()
        self.wanted = wanted
        self.muted = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if _compiling():
            return func(*args, **kwargs)
        func = _unwrapped(func)
        if self.muted:
            return func(*args, **kwargs)
        before = None
        try:
            if torch.is_grad_enabled() and (self.wanted is None or self.wanted()):
                before = _grad_fns(args)
        except Exception:  # the recorder's part only: the op runs as it would
            before = None
        out = func(*args, **kwargs)
        if before is not None:
            try:
                _note(out, args, before)
            except Exception:  # a node without settable metadata: skipped
                pass
        return out


def operand_dtype(node: Any, index: int) -> Optional[Any]:
    """The dtype the forward's argument `index` (0: self, 1: other) had, as
    noted by a watch, or None."""
    try:
        noted = node.metadata.get(KEY)
        dtype = noted[index] if isinstance(noted, list) and index < len(noted) else None
    except Exception:  # a node without metadata (a stand-in), or no list
        return None
    return dtype if isinstance(dtype, torch.dtype) else None


def run_aside(call: Callable[[], Any]) -> Any:
    """`call()` with the watch off the mode stack, when it is on top: a
    torch.compile'd call (Dynamo traces any mode on the stack, and a
    traced mode changes the graph: `0.1 / t` becomes `t.reciprocal() * 0.1`)
    and a backward (compiled autograd compiles its graph) must not see it.
    Put back afterwards unless the stack changed meanwhile (then muted)."""
    if _compiling():
        return call()
    mode = below = None
    try:
        top = torch_compat.current_function_mode()
        if isinstance(top, OperandDtypes) and not top.muted:
            top.__exit__(None, None, None)
            mode, below = top, torch_compat.current_function_mode()
    except Exception:  # the recorder's part only: the call runs as it would
        pass
    try:
        return call()
    finally:
        if mode is not None:
            try:
                if torch_compat.current_function_mode() is below:
                    mode.__enter__()
                else:
                    mode.muted = True
            except Exception:
                mode.muted = True


def forward_aside(compiled: Any) -> None:
    """A torch.compile'd module's compiled forward (its own `forward`
    attribute, which its __call__ runs) wrapped in run_aside."""
    try:
        forward = vars(compiled).get("forward")
        if not callable(forward) or getattr(forward, "_capsim_aside", False):
            return

        @functools.wraps(forward)
        def aside_forward(*args: Any, **kwargs: Any) -> Any:
            return run_aside(lambda: forward(*args, **kwargs))

        aside_forward._capsim_aside = True  # type: ignore[attr-defined]
        compiled.forward = aside_forward
    except Exception:  # left as it was: Dynamo then sees the watch
        pass


@contextlib.contextmanager
def watching(wanted: Optional[Callable[[], bool]] = None) -> Iterator[Optional[OperandDtypes]]:
    """Pushes an OperandDtypes for the block (None when it cannot be pushed:
    the block runs without). On exit it is popped if it is on top, else (a mode
    the script pushed since is still on) it stays, muted."""
    mode: Optional[OperandDtypes] = None
    try:
        mode = OperandDtypes(wanted)
        mode.__enter__()
    except Exception:
        mode = None
    try:
        yield mode
    finally:
        if mode is not None:
            mode.muted = True
            try:
                if torch_compat.current_function_mode() is mode:
                    mode.__exit__(None, None, None)
            except Exception:
                pass


def _skip_own_frames() -> None:
    """Code that runs a compiled function's eager parts (after a graph break,
    or the attribute reads of its compiled code) calls the mode's methods
    eagerly, where Dynamo would compile each of their frames as code of the
    script's; they are Dynamo's to inline when it traces, never to compile."""
    for fn in (OperandDtypes.__torch_function__, _compiling, _unwrapped, _grad_fns, _note,
               _dtype_of, run_aside):
        try:
            torch_compat.dynamo_skip_code(fn.__code__)
        except Exception:  # a release without it: Dynamo compiles them, as any code
            pass


_skip_own_frames()
