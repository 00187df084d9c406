"""capsim_recorder: records real PyTorch runs as capsim traces.

It runs small PyTorch programs on the CPU and writes, per backward, the
autograd graph PyTorch built and what compiled autograd captured from it, in
the capsim-trace format (docs/trace-format.md). Run it as
`python -m capsim_recorder --out DIR` from traces/torch; see README.md.

Only trace_writer is importable without torch.
"""

__version__ = "0.1.0"
