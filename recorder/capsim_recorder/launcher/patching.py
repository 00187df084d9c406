"""The mechanics under the wraps of the plain PyTorch API (wraps.py, whose
table both forms of record() share): installing and restoring them,
telling PyTorch's own calls from the script's, the one-root backward capsim
models, and the shape of the descriptor and zero_grad wraps
(nn.Parameter.grad and .data, the zero_grad methods).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator, Optional


def one_root(tensors: Any, grad_tensors: Any) -> Optional[tuple[Any, Any]]:
    """(root, its gradient) when torch.autograd.backward got one tensor."""
    import torch

    if isinstance(tensors, torch.Tensor):
        roots = [tensors]
    elif isinstance(tensors, (list, tuple)) and len(tensors) == 1:
        roots = list(tensors)
    else:
        return None
    if grad_tensors is None or isinstance(grad_tensors, torch.Tensor):
        return roots[0], grad_tensors
    if isinstance(grad_tensors, (list, tuple)) and len(grad_tensors) == 1:
        return roots[0], grad_tensors[0]
    return None


def called_by_torch(frame: Any) -> bool:
    """Whether `frame` is PyTorch's own code (AOTAutograd traces its joint
    graph with torch.autograd.grad: not a call of the script's)."""
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return module == "torch" or module.startswith("torch.")


@contextlib.contextmanager
def patched(targets: list) -> Iterator[None]:
    """Installs the wraps of `targets` ((owner, attribute, wrapper factory)); restores
    the originals on exit. A class attribute that is inherited
    (BackwardCFunction's register_hook comes from _FunctionBase) is set on the
    class and deleted again."""
    saved = []
    try:
        for owner, attr, wrap in targets:
            own = attr in vars(owner)
            original = getattr(owner, attr)
            saved.append((owner, attr, own, original))
            setattr(owner, attr, wrap(original))
        yield
    finally:
        for owner, attr, own, original in reversed(saved):
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)


def parameter_grad_property(original: Any, on_set_none: Callable[[Any, Any, Any], Any]) -> Any:
    """nn.Parameter.grad (PyTorch's descriptor) wrapped in a property, so
    that the script's `p.grad = None` reaches the recorder: `on_set_none(p,
    caller frame, set_it)` handles it and returns what to return, or NOT_OURS
    to let the assignment through unrecorded (PyTorch's own, or no
    recording)."""

    def get(self):
        return original.__get__(self)

    def set_grad(self, value):
        if value is None:
            result = on_set_none(self, sys._getframe(1), lambda: original.__set__(self, None))
            if result is not NOT_OURS:
                return result
        return original.__set__(self, value)

    def delete(self):
        original.__delete__(self)

    return property(get, set_grad, delete, getattr(original, "__doc__", None))


def parameter_data_property(original: Any, on_set: Callable[[Any, Any, Any, Any], Any]) -> Any:
    """nn.Parameter.data (PyTorch's descriptor) wrapped in a property, so
    that the script's `p.data = t` reaches the recorder: `on_set(p, caller
    frame, new, set_it)` handles it (calling set_it() to rebind) and
    returns what to return, or NOT_OURS to let it through unrecorded."""

    def get(self):
        return original.__get__(self)

    def set_data(self, value):
        result = on_set(self, sys._getframe(1), value, lambda: original.__set__(self, value))
        if result is not NOT_OURS:
            return result
        return original.__set__(self, value)

    return property(get, set_data, None, getattr(original, "__doc__", None))


def zero_grad_wrap(original: Any, on_call: Callable[[Any, Any, bool, Any], Any]) -> Any:
    """A `zero_grad(set_to_none=True)` method (nn.Module's or
    torch.optim.Optimizer's) wrapped: `on_call(self, caller frame,
    set_to_none, run)` handles the call and returns what to return, or
    NOT_OURS (without having called `run`) to let it run unrecorded."""

    def zero_grad(self, set_to_none: bool = True):
        result = on_call(self, sys._getframe(1), set_to_none, lambda: original(self, set_to_none))
        if result is NOT_OURS:
            return original(self, set_to_none)
        return result

    zero_grad.__wrapped__ = original  # type: ignore[attr-defined]
    return zero_grad


NOT_OURS = object()
