"""capsim_recorder: records real PyTorch runs as capsim traces.

It runs small PyTorch programs on the CPU and writes, per backward, the
autograd graph PyTorch built and what compiled autograd captured from it, in
the capsim-trace format (docs/trace-format.md). Run it as
`python -m capsim_recorder --out DIR` from traces/torch; see README.md.

The cudagraph half (`--cudagraphs`, GPU) records torch.compile(mode=
"reduce-overhead") programs: what the cudagraph-tree manager did, with the
compiled graphs translated into capsim function lines (cudagraph_*.py,
aten_translate.py).

Any program: `with capsim_recorder.record("run.jsonl"):` around the code,
or `python -m capsim_recorder run -o run.jsonl -- train.py ARGS` (recording.py,
launcher.py).

Importable without torch: trace_writer, aten_translate, cudagraph_events,
cudagraph_session, cudagraph_hooks.
"""

__version__ = "0.1.0"


def record(*args, **kwargs):
    """capsim_recorder.record(path, max_steps=..., max_bytes=...): records
    every one-root backward of the block (recording.py). Imports torch."""
    from .recording import record as _record

    return _record(*args, **kwargs)
