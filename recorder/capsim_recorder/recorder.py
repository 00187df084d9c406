"""One program's recording session: the trace writer, the graph walk and the
compiled-autograd capture tied together behind `rec.backward(loss)`.

Per backward k it writes
  action autograd_graph      the graph walked from loss.grad_fn (before the
                             backward frees the saved tensors)
  action compiled_backward   the backward, run under compiled autograd
  event  ca_graph            whether it captured, the captured graph's targets,
                             and the verbose log's cache-miss line (x_message)
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import torch

from . import graph_walk, operands, torch_compat
from .annotations import Annotations
from .capture import CompiledAutogradCapture
from .miss_reasons import miss_reason
from .trace_writer import MAX_LINE_BYTES, LineTooLong, TraceWriter, torch_profile_of

PRODUCER = "pytorch"
OBSERVES = ["ca_graph"]
# What the built-in programs need of PyTorch's internals (torch_compat.self_check).
NEEDS = (torch_compat.AUTOGRAD, torch_compat.PROGRAMS)
SEED = 0
# The command the header names: fixed rather than sys.argv, so that a trace
# does not depend on how the recorder was invoked (the bytes must repeat).
COMMAND = "python -m capsim_recorder --out data/corpus/torch/{release} --program {name}"


def release() -> str:
    """The release without its local build tag: "2.11.0" for "2.11.0+cu130"
    (the corpus keeps one folder per release)."""
    return torch.__version__.split("+")[0]


def _inline_inbuilt_nn_modules(dynamo_config: Any) -> bool:
    """The setting, read without the FutureWarning 2.15 gives for it (it is
    deprecated there and always True)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return bool(dynamo_config.inline_inbuilt_nn_modules)


def torch_config() -> dict[str, Any]:
    """The header's config: PyTorch's live settings where PyTorch has them."""
    dynamo_config = torch_compat.dynamo_config()
    inductor_config = torch_compat.inductor_config()
    triton = inductor_config.triton
    config = {
        "inline_inbuilt_nn_modules": _inline_inbuilt_nn_modules(dynamo_config),
        "cudagraph_support_input_mutation": bool(triton.cudagraph_support_input_mutation),
        "cudagraph_unexpected_rerecord_limit": int(triton.cudagraph_unexpected_rerecord_limit),
        "skip_cudagraph_warmup": bool(triton.skip_cudagraph_warmup),
        "force_cudagraphs_warmup": bool(triton.force_cudagraphs_warmup),
        "slow_path_cudagraph_asserts": bool(triton.slow_path_cudagraph_asserts),
        # capsim-only settings: PyTorch has no such switch, so always off.
        "zero_grad_static_error": False,
        "plain_api": False,
        "poison_freed": False,
    }
    # The release's tree-manager rules, unless classic (docs/cudagraph-trees.md).
    profile = torch_profile_of(torch.__version__)
    if profile is not None:
        config["torch_profile"] = profile
    return config


def reset_torch_state(seed: int) -> None:
    """Makes a program's trace independent of the programs run before it in
    the same process: Dynamo's caches (which include compiled autograd's
    cache and graph counter), the counters, and the RNG."""
    torch.compiler.reset()  # the public spelling of torch._dynamo.reset()
    torch_compat.counters().clear()
    torch.manual_seed(seed)


class Recorder:
    """What a program gets: `rec.notes` for hooks and CopySlices annotations,
    `rec.backward(loss)` for each backward, `rec.compiled_autograd()` to run a
    torch.compile forward inside the compiled-autograd context."""

    def __init__(self, writer: TraceWriter, capture: CompiledAutogradCapture) -> None:
        self.writer = writer
        self.capture = capture
        self.notes = Annotations()
        self.backwards = 0
        self.captures = 0
        self._outer_dynamic: Optional[bool] = None

    @contextlib.contextmanager
    def compiled_autograd(self, dynamic: bool = True) -> Iterator[None]:
        # Remember the flag: a backward inside this context runs with it, and
        # the compiled_backward action must say so.
        self._outer_dynamic = dynamic
        try:
            with self.capture.enabled(dynamic):
                yield
        finally:
            self._outer_dynamic = None

    def backward(self, loss: torch.Tensor, dynamic: bool = True, **kwargs: Any) -> None:
        if self._outer_dynamic is not None and self._outer_dynamic != dynamic:
            raise ValueError("backward(dynamic=...) differs from the enclosing compiled_autograd()")
        index = self.write_graph(graph_walk.walk(loss, self.notes), dynamic)
        # Compiled autograd's compile must not see the operand watch (operands.py).
        result = operands.run_aside(lambda: self.capture.backward(loss, dynamic=dynamic, **kwargs))
        self.write_capture(index, result)

    def write_graph(self, graph: dict[str, Any], dynamic: bool) -> int:
        """The backward's two actions: its autograd graph (graph_walk.walk,
        taken before the backward frees the saved tensors) and the
        compiled_backward that names it. Returns the latter's index."""
        name = f"g{self.backwards}"
        self.writer.action(
            "autograd_graph",
            {"name": name, "root": graph["root"], "tensors": graph["tensors"], "nodes": graph["nodes"]},
        )
        return self.writer.action(
            "compiled_backward", {"graph": name, "dynamic": bool(dynamic)}
        )

    def write_capture(self, index: int, result: Any, on_note: Optional[Any] = None) -> None:
        """The backward's ca_graph event (`result`: capture.BackwardResult).
        With `on_note`, an event over the format's line limit is written
        without `fx_nodes`, then without `targets` and `uses` (replay
        compares what is there), each told to on_note(text); without it
        (the corpus's programs) such an event is an error."""
        k = self.backwards
        event: dict[str, Any] = {"backward": k, "captured": result.captured}
        if result.captured:
            event["targets"] = result.targets
            event["uses"] = result.uses
            event["fx_nodes"] = result.graph
        reason = miss_reason(result.message) if result.captured else None
        if reason is not None:
            event["reason"] = reason
        if result.message is not None:
            event["x_message"] = result.message
        for drop in ((), ("fx_nodes",), ("targets", "uses"), ("x_message",)):
            for key in drop:
                event.pop(key, None)
            if drop and on_note is not None:
                on_note(f"backward {k}: its ca_graph event leaves out {' and '.join(drop)}: the"
                        f" line would pass the trace format's limit of {MAX_LINE_BYTES} bytes")
            try:
                self.writer.event(index, "ca_graph", event)
                break
            except LineTooLong:
                if on_note is None or drop == ("x_message",):
                    raise
        self.backwards += 1
        self.captures += int(result.captured)


def record_program(program: Any, path: str) -> tuple[int, int]:
    """Runs one registered program into the trace at `path`; returns
    (backwards, captures). On an exception no partial trace is left
    (a file already at `path` stays as it was)."""
    reset_torch_state(SEED)
    capture = CompiledAutogradCapture()
    extensions = {
        "x_torch_version": torch.__version__,
        "x_device": "cpu",
        "x_command": COMMAND.format(release=release(), name=program.name),
    }
    missing = torch_compat.announce(NEEDS)
    if missing:
        extensions["x_notes"] = missing
    try:
        with TraceWriter(path) as writer:
            writer.header(
                producer=PRODUCER,
                name=program.name,
                seed=SEED,
                config=torch_config(),
                observes=OBSERVES,
                extensions=extensions,
            )
            rec = Recorder(writer, capture)
            # The dtypes of operands the nodes do not keep (`h + 1`: operands.py).
            with operands.watching():
                program.run(rec)
    finally:
        capture.close()
    return rec.backwards, rec.captures
