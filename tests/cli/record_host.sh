#!/usr/bin/env bash
# record_host.sh CAPSIM: `record --backend host` writes a capsim-cuda trace
# whose device events the CPU model re-derives on replay; one changed digest
# is a divergence at that field.
set -u
capsim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$capsim" record --backend host compiled_adam_cudagraphed_backward -o "$dir/t.jsonl" >/dev/null ||
  fail "record --backend host"
grep -q '"producer":"capsim-cuda"' "$dir/t.jsonl" || fail "producer"
[ "$(grep -c '"event":"device"' "$dir/t.jsonl")" -ge 5 ] || fail "fewer than 5 device events"
"$capsim" replay "$dir/t.jsonl" >"$dir/out" || fail "replay: $(cat "$dir/out")"
# Change the first digit of the first device event's written digest.
n=$(grep -n '"event":"device"' "$dir/t.jsonl" | head -1 | cut -d: -f1)
old=$(sed -n "${n}p" "$dir/t.jsonl" | grep -o '"digest":"[0-9a-f]' | cut -c11)
new=0
[ "$old" = 0 ] && new=1
sed "${n}s/\"digest\":\"$old/\"digest\":\"$new/" "$dir/t.jsonl" >"$dir/u.jsonl"
cmp -s "$dir/t.jsonl" "$dir/u.jsonl" && fail "the edit changed nothing"
"$capsim" replay "$dir/u.jsonl" >"$dir/out"
[ $? -eq 1 ] || fail "a changed device digest replayed clean"
grep -q "field 'digest' differs from the model" "$dir/out" || fail "$(cat "$dir/out")"
"$capsim" record --backend tpu run_simple -o "$dir/v.jsonl" 2>"$dir/err"
[ $? -eq 2 ] || fail "record --backend tpu did not exit 2"
[ -e "$dir/v.jsonl" ] && fail "a refused record wrote a file"
exit 0
