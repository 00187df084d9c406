#!/usr/bin/env bash
# Regenerates the pictures of docs/gallery.md from the trace corpus, with
# capsim's own renderer (render/, libgvc in-process). `make docs-images` runs
# it after a build. Every picture is a PNG with its DOT beside it; the DOT is
# byte-identical from run to run (a test checks the renderer), the PNG only
# as stable as the installed Graphviz, cairo and fonts.
# Usage: scripts/docs-images.sh [CAPSIM] [OUTDIR]   (OUTDIR: docs/gallery)
set -euo pipefail
capsim=$(realpath "${1:-build/default/cli/capsim}")
out=$(realpath -m "${2:-docs/gallery}")
cd "$(dirname "$0")/.."
corpus=data/corpus
mkdir -p "$out"

draw() {  # name, then capsim's arguments
  local name=$1
  shift
  "$capsim" "$@" -o "$out/$name.png" >/dev/null || [ $? -eq 1 ]  # diff exits 1 when graphs differ
  echo "wrote $out/$name.png"
}

# 1. A re-record caused by a param reassignment: `bias.data = ...` moves a
#    static input, so the tree records graph 1 beside graph 0, and the two
#    recordings differ in exactly the pointer that moved.
draw rerecord-tree render "$corpus/rerecord_if_static_input_address_changed.jsonl"
draw rerecord-program-diff diff "$corpus/rerecord_if_static_input_address_changed.jsonl#program:0" \
  "$corpus/rerecord_if_static_input_address_changed.jsonl#program:1"
# 2. Compiled autograd before and after PR 144707: the legacy capture traced
#    the ops inline (and read proxy metadata); the functional capture calls
#    each node's backward as an opaque op and validates its outputs.
draw legacy-vs-functional-capture diff "$corpus/hazards/ca_basic_legacy.jsonl" "$corpus/ca_basic.jsonl" \
  --graph fx:0
draw autograd-graph render "$corpus/ca_basic.jsonl" --graph autograd:0
# 3. A tree with checkpoints: the allocator restored to graph 0's state when a
#    new function warmed up from the end of its path.
draw checkpoint-tree render "$corpus/checkpointing_resets_persistent_refs.jsonl"
draw checkpoint-pool render "$corpus/checkpointing_resets_persistent_refs.jsonl" --graph pool:45
# 4. A recorded trace against the model's prediction (a hand-edited demo
#    whose static pointer moved without a re-record).
draw predicted-diff diff --predicted "$corpus/diverging/static_pointer_changed_without_rerecord.jsonl"
# 5. One training loop through every layer: an eager forward on params that
#    require grad, loss.backward() through compiled autograd (its capture
#    lowered to CompiledAutograd0 and recorded in the tree), compiled SGD on
#    the same path, whose grads are the backward's pool outputs.
draw training-loop-tree render "$corpus/mlp_training_compiled_autograd_backward.jsonl"
draw training-loop-autograd render "$corpus/mlp_training_compiled_autograd_backward.jsonl" --graph autograd:0
