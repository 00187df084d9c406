"""Any script, recorded unchanged: `python -m capsim_recorder run`
(command.py) and capsim_recorder.record() (../recording.py).

  command.py          the `run` command line
  wraps.py            the one table of the plain API's wraps, for both forms of record()
  sink.py             what a wrap reports to: a form's session (Sink), idle by default
  patching.py         installing the wraps; PyTorch's calls vs the script's
  session.py          the compiled-autograd form's session and sink: limits, notes, failures
  optimizer.py        record()'s compiled optimizer: finding a script's steps (OptimizerWatch)
  script_names.py     names from the script's frames (`model_0_weight`, `opt`)
  cudagraphs.py       record(cudagraphs=True): CudagraphRecording, the sink, on the one cudagraph driver
  cudagraph_script.py the script's statements in the cudagraph form's actions
  reads.py            the script's reads of compiled outputs (a TorchDispatchMode)
  programs.py         the corpus's programs recorded this way (`launcher_*`)
"""
