#!/usr/bin/env bash
# check_includes_test.sh CHECK: the layer check can fail. In a scratch tree
# with every folder, a tree-manager source that includes compiled autograd,
# a model header that includes the World, a trace reader that includes an
# analysis and a source loose in sim/ must each be reported, with file and
# line; the same tree without them must pass.
set -u
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "$*"; exit 1; }
for d in model cuda_reference sim/core sim/trees sim/autograd sim/compiled_autograd sim/program sim/world sim/scenarios \
  traces/format traces/simulation traces/analyses render properties cli bench; do
  mkdir -p "$dir/$d"
done
printf '#include "model/tensor.hpp"\n#include "sim/core/events.hpp"\n' >"$dir/sim/trees/ok.cpp"
printf '#include "sim/trees/ok.hpp"\n#include "traces/analyses/x.hpp"\n' >"$dir/cli/ok.cpp"
printf '#include "traces/format/x.hpp"\n#include "sim/world/world.hpp"\n' >"$dir/traces/simulation/ok.cpp"
bash "$check" "$dir" >"$dir/out" || fail "a sound tree fails: $(cat "$dir/out")"

printf '// x\n#include "sim/autograd/autograd_engine.hpp"\n' >"$dir/sim/trees/bad.cpp"
printf '#include "sim/world/world.hpp"\n' >"$dir/model/bad.hpp"
printf '#include "model/tensor.hpp"\n' >"$dir/sim/loose.cpp"
printf '#include "traces/analyses/explain.hpp"\n' >"$dir/traces/format/bad.cpp"
printf '#include "sim/world/world.hpp"\n' >"$dir/traces/format/reads_world.cpp"
bash "$check" "$dir" >"$dir/out"
rc=$?
[ "$rc" = 1 ] || fail "broken layers exited $rc: $(cat "$dir/out")"
grep -q '^sim/trees/bad.cpp:2: sim/trees/ includes sim/autograd/' "$dir/out" ||
  fail "trees -> autograd not reported: $(cat "$dir/out")"
grep -q '^model/bad.hpp:1: model/ includes sim/world/' "$dir/out" ||
  fail "model -> sim not reported: $(cat "$dir/out")"
grep -q '^traces/format/bad.cpp:1: traces/format/ includes traces/analyses/' "$dir/out" ||
  fail "format -> analyses not reported: $(cat "$dir/out")"
grep -q '^traces/format/reads_world.cpp:1: traces/format/ includes sim/world/' "$dir/out" ||
  fail "format -> sim/world not reported: $(cat "$dir/out")"
grep -q '^sim/: sources outside a wing' "$dir/out" || fail "a loose sim/ source not reported"
[ "$(wc -l <"$dir/out")" = 5 ] || fail "more than the five breaks reported: $(cat "$dir/out")"
exit 0
