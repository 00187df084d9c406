"""Why compiled autograd captured a backward again, classified from its
verbose log's cache-miss line, so that capsim reads a `reason` on the
ca_graph event (docs/trace-format.md, `ca_graph`) rather than PyTorch's
English.

PyTorch writes the line in torch/csrc/dynamo/python_compiled_autograd.cpp
(the cache lookup, under the compiled_autograd_verbose logger): "Cache miss
due to new autograd node: NAME (NodeCall k) with key size ..." when a node
or its key differs at a position, and "Cache miss due to N changed tensor
shapes ..." when sizes held static changed. A new node that is an
AccumulateGrad means a grad's state changed (its key holds whether .grad is
set: torch/csrc/autograd/functions/accumulate_grad.cpp, compiled_args). The
reasons are capsim's keys (sim/core/decisions.def): `accumulate_grad` of
ca_graph, `changed_shapes` and `new_autograd_node` of ca_cache_miss. No torch
import.
"""

from __future__ import annotations

from typing import Optional

# Each reason with the words of the line that give it, in the order tried.
REASONS = (
    ("accumulate_grad", "AccumulateGrad"),
    ("changed_shapes", "changed tensor shapes"),
    ("new_autograd_node", "new autograd node"),
)


def miss_reason(message: Optional[str]) -> Optional[str]:
    """The reason of a cache-miss line, or None for one it does not know
    (a release that words it otherwise): capsim then explains the capture
    without a cause."""
    if not message:
        return None
    for reason, words in REASONS:
        if words in message:
            return reason
    return None
