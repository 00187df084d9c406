#!/usr/bin/env bash
# check_fuzz_sources.sh SRC_DIR: the libFuzzer build's source lists, against
# the tree.
#
# tests/fuzz/run-libfuzzer.sh compiles the fuzz targets straight from the
# sources, in unity files it lists by hand, so a new translation unit that
# the World, the reader or the drawings need is missing there until the
# libFuzzer test fails to link, late in a CI run (as model/fx_arg.cpp once did).
# This check runs in a second: every file the lists name must exist, and every
# .cpp of the layers the targets link whole (model/, sim/core, sim/trees,
# sim/program, sim/world, sim/autograd, render/) must be named. One line per problem,
# naming the file; exit 1 if any, 0 otherwise.
set -u
src=${1:?usage: check_fuzz_sources.sh SRC_DIR}
cd "$src" || exit 2
script=tests/fuzz/run-libfuzzer.sh
[[ -f $script ]] || { echo "check_fuzz_sources.sh: $script not found" >&2; exit 2; }

# The paths inside the unity_* arrays: from `unity_x=(` to its `)`.
listed=$(awk '/^unity_[a-z]+=\(/ {on = 1; next} on && /^\)/ {on = 0} on' "$script" |
  tr ' ' '\n' | grep -E '\.cpp$' | sort -u)
[[ -n $listed ]] || { echo "$script: no unity_* source lists found" >&2; exit 2; }

status=0
while IFS= read -r f; do
  [[ -f $f ]] || { echo "$script: lists $f, which does not exist"; status=1; }
done <<<"$listed"
for dir in model sim/core sim/trees sim/program sim/world sim/autograd sim/compiled_autograd render; do
  for f in "$dir"/*.cpp; do
    [[ -e $f ]] || continue
    grep -qxF "$f" <<<"$listed" || {
      echo "$f: not in any unity_* list of $script (the fuzz targets link $dir/ whole)"
      status=1
    }
  done
done
exit $status
