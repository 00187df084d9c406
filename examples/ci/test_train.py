"""The worked example's check (docs/ci-recipe.md): train.py's loop, run on
a CPU inside capsim's recorder, must not re-record a CUDA graph, copy
anything into its forward graph at a replay, or raise an error on a GPU.

`fwd0` is the loop's compiled forward, as the trace names it (`bwd0` is its
backward: the loss's grad, one float, is copied into it at every replay,
which no change of the script avoids, so the copy limit is the forward's).

CI_EXAMPLE_VARIANT picks train.py's variant: `good` (the default) passes;
`fresh-batch` and `kept-loss`, each one line away, fail with capsim's
explanation.
"""

import os

import pytest

from train import train

VARIANT = os.environ.get("CI_EXAMPLE_VARIANT", "good")


@pytest.mark.capsim(max_rerecords=0, errors=0, max_copy_bytes_per_call={"fwd0": 0})
def test_training_loop() -> None:
    losses = train(steps=6, variant=VARIANT)
    assert len(losses) == 6
