#!/usr/bin/env bash
# Installs the PyTorch that the recorder (traces/torch/) was tested with into a
# virtual environment, by default build/torch-venv. Not part of `make test`: the
# wheels with their CUDA libraries come to several GB. Idempotent: a venv that
# already imports the pinned version is left alone.
#   scripts/install-torch.sh [VENV]      (or CAPSIM_TORCH_VENV=...)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${CAPSIM_TORCH_VENV:-$root/build/torch-venv}}
req=$root/traces/torch/requirements.txt
want=$(sed -n 's/^torch==//p' "$req")
if [ -x "$venv/bin/python" ] &&
  got=$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null) &&
  [ "$got" = "$want" ]; then
  echo "install-torch: $venv already has torch $got"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -r "$req"
"$venv/bin/python" -c 'import torch; print("install-torch: torch", torch.__version__, "in", "'"$venv"'")'
