#!/usr/bin/env bash
# check_fuzz_sources_test.sh CHECK: the fuzz-source check can fail. In a
# scratch tree whose run-libfuzzer.sh lists every source, it passes; a model
# source left out of the lists, and a listed file that does not exist, must
# each be reported, naming the file.
set -u
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "$*"; exit 1; }
mkdir -p "$dir/tests/fuzz" "$dir/model" "$dir/sim/world" "$dir/traces/format"
touch "$dir/model/a.cpp" "$dir/sim/world/w.cpp" "$dir/traces/format/r.cpp"
cat >"$dir/tests/fuzz/run-libfuzzer.sh" <<'LISTS'
unity_a=(
  model/a.cpp traces/format/r.cpp
)
unity_b=(
  sim/world/w.cpp
)
LISTS
bash "$check" "$dir" >"$dir/out" || fail "a sound tree fails: $(cat "$dir/out")"

touch "$dir/model/new.cpp"
sed -i 's|sim/world/w.cpp|sim/world/w.cpp sim/world/gone.cpp|' "$dir/tests/fuzz/run-libfuzzer.sh"
bash "$check" "$dir" >"$dir/out"
rc=$?
[ "$rc" = 1 ] || fail "broken lists exited $rc: $(cat "$dir/out")"
grep -q '^model/new.cpp: not in any unity_\* list' "$dir/out" ||
  fail "an unlisted model source not reported: $(cat "$dir/out")"
grep -q 'lists sim/world/gone.cpp, which does not exist' "$dir/out" ||
  fail "a listed file that does not exist not reported: $(cat "$dir/out")"
[ "$(wc -l <"$dir/out")" = 2 ] || fail "more than the two problems reported: $(cat "$dir/out")"
exit 0
