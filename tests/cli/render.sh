#!/usr/bin/env bash
# render.sh CAPSIM CORPUS: `capsim render`, `capsim diff` and `replay --dot`
# as a user meets them.
#  - DOT is byte-identical from run to run and goes to stdout without -o;
#  - -o FILE.svg writes the SVG and its DOT, and no temporary file;
#  - diff exits 0 for equal graphs and 1 for differing ones; --predicted holds
#    a trace against the model; replay --dot draws only on a divergence;
#  - bad input (an unknown graph, an unknown extension, an unwritable path, a
#    malformed --graph) exits 2 with one line and writes nothing.
set -u
capsim=$1
corpus=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
rerecord=$corpus/rerecord_if_static_input_address_changed.jsonl
diverging=$corpus/diverging/static_pointer_changed_without_rerecord.jsonl

"$capsim" render "$rerecord" >"$dir/a.dot" || fail "render to stdout"
"$capsim" render "$rerecord" >"$dir/b.dot" || fail "render to stdout (2)"
cmp -s "$dir/a.dot" "$dir/b.dot" || fail "two renders differ"
head -1 "$dir/a.dot" | grep -q '^digraph ' || fail "not DOT: $(head -1 "$dir/a.dot")"
grep -q 'constraint=false' "$dir/a.dot" && fail "constraint=false written"

"$capsim" render "$rerecord" --list >"$dir/list" || fail "--list"
for g in tree tree:predicted program:0 program:1 pool; do
  grep -qx "$g" "$dir/list" || fail "--list lacks $g: $(cat "$dir/list")"
done

"$capsim" render "$rerecord#program:1" -o "$dir/p.svg" >"$dir/out" || fail "render svg: $(cat "$dir/out")"
[ -s "$dir/p.svg" ] && [ -s "$dir/p.dot" ] || fail "svg or its dot missing"
grep -q '<svg' "$dir/p.svg" || fail "not an SVG"
ls "$dir" | grep -q '\.tmp$' && fail "a temporary file was left"

"$capsim" diff "$rerecord#tree" "$rerecord#tree" -o "$dir/same.dot" >"$dir/out"
[ $? -eq 0 ] || fail "diff of a graph with itself did not exit 0"
grep -q '0 changed, 0 added, 0 removed' "$dir/out" || fail "self diff: $(cat "$dir/out")"
"$capsim" diff "$rerecord#program:0" "$rerecord#program:1" -o "$dir/d.dot" >"$dir/out"
[ $? -eq 1 ] || fail "diff of a recording and its re-recording did not exit 1"
grep -q 'class="diff-changed"' "$dir/d.dot" || fail "no changed node in the diff"
grep -q 'legend' "$dir/d.dot" || fail "no legend"
"$capsim" diff "$rerecord#program:0" "$rerecord#program:1" --changes-only >"$dir/c.dot" 2>/dev/null
grep -q 'changes-only' "$dir/c.dot" || fail "--changes-only says nothing"

"$capsim" diff --predicted "$rerecord" >/dev/null 2>&1
[ $? -eq 0 ] || fail "a corpus trace differs from its prediction"
"$capsim" diff --predicted "$diverging" >/dev/null 2>&1
[ $? -eq 1 ] || fail "the diverging demo matches its prediction"

"$capsim" replay "$rerecord" --dot "$dir/none.dot" >/dev/null
[ $? -eq 0 ] || fail "replay --dot of a matching trace"
[ -e "$dir/none.dot" ] && fail "replay --dot drew a trace without a divergence"
"$capsim" replay "$diverging" --dot "$dir/div.dot" >"$dir/out"
[ $? -eq 1 ] || fail "replay --dot of the diverging demo did not exit 1"
grep -q 'class="diff-added"' "$dir/div.dot" || fail "the divergence drawing has no added node"

bad() {  # expected message, then the command
  local want=$1
  shift
  "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, not 2, for: $* ($(cat "$dir/err"))"
  [ "$(wc -l <"$dir/err")" -eq 1 ] || fail "not one line: $(cat "$dir/err")"
  grep -q "$want" "$dir/err" || fail "message lacks '$want': $(cat "$dir/err")"
}
bad "not in this trace" "$capsim" render "$rerecord" --graph program:7 -o "$dir/x.svg"
[ -e "$dir/x.svg" ] || [ -e "$dir/x.dot" ] && fail "a file was written for a bad graph id"
bad "unknown output extension '.jpg'" "$capsim" render "$rerecord" -o "$dir/x.jpg"
[ -e "$dir/x.jpg" ] && fail "a file was written for a bad extension"
bad "cannot write" "$capsim" render "$rerecord" -o "$dir/no/such/dir/x.dot"
bad "unknown kind 'nope'" "$capsim" render "$rerecord" --graph nope:1
bad "no cudagraph pool" "$capsim" render "$corpus/ca_setitem.jsonl" --graph pool
bad "only the tree" "$capsim" diff --predicted "$rerecord" --graph program:0
bad "cannot open\|No such file\|not found" "$capsim" render "$dir/missing.jsonl"
ls "$dir" | grep -q '\.tmp$' && fail "a temporary file was left"
echo ok
