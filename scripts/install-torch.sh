#!/usr/bin/env bash
# Installs the PyTorch that the recorder (traces/torch/) was tested with into a
# virtual environment, by default build/torch-venv. Not part of `make test`: the
# wheels with their CUDA libraries come to several GB. Idempotent: pip installs
# only what the venv lacks (a second run downloads nothing).
#   scripts/install-torch.sh [VENV]      (or CAPSIM_TORCH_VENV=...)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${CAPSIM_TORCH_VENV:-$root/build/torch-venv}}
req=$root/traces/torch/requirements.txt
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -r "$req"
"$venv/bin/python" -c 'import torch; print("install-torch: torch", torch.__version__, "in", "'"$venv"'")'
