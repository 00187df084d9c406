#!/usr/bin/env bash
# Installs a PyTorch release for the recorder (recorder/) into its own
# virtual environment. Not part of `make test`: the wheels with their CUDA
# libraries come to several GB per release. Idempotent: pip installs only what
# the venv lacks (a second run downloads nothing).
#   scripts/install-torch.sh                  the pinned release (requirements.txt)
#                                             into build/torch-venv
#   scripts/install-torch.sh VERSION          that release into build/torch-VERSION
#   scripts/install-torch.sh VERSION VENV     that release into VENV
# CAPSIM_TORCH_VENV overrides the pinned release's venv. The wheels are PyPI's
# (the CPU half of the recorder runs on them on a machine without a GPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
req=$root/recorder/requirements.txt
pinned=$(sed -n 's/^torch==//p' "$req")
version=${1:-$pinned}
if ! [[ $version =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]]; then
  echo "install-torch: VERSION must look like 2.11.0, not '$version'" >&2
  exit 2
fi
if [ "$version" = "$pinned" ]; then
  venv=${2:-${CAPSIM_TORCH_VENV:-$root/build/torch-venv}}
else
  venv=${2:-$root/build/torch-$version}
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
# The same numpy for every release keeps the traces' bytes independent of it.
grep -v '^torch==' "$req" >"$venv/requirements-rest.txt"
"$venv/bin/pip" install --quiet "torch==$version" -r "$venv/requirements-rest.txt"
"$venv/bin/python" -c 'import torch; print("install-torch: torch", torch.__version__, "in", "'"$venv"'")'
