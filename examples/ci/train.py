"""A small training loop under torch.compile(mode="reduce-overhead"): the
worked example of docs/ci-recipe.md. On a CPU it takes a few seconds (most
of them Inductor's compile); test_train.py checks, with capsim, what a GPU
would do with it.

    python train.py [--variant good|fresh-batch|kept-loss] [--steps N]

The good loop refills one input buffer, marked static, so its CUDA graph
takes the batch by address and copies nothing in; it logs each loss as a
Python float. Each other variant is one line away from it:

  fresh-batch  `batch = data[step].clone()`: a new tensor each step, which
               every replay of the graph copies in (the copy the check forbids)
  kept-loss    `losses.append(loss.detach())`: the loss tensor kept and read
               after the next steps have overwritten it (on a GPU, PyTorch's
               "accessing tensor output of CUDAGraphs that has been
               overwritten by a subsequent run")
"""

import argparse

import torch

VARIANTS = ("good", "fresh-batch", "kept-loss")


def train(steps: int = 6, variant: str = "good") -> list[float]:
    """`steps` SGD steps of a small MLP on fixed data; the losses."""
    if variant not in VARIANTS:
        raise ValueError(f"variant: one of {', '.join(VARIANTS)}, got {variant!r}")
    torch.manual_seed(0)  # the same data and weights every run
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(steps, 3, 4)
    target = torch.ones(3, 2)
    batch = torch.zeros(3, 4)  # one input buffer, refilled each step
    # Static inputs are baked into the CUDA graph by address: never copied in.
    torch._dynamo.mark_static_address(batch)
    torch._dynamo.mark_static_address(target)

    @torch.compile(mode="reduce-overhead")
    def loss_of(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (model(x) - y).pow(2).mean()

    losses = []
    for step in range(steps):
        if variant == "fresh-batch":
            batch = data[step].clone()
        else:
            batch.copy_(data[step])
        loss = loss_of(batch, target)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if variant == "kept-loss":
            losses.append(loss.detach())
        else:
            losses.append(loss.item())
    return [float(loss) for loss in losses]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="good")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    losses = train(args.steps, args.variant)
    print(f"{len(losses)} steps, last loss {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
