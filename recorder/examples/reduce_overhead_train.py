"""A small training loop under torch.compile(mode="reduce-overhead"), the kind
of script `python -m capsim_recorder run --cudagraphs` records unchanged (and
what tests/test_record_cudagraphs.py and scripts/gpu-check.sh record).
Runs on a GPU when there is one, else on the CPU.

    python reduce_overhead_train.py [--steps N] [--fail-at K] [--compiled-step]
        [--keep-outputs | --keep-rows] [--keep-grads] [--eager-head] [--rebind-data]
        [--two-losses]

--steps -1 loops until killed; --fail-at K raises at step K (a failing script);
--compiled-step uses Adam with its step compiled (else SGD stepped eagerly);
--keep-outputs keeps each step's compiled output and reads them all at the end
(on a GPU, the overwritten-output error E1: the mistake to catch);
--keep-rows keeps the first row of each (a view of another shape) instead;
--keep-grads zeroes the grads in place (zero_grad(set_to_none=False)), so each
backward accumulates into the previous one's output (E1 on a GPU too);
--eager-head puts an eager Linear after the compiled model, whose grads the
eager autograd engine makes; --rebind-data gives the first layer's weight new
storage each step (`p.data = p.data.clone()`: a static input that moves, so a
GPU re-records); --two-losses adds a second loss and runs both in one
torch.autograd.backward (a backward with two roots).
"""

import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--fail-at", type=int, default=None)
parser.add_argument("--compiled-step", action="store_true")
parser.add_argument("--keep-outputs", action="store_true")
parser.add_argument("--keep-rows", action="store_true")
parser.add_argument("--keep-grads", action="store_true")
parser.add_argument("--eager-head", action="store_true")
parser.add_argument("--rebind-data", action="store_true")
parser.add_argument("--two-losses", action="store_true")
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                            torch.nn.Linear(8, 2)).to(device)
head = torch.nn.Linear(2, 2).to(device) if args.eager_head else torch.nn.Identity()
params = list(model.parameters()) + list(head.parameters())
if args.compiled_step:
    opt = torch.optim.Adam(params, lr=0.01)
    opt_step = torch.compile(opt.step, mode="reduce-overhead")
else:
    opt = torch.optim.SGD(params, lr=0.1)
    opt_step = opt.step
batch = torch.zeros(3, 4, device=device)  # one input buffer, refilled each step
target = torch.ones(3, 2, device=device)
torch._dynamo.mark_static_address(batch)
step = torch.compile(model, mode="reduce-overhead")

kept = []
i = 0
while args.steps < 0 or i < args.steps:
    torch.compiler.cudagraph_mark_step_begin()
    batch.copy_(torch.randn(3, 4, device=device))
    out = head(step(batch))
    if args.keep_outputs:
        kept.append(out.detach())  # as one keeps a loss to log it
    if args.keep_rows:
        kept.append(out.detach()[0])
    loss = torch.nn.functional.mse_loss(out, target)
    if args.two_losses:
        torch.autograd.backward([loss, out.pow(2).mean()])
    else:
        loss.backward()
    opt_step()
    opt.zero_grad(set_to_none=not args.keep_grads)
    if args.rebind_data:
        model[0].weight.data = model[0].weight.data.clone()
    if args.fail_at == i:
        raise ValueError(f"step {i}: a failure of the script's own")
    if args.steps < 0:
        time.sleep(0.05)
    i += 1
if kept:
    print(f"kept outputs sum to {torch.stack(kept).sum().item():.4f}")
print(f"{i} steps on {device}, loss {loss.item():.4f}")
