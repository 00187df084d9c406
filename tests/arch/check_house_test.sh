#!/usr/bin/env bash
# check_house_test.sh CHECK: the house check can fail. A scratch tree (not a
# git checkout: every file is read) that keeps the rules passes; then one
# breach of each rule must be reported, naming the file, the line and the rule.
set -u
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "$*"; exit 1; }
command -v ctags >/dev/null || exit 77
mkdir -p "$dir/model" "$dir/sim" "$dir/tests/arch" "$dir/docs"
body() { for _ in $(seq "$1"); do echo "  x += 1;"; done; }
{
  echo "int used(int x) {"; body 60; echo "  return x;"; echo "}"
  echo "int main() { return used(1); }"
} >"$dir/model/a.cpp"
{ echo "struct Big {"; for i in $(seq 260); do echo "  int f$i;"; done; echo "};"; } >"$dir/sim/big.cpp"
echo "class sim/big.cpp:Big 262" >"$dir/tests/arch/house_known.txt"
echo "PyTorch's pytorch/pytorch#12345 is fine; so is a stop sign." >"$dir/docs/a.md"
python3 "$check" "$dir" >"$dir/out" || fail "a sound tree fails: $(cat "$dir/out")"

{
  echo "int long_one(int x) {"; body 70; echo "  return x;"; echo "}"
  echo "int never_called_anywhere(int x);"
} >"$dir/model/b.cpp"
sed -i 's/^};$/  int extra;\n};/' "$dir/sim/big.cpp"
for i in $(seq 601); do echo "x = $i"; done >"$dir/sim/long.py"
# The words are put together here, so that this file holds none itself.
word=stop
echo "As decided at $word 12, and in re${word#s}design 3." >>"$dir/docs/a.md"
mkdir -p "$dir/sim/core" "$dir/traces"
echo 'CAPSIM_DECISION(kSkipCpuOp, kSkip, "S2", "t", "r", "")' >"$dir/sim/core/decisions.def"
echo 'bool s2(const Event& e) { return e.text(F::id) == "S2"; }' >"$dir/traces/s.cpp"
echo 'int main2() { return s2(e) ? 1 : 0; }' >>"$dir/traces/s.cpp"
python3 "$check" "$dir" >"$dir/out"
rc=$?
[ "$rc" = 1 ] || fail "a broken tree exited $rc: $(cat "$dir/out")"
expect() { grep -q "$1" "$dir/out" || fail "not reported: $1: $(cat "$dir/out")"; }
expect '^model/b.cpp:1: function-size: long_one is 72 lines'
expect '^sim/big.cpp:1: class-size: Big is 263 lines .*do not grow it'
expect '^sim/long.py:1: file-size: 601 lines'
expect '^model/b.cpp:.*: dead: never_called_anywhere is never called'
expect "^model/b.cpp:1: dead: long_one is never called"
expect "^docs/a.md:2: milestone: '$word 12'"
expect '^traces/s.cpp:1: decision-text: == "S2"'
[ "$(wc -l <"$dir/out")" = 8 ] || fail "more than the eight breaches reported: $(cat "$dir/out")"
exit 0
