#!/usr/bin/env bash
# check_jobs.sh CAPSIM: `capsim check --jobs N` gives what --jobs 1 gives.
#  - the --json report, its "timing" object aside, byte for byte, for a
#    passing run with controls over several properties and regressions;
#  - with a fault injected (properties fail and shrink): the text report
#    (times aside), the JUnit file (time attributes aside) and the folder of
#    --save-failures (each failure's text and trace, made in its worker);
#  - --jobs 0 and --jobs with --backend cuda are bad usage (exit 2).
set -u
capsim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "$*"; exit 1; }
without_timing() { sed '/"timing"/,$d' "$1"; }
without_times() { sed -E 's/[0-9]+\.[0-9]+ s\b/T s/g; s/ time="[^"]*"//g' "$1"; }

args=(check --property 'cudagraphs.*' --property 'loop.*' --cases 100 --seed 5 --json --no-progress)
"$capsim" "${args[@]}" >"$dir/one.json" || fail "check --jobs 1 failed: $(head -c 2000 "$dir/one.json")"
"$capsim" "${args[@]}" --jobs 3 >"$dir/three.json" || fail "check --jobs 3 failed"
grep -q '"caught": true' "$dir/one.json" || fail "no control ran"
cmp -s <(without_timing "$dir/one.json") <(without_timing "$dir/three.json") ||
  fail "--jobs 3 differs: $(diff <(without_timing "$dir/one.json") <(without_timing "$dir/three.json") | head -20)"

bad=(check --property 'cudagraphs.*' --cases 30 --seed 5 --no-controls --no-progress
     --inject skip_first_copy)
"$capsim" "${bad[@]}" --junit "$dir/one.xml" --save-failures "$dir/one" >"$dir/one.txt"
[ $? -eq 1 ] || fail "the injected fault was not found"
"$capsim" "${bad[@]}" --junit "$dir/two.xml" --save-failures "$dir/two" --jobs 2 >"$dir/two.txt"
[ $? -eq 1 ] || fail "the injected fault was not found with --jobs 2"
grep -q "FAIL" "$dir/one.txt" || fail "no failure in $(cat "$dir/one.txt")"
cmp -s <(without_times "$dir/one.txt") <(without_times "$dir/two.txt") ||
  fail "the text differs: $(diff <(without_times "$dir/one.txt") <(without_times "$dir/two.txt") | head -20)"
cmp -s <(without_times "$dir/one.xml") <(without_times "$dir/two.xml") || fail "the JUnit files differ"
ls "$dir/one" | grep -q '\.jsonl$' || fail "no failure trace saved: $(ls "$dir/one")"
[ "$(ls "$dir/one")" = "$(ls "$dir/two")" ] || fail "other failures saved: $(ls "$dir/two")"
for f in "$dir"/one/*; do
  cmp -s <(without_times "$f") <(without_times "$dir/two/${f##*/}") || fail "${f##*/} differs"
done

out=$("$capsim" check --jobs 0 2>&1)
[ $? -eq 2 ] || fail "--jobs 0 was accepted: $out"
out=$("$capsim" check --jobs 2 --backend cuda 2>&1)
[ $? -eq 2 ] || fail "--jobs 2 --backend cuda was accepted: $out"
echo "check --jobs: the same reports, failures and saved cases as --jobs 1"
