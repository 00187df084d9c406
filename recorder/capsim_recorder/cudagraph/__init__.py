"""The cudagraph half: what PyTorch's cudagraph trees did with a
torch.compile(mode="reduce-overhead") program, as a capsim trace.

  values.py        shared, torch-free: event kinds, ids, pointers, index maps, the sink interface
  observer.py      TreeObserver: patches the tree manager (wrappers in manager_wraps.py,
                   path_wraps.py, node_wraps.py) and reports to a sink
  hooks.py         the wrappers of Inductor's compile (_compile_fx_inner, cudagraphify)
  registry.py      names of live tensors (weak references)
  records.py       what the session keeps per graph, callable and action
  buffer.py        the buffered actions and events
  graphs.py        compiled graphs -> function lines (the translation's side)
  calls.py         calls of compiled graphs and of the trees -> call actions (the sink)
  output.py        the trace as written: plan (untranslated programs) and write
  session.py       Session: the above tied together for one recording (no torch import)
  driver.py        CudagraphDriver: the one driver of every cudagraph recording
                   (session, hooks, observer, failures into x_notes, writing)
  program_api.py   CudagraphRecorder: the program API (rec.backward, rec.optimizer_step, ...)
  runner.py        one built-in program's run, and all of them (--cudagraphs)
  programs.py      the built-in programs

Importable without torch: values, observer and its wraps, hooks, registry,
records, buffer, graphs, calls, output, session, driver.
"""
