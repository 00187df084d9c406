"""The compiled optimizer on the CPU: what Dynamo and Inductor decide when
torch.compile traces `opt.step()`.

  fields.py     create_optimizer fields, capsim's input order of a step, its events (shared)
  recorder.py   OptimizerRecorder: the programs' API, the hook on CompiledFxGraph.post_compile
  programs.py   the compiled-optimizer programs (`compiled_*`)
"""
