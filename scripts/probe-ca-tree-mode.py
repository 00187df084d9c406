#!/usr/bin/env python3
"""How cudagraph trees see a compiled-autograd backward, on a real GPU.

capsim models compiled autograd's graph, compiled with mode="reduce-overhead",
as a tree function of mode INFERENCE whose call is a new torch.compile
invocation (docs/compiled-autograd.md, "In a program"). Both come from reading
the sources, not from a run. This probe prints what PyTorch does in a training
loop of a small MLP (eager forward, loss.backward() under compiled autograd,
compiled SGD), with and without cudagraph_mark_step_begin():
  - per step, how much GenerationTracker.generation moved across the backward
    and across the optimizer step, and where the grads are (a grad that is a
    replayed tree output keeps its address);
  - every tree function's CompilationMode (CUDAGraphTreeManager.id_to_mode);
  - the recorded roots, the cudagraph skips and the tree's counters.
Run by scripts/gpu-check.sh (its output goes next to the run's logs); needs a
CUDA device and exits 77 without one. Any exception is printed, not raised.
"""
import sys
import traceback


def loop(torch, mark_step, steps=5):
    from torch._dynamo import compiled_autograd
    from torch._dynamo.mutation_guard import GenerationTracker
    from torch._dynamo.utils import counters
    from torch._inductor import cudagraph_trees

    dev = "cuda"
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    w1 = torch.nn.Parameter(torch.randn(8, 16, device=dev))
    w2 = torch.nn.Parameter(torch.randn(16, 4, device=dev))
    opt = torch.optim.SGD([w1, w2], lr=0.01)
    step_fn = torch.compile(opt.step, mode="reduce-overhead")

    def compiler_fn(gm):
        return torch.compile(gm, mode="reduce-overhead", fullgraph=True)

    enable = getattr(compiled_autograd, "_enable", None) or compiled_autograd.enable
    print(f"== mark_step_begin={mark_step}")
    for step in range(steps):
        if mark_step:
            torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(4, 8, device=dev)
        loss = (torch.relu(x @ w1) @ w2).sum()
        g0 = GenerationTracker.generation
        with enable(compiler_fn):
            loss.backward()
        g1 = GenerationTracker.generation
        # A grad that is a replayed output keeps its address from step to step.
        grad_ptrs = [hex(p.grad.data_ptr()) for p in (w1, w2)]
        step_fn()
        g2 = GenerationTracker.generation
        opt.zero_grad(set_to_none=True)
        print(f"step {step}: generation +{g1 - g0} across the backward, +{g2 - g1} across "
              f"opt.step; .grad at {grad_ptrs}")
    torch.cuda.synchronize()
    mgr = cudagraph_trees.get_container(torch.cuda.current_device()).tree_manager
    for fid, mode in sorted(mgr.id_to_mode.items(), key=lambda kv: kv[0].id):
        print(f"function {fid.id}: mode {getattr(mode, 'name', mode)}")
    roots = sum(len(v) for v in getattr(mgr, "roots", {}).values())
    print(f"roots: {roots}; debug_fail_counter {mgr.debug_fail_counter}; "
          f"debug_checkpointing_counter {mgr.debug_checkpointing_counter}")
    print(f"cudagraph skips: {counters['inductor'].get('cudagraph_skips', 0)}")
    print(f"compiled autograd captures: {counters['compiled_autograd'].get('captures', 0)}")


def main():
    try:
        import torch
    except ImportError as e:
        print(f"probe-ca-tree-mode: no torch ({e})")
        return 77
    if not torch.cuda.is_available():
        print("probe-ca-tree-mode: no CUDA device")
        return 77
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    status = 0
    for mark_step in (True, False):
        try:
            loop(torch, mark_step)
        except Exception:  # a probe reports, it does not stop
            print(f"mark_step_begin={mark_step}: raised")
            traceback.print_exc(file=sys.stdout)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
