#!/usr/bin/env bash
# record_replay.sh CAPSIM SCENARIO: records a scenario twice (identical bytes,
# no temporary file left behind) and replays it (exit 0).
set -u
capsim=$1 scenario=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$capsim" record "$scenario" -o "$dir/a.jsonl" >/dev/null || { echo "record failed"; exit 1; }
"$capsim" record "$scenario" -o "$dir/b.jsonl" >/dev/null || { echo "record failed"; exit 1; }
cmp -s "$dir/a.jsonl" "$dir/b.jsonl" || { echo "two recordings differ"; exit 1; }
[ "$(ls "$dir")" = "$(printf 'a.jsonl\nb.jsonl')" ] || { echo "stray files: $(ls "$dir")"; exit 1; }
out=$("$capsim" replay "$dir/a.jsonl") || { echo "replay failed: $out"; exit 1; }
echo "$out" | grep -q ": ok, " || { echo "unexpected: $out"; exit 1; }
exit 0
