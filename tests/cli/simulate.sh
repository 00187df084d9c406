#!/usr/bin/env bash
# capsim simulate on every program of data/programs/: exit 0, a listing that
# ends with the summary line, a written trace that replays with every event
# matching, and the same bytes from a second run (one seed, one output).
#   simulate.sh CAPSIM
set -eu
capsim=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
for p in "$root"/data/programs/*.jsonl; do
  name=$(basename "$p" .jsonl)
  "$capsim" simulate "$p" -o "$work/$name.a.jsonl" > "$work/$name.txt"
  tail -1 "$work/$name.txt" | grep -q "^simulated $p: [0-9]* actions" ||
    { echo "$name: no summary line"; exit 1; }
  "$capsim" simulate "$p" -o "$work/$name.b.jsonl" > /dev/null
  cmp "$work/$name.a.jsonl" "$work/$name.b.jsonl" || { echo "$name: two runs differ"; exit 1; }
  "$capsim" replay "$work/$name.a.jsonl" | grep -q ": ok," || { echo "$name: does not replay"; exit 1; }
  n=$((n + 1))
done
# The listing names what the tree manager did.
grep -q "copy_in fid=0 function=f graph=0 copies=1" "$work/static_weight_copied_input.txt"
echo "simulate: $n programs"
