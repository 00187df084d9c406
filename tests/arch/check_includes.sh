#!/usr/bin/env bash
# check_includes.sh SRC_DIR: the layers of docs/architecture.md, enforced.
#
# Every `#include "folder/..."` of a library's sources must point at its own
# folder or one it may depend on; sim/'s wings are folders of their own. The
# CMake targets link the same order, but static libraries cannot enforce it:
# every executable links all of them, so an upward include would compile and
# link. This check is what fails. One line per broken edge, naming the file,
# the line and both folders; exit 1 if any, 0 otherwise. tests/ is exempt.
set -u
src=${1:?usage: check_includes.sh SRC_DIR}
cd "$src" || exit 2

# folder: the folders its sources may include (itself included).
allowed() {
  local core="model sim/core"
  local sim="$core sim/trees sim/autograd sim/compiled_autograd sim/program sim/world sim/scenarios"
  local traces="traces/format traces/simulation"
  case $1 in
    model) echo "model" ;;
    cuda_reference) echo "model cuda_reference" ;;
    sim/core) echo "$core" ;;
    sim/trees) echo "$core sim/trees" ;;
    sim/autograd) echo "$core sim/autograd" ;;
    sim/compiled_autograd) echo "$core sim/autograd sim/compiled_autograd" ;;
    sim/program) echo "$core sim/autograd sim/compiled_autograd sim/program" ;;
    sim/world) echo "$core sim/trees sim/autograd sim/compiled_autograd sim/program sim/world" ;;
    sim/scenarios) echo "$core sim/trees sim/autograd sim/compiled_autograd sim/program sim/world sim/scenarios" ;;
    traces/format) echo "$core sim/autograd sim/compiled_autograd sim/program traces/format" ;;
    traces/simulation) echo "$sim traces/format traces/simulation" ;;
    traces/analyses) echo "$sim $traces traces/analyses" ;;
    render) echo "$sim $traces traces/analyses render" ;;
    properties) echo "$sim $traces traces/analyses properties" ;;
    cli | bench) echo "*" ;;
    *) echo "" ;;
  esac
}

# The folder an include path names: sim/ and traces/ paths by their wing.
folder_of() {
  case $1 in
    sim/*/* | traces/*/*) echo "${1%/*}" ;;
    */*) echo "${1%%/*}" ;;
    *) echo "" ;;
  esac
}

broken=0
for dir in model cuda_reference sim/core sim/trees sim/autograd sim/compiled_autograd sim/program sim/world sim/scenarios \
  traces/format traces/simulation traces/analyses render properties cli bench; do
  [ -d "$dir" ] || { echo "check_includes.sh: no folder $dir (update this table)"; exit 2; }
  ok=" $(allowed "$dir") "
  while IFS=: read -r file line text; do
    path=${text#*\"}
    path=${path%%\"*}
    to=$(folder_of "$path")
    [ -z "$to" ] && continue
    [ "$ok" = " * " ] && [ "${to%%/*}" != tests ] && continue
    if [[ "$ok" != *" $to "* ]]; then
      echo "$file:$line: $dir/ includes $to/ ($path), against the layers of docs/architecture.md"
      broken=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$dir" --include='*.cpp' --include='*.hpp' \
             --include='*.cu' --include='*.cuh')
done
# sim/ and traces/ hold wings only: a source directly in either has no layer.
for top in sim traces; do
  loose=$(find "$top" -maxdepth 1 -type f \( -name '*.cpp' -o -name '*.hpp' \) | sort | tr '\n' ' ')
  if [ -n "$loose" ]; then
    echo "$top/: sources outside a wing: $loose"
    broken=1
  fi
done
exit $broken
