"""capsim_recorder: records real PyTorch runs as capsim traces.

It runs small PyTorch programs on the CPU and writes, per backward, the
autograd graph PyTorch built and what compiled autograd captured from it, in
the capsim-trace format (docs/trace-format.md). Run it as
`python -m capsim_recorder --out DIR` from recorder; see README.md.

The cudagraph half (`--cudagraphs`, GPU) records torch.compile(mode=
"reduce-overhead") programs: what the cudagraph-tree manager did, with the
compiled graphs translated into capsim function lines (cudagraph/,
aten_translate.py).

Any program: `with capsim_recorder.record("run.jsonl"):` around the code,
or `python -m capsim_recorder run -o run.jsonl -- train.py ARGS` (recording.py,
launcher/).

Every private PyTorch entry point the recorder touches is in torch_compat.py,
with the releases that have it and a self-check each recording runs first.

Importable without torch: trace_writer, aten_translate, torch_compat, and
cudagraph's values, observer, hooks, session and driver.
"""

__version__ = "0.1.0"


def record(*args, **kwargs):
    """capsim_recorder.record(path, max_steps=..., max_bytes=...): records
    every one-root backward of the block (recording.py). Imports torch."""
    from .recording import record as _record

    return _record(*args, **kwargs)
