"""Any script, recorded unchanged: `python -m capsim_recorder run`
(command.py) and capsim_recorder.record() (../recording.py).

  command.py          the `run` command line
  patching.py         installing the wraps of the plain API; PyTorch's calls vs the script's
  optimizer.py        record()'s compiled optimizer: finding a script's steps (OptimizerWatch)
  script_names.py     names from the script's frames (`model_0_weight`, `opt`)
  cudagraphs.py       record(cudagraphs=True): CudagraphRecording, on the one cudagraph driver
  cudagraph_script.py the script's statements in the cudagraph form's actions
  cudagraph_wraps.py  the wraps of the plain API for the cudagraph form
  reads.py            the script's reads of compiled outputs (a TorchDispatchMode)
  programs.py         the corpus's programs recorded this way (`launcher_*`)
"""
