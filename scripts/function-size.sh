#!/usr/bin/env bash
# Lists every C++ function of capsim longer than 70 lines (the house limit,
# docs/architecture.md, "Style"), with clang-tidy's readability-function-size
# over the compilation database of a configured build, headers included.
#
#   scripts/function-size.sh [BUILD_DIR [FILE_REGEX]]   (default: build/default, all sources)
#
# Exits 1 when it finds one, 0 when none, 77 when clang-tidy is missing. It
# parses every translation unit, about 13 minutes on two cores; ctest runs it
# once per CI run (lint/function_size, the build without sanitizers).
set -euo pipefail
build=${1:-build/default}
files=${2:-'^'"$(pwd)"'/(bench|cli|cuda_reference|model|properties|render|sim|tests|traces)/.*\.cpp$'}
if ! command -v run-clang-tidy >/dev/null || ! command -v clang-tidy >/dev/null; then
  echo "function-size.sh: clang-tidy is not installed; skipping" >&2
  exit 77
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "function-size.sh: $build/compile_commands.json: configure the build first" >&2
  exit 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# GCC's flags that clang does not know (-Wno-restrict) are not errors here.
run-clang-tidy -quiet -p "$build" -j "$(nproc)" -checks='-*,readability-function-size' \
  -config='{CheckOptions: [{key: readability-function-size.LineThreshold, value: 70}]}' \
  -header-filter="^$(pwd)/(cli|cuda_reference|model|properties|render|sim|traces)/" \
  -extra-arg=-Wno-unknown-warning-option "$files" >"$out" 2>/dev/null || true
# One line per function, each once (a header's function shows in every TU);
# run-clang-tidy colours its output whatever the terminal, so the escapes go.
found=$(sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -E 'warning: function .* exceeds recommended size' |
  sed -E "s|^$(pwd)/||; s/: warning: function '([^']*)'.*/ \1/" | sort -u || true)
if [[ -n $found ]]; then
  echo "functions over 70 lines:"
  echo "$found"
  exit 1
fi
echo "function-size.sh: no function over 70 lines"
