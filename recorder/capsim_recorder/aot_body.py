"""The backward graph of a torch.compile region, as compiled autograd inlines it.

A region compiled by AOTAutograd appears in the autograd graph as one node,
CompiledFunctionBackward. Compiled autograd does not call it: it copies the
region's backward graph (`bw_module`) into its own graph between a prologue
(`call_aot_bwd_prologue`) and an epilogue that rebuilds tensor subclasses
(`make_subclass`), in AutogradCompilerInstance.proxy_call_aot_backward
(torch/_dynamo/compiled_autograd.py). The walk writes that graph with the node,
so that capsim can inline it the same way (docs/trace-format.md §5.1,
`aot_backward`):

  placeholders  how many inputs the backward graph takes (symints first)
  symints       how many of them compiled autograd replaces by its own sizes
  nodes         its call_function nodes in order: target and arguments, a
                reference {"node": k} numbering the placeholders 0..P-1 and
                the nodes P, P+1, ...
  outputs       what its output returns, in the same encoding
  epilogue      per grad of the node, {"subclass": true} (make_subclass over
                every output) or {"plain": i} (output i); null when the
                region has no subclass metadata (the outputs are the grads)

Entry points: node._forward_cls (the CompiledFunction), its metadata and
maybe_subclass_metadata, compiled_autograd.extract_bw_module, node.
_get_compiled_autograd_symints(): all internal.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from . import torch_compat


class UnsupportedRegion(Exception):
    """The region's backward holds something the trace format cannot express."""


def _encode(value: Any, index: dict) -> Any:
    if isinstance(value, torch.fx.Node):
        if value not in index:
            raise UnsupportedRegion(f"a reference to {value.name}, which is not before it")
        return {"node": index[value]}
    if isinstance(value, list):
        return [_encode(v, index) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, index) for v in value]}
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, (torch.device, torch.dtype, torch.layout, torch.memory_format)):
        return {"verbatim": str(value)}
    raise UnsupportedRegion(f"an argument of type {type(value).__name__}")


def aot_backward(node: Any) -> dict:
    subclass_creation_meta = torch_compat.subclass_creation_meta()
    compiled = torch_compat.forward_cls(node)
    if compiled.metadata.num_backward_tokens or compiled.metadata.is_rng_op_functionalized:
        raise UnsupportedRegion("a region with effect tokens or functionalized RNG")
    bw_module = torch_compat.extract_bw_module(compiled)
    index: dict = {}
    placeholders = 0
    nodes: list[dict] = []
    outputs: list = []
    for n in bw_module.graph.nodes:
        if n.op == "placeholder":
            if nodes:
                raise UnsupportedRegion("a placeholder after a call")
            index[n] = placeholders
            placeholders += 1
        elif n.op == "call_function":
            target = n.target if isinstance(n.target, str) else torch_compat.qualified_name(n.target)
            entry: dict = {"target": target, "args": [_encode(a, index) for a in n.args]}
            if n.kwargs:
                entry["kwargs"] = {k: _encode(v, index) for k, v in n.kwargs.items()}
            index[n] = placeholders + len(nodes)
            nodes.append(entry)
        elif n.op == "output":
            outputs = [_encode(v, index) for v in n.args[0]]
        else:
            raise UnsupportedRegion(f"a {n.op} node in the region's backward")
    epilogue = None
    meta = compiled.maybe_subclass_metadata
    if meta is not None:
        epilogue = [
            {"subclass": True} if isinstance(m, subclass_creation_meta) else {"plain": int(m.unwrapped_idx)}
            for m in meta.grad_input_metas
        ]
    return {
        "placeholders": placeholders,
        "symints": len(torch_compat.compiled_autograd_symints(node)),
        "nodes": nodes,
        "outputs": outputs,
        "epilogue": epilogue,
    }
