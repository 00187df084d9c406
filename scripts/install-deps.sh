#!/usr/bin/env bash
# Installs the Debian packages capsim builds with, and only those missing.
#
# Idempotent: when everything is present it changes nothing and says so.
# Otherwise it runs `apt-get update` first, then installs what is missing,
# through sudo when not root. The CUDA toolkit (nvcc) is not installed here:
# the CUDA parts build when it is on the machine and are left out when not.
set -euo pipefail

packages=(
  cmake ninja-build g++ make
  librapidcheck-dev doctest-dev libboost-graph-dev
  graphviz libgraphviz-dev
  nlohmann-json3-dev libsimdjson-dev libcli11-dev libbenchmark-dev libfmt-dev
  ccache libmimalloc-dev libtomlplusplus-dev
  clang-tidy universal-ctags
  python3-pytest
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
