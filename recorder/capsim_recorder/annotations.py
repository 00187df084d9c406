"""Helpers through which programs register hooks and name CopySlices' inner node.

PyTorch keeps a node's hooks and CopySlices' wrapped function in C++ and does
not expose them for reading from Python (there is no public list of the hooks
on a grad_fn, and CopySlices::fn is not bound). So the recorder cannot observe
them by walking the graph. Instead the programs call these helpers, which do
the real registration with PyTorch's public API and remember what they did, and
the graph walk asks them: hooks_for(node), inner_for(node). Under
capsim_recorder.record() the plain API is wrapped where PyTorch lets it be
(recording.py), and those wraps note what they registered through the note_*
methods below; a hook removed through its handle is left out from then on.

Hook kinds, as the trace names them:
  tensor_pre_hook     tensor.register_hook; on a non-leaf it lands on the
                      tensor's grad_fn, on a leaf on its AccumulateGrad
  pre_hook            grad_fn.register_prehook
  post_hook           grad_fn.register_hook
  post_acc_grad_hook  leaf.register_post_accumulate_grad_hook (AccumulateGrad)
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import torch


class Annotations:
    """What one program registered, kept for the whole program run.

    Nodes are matched by identity: PyTorch hands out one Python object per
    autograd node while the node lives, and we hold a reference to it so that
    its id cannot be reused by a later graph's node.
    """

    def __init__(self) -> None:
        # A global registration counter, so hooks of different kinds (and those
        # kept on a leaf versus on a node) merge back into registration order.
        self._order = itertools.count()
        # (node, kind, order, handle): the handle tells whether it was removed.
        self._node_hooks: list[tuple[Any, str, int, Any]] = []
        # Hooks on leaves live on the leaf tensor in PyTorch and outlast one
        # graph; we attach them to whichever AccumulateGrad has that variable.
        self._leaf_hooks: list[tuple[torch.Tensor, str, int, Any]] = []
        self._inner: list[tuple[Any, str]] = []
        self._geometry: list[tuple[Any, dict, dict]] = []
        self._subclass_inputs: list[tuple[Any, int]] = []
        self._classes: list[type] = []
        self._inner_saved: list[tuple[Any, dict]] = []
        # Set while a helper below registers: the wrapped API then notes nothing
        # (the helper notes it once itself).
        self.registering = False

    # -- registration (what the programs call) --------------------------------

    def tensor_hook(self, tensor: torch.Tensor, fn: Callable) -> Any:
        return self._register(lambda: tensor.register_hook(fn),
                              lambda h: self.note_tensor_hook(tensor, h))

    def pre_hook(self, node: Any, fn: Callable) -> Any:
        return self._register(lambda: node.register_prehook(fn),
                              lambda h: self.note_node_hook(node, "pre_hook", h))

    def post_hook(self, node: Any, fn: Callable) -> Any:
        return self._register(lambda: node.register_hook(fn),
                              lambda h: self.note_node_hook(node, "post_hook", h))

    def post_accumulate_grad_hook(self, leaf: torch.Tensor, fn: Callable) -> Any:
        return self._register(lambda: leaf.register_post_accumulate_grad_hook(fn),
                              lambda h: self.note_post_accumulate_grad_hook(leaf, h))

    def _register(self, register: Callable[[], Any], note: Callable[[Any], None]) -> Any:
        self.registering = True
        try:
            handle = register()
        finally:
            self.registering = False
        note(handle)
        return handle

    # -- noting a registration made elsewhere (recording.py's wraps) -------------

    def note_tensor_hook(self, tensor: torch.Tensor, handle: Any) -> None:
        """tensor.register_hook: on a leaf the hook stays with the tensor, on a
        non-leaf it lands on the tensor's grad_fn."""
        if tensor.grad_fn is None:
            self._leaf_hooks.append((tensor, "tensor_pre_hook", next(self._order), handle))
        else:
            self._node_hooks.append((tensor.grad_fn, "tensor_pre_hook", next(self._order), handle))

    def note_node_hook(self, node: Any, kind: str, handle: Any) -> None:
        """grad_fn.register_prehook ("pre_hook") or register_hook ("post_hook")."""
        assert kind in ("pre_hook", "post_hook"), kind
        self._node_hooks.append((node, kind, next(self._order), handle))

    def note_post_accumulate_grad_hook(self, leaf: torch.Tensor, handle: Any) -> None:
        self._leaf_hooks.append((leaf, "post_acc_grad_hook", next(self._order), handle))

    def copyslices_inner(
        self,
        node: Any,
        inner_name: str,
        base: torch.Tensor | None = None,
        view: torch.Tensor | None = None,
        saved: dict[str, torch.Tensor | None] | None = None,
    ) -> None:
        """States which node a CopySlices wraps (e.g. "MulBackward0") and,
        optionally, what CopySlices keeps that Python cannot read: the base
        and the view it was made from (their geometries) and the inner node's
        saved tensors by field name ({"other": scale, "self": None})."""
        if type(node).__name__ != "CopySlices":
            raise ValueError(f"copyslices_inner on a {type(node).__name__}, not CopySlices")
        self._inner.append((node, inner_name))
        if base is not None and view is not None:
            self._geometry.append((node, _geometry(base), _geometry(view)))
        if saved is not None:
            self._inner_saved.append((node, dict(saved)))

    def subclass_output(self, tensor: torch.Tensor) -> None:
        """States that `tensor` (an output of a node, e.g. of a compiled
        region) is a tensor subclass: its grad_fn's InputMetadata for it says
        is_tensor_subclass, which Python cannot read. The loss needs no call:
        the walk sees it."""
        if tensor.grad_fn is None:
            raise ValueError("subclass_output on a tensor without grad_fn")
        self._subclass_inputs.append((tensor.grad_fn, int(tensor.output_nr)))

    # -- queries (what the graph walk calls) ----------------------------------

    def function_ordinal(self, node_class: type) -> int:
        """The ordinal of a Function's backward class in this run, in order of
        first appearance (a class made anew each step gets a new one)."""
        for i, c in enumerate(self._classes):
            if c is node_class:
                return i
        self._classes.append(node_class)  # held, so that its id is not reused
        return len(self._classes) - 1

    def is_subclass_input(self, node: Any, input_nr: int) -> bool:
        return any(n is node and i == input_nr for n, i in self._subclass_inputs)

    def hooks_for(self, node: Any) -> list[str]:
        """The hooks on `node` still registered, in registration order."""
        found = [(order, kind) for n, kind, order, h in self._node_hooks
                 if n is node and _registered(h)]
        variable = getattr(node, "variable", None) if type(node).__name__ == "AccumulateGrad" else None
        if variable is not None:
            found += [(order, kind) for t, kind, order, h in self._leaf_hooks
                      if t is variable and _registered(h)]
        return [kind for _, kind in sorted(found)]

    def inner_for(self, node: Any) -> str | None:
        for n, name in self._inner:
            if n is node:
                return name
        return None

    def geometry_for(self, node: Any) -> tuple[dict, dict] | None:
        for n, base, view in self._geometry:
            if n is node:
                return base, view
        return None

    def inner_saved_for(self, node: Any) -> dict | None:
        for n, saved in self._inner_saved:
            if n is node:
                return saved
        return None


def _registered(handle: Any) -> bool:
    """Whether a hook's RemovableHandle was not removed: PyTorch's handle
    keeps a weak reference to the dict the hook lives in, and remove()
    deletes the hook's id from it. A handle of another kind counts as
    registered."""
    ref = getattr(handle, "hooks_dict_ref", None)
    if ref is None:
        return True
    hooks = ref()
    return hooks is not None and handle.id in hooks


def _geometry(t: torch.Tensor) -> dict:
    return {
        "sizes": [int(s) for s in t.shape],
        "strides": [int(s) for s in t.stride()],
        "storage_offset": int(t.storage_offset()),
    }
