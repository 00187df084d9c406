#!/usr/bin/env bash
# check.sh CAPSIM: `capsim check` as CI meets it.
#  - the same seed and shard give the same --json report, its "timing" object
#    (the last key) aside;
#  - the reproduce command printed for a caught control, run again, fails the
#    same way (the same shrunk counterexample);
#  - --junit writes a complete file and no temporary one; a SIGINT exits 130
#    with a partial summary and a valid partial JUnit file;
#  - the failure corpus is replayed first (and not with --no-regressions);
#    --stats prints the coverage probes, --json counts them, and
#    --require-probes fails a run too small to reach them;
#  - --inject skip_first_copy (a bug no control names) fails the properties
#    that copy-in matters to, and --inject of an unknown or non-injectable
#    fault is bad usage (exit 2, one line).
set -u
capsim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "$*"; exit 1; }
without_timing() { sed '/"timing"/,$d' "$1"; }

args=(check --property 'cudagraphs.*' --cases 40 --seed 9 --json --no-controls)
"$capsim" "${args[@]}" >"$dir/a.json" || fail "check failed: $(cat "$dir/a.json")"
"$capsim" "${args[@]}" >"$dir/b.json" || fail "check failed"
grep -q '"timing"' "$dir/a.json" || fail "no timing object"
cmp -s <(without_timing "$dir/a.json") <(without_timing "$dir/b.json") ||
  fail "two runs with one seed differ: $(diff <(without_timing "$dir/a.json") <(without_timing "$dir/b.json"))"

# A control's failure and its reproduction.
"$capsim" check --property cudagraphs.replay-equals-eager --cases 50 --json >"$dir/c.json" ||
  fail "check with controls failed: $(cat "$dir/c.json")"
repro=$(sed -n 's/^ *"reproduce": "\(.*\)"$/\1/p' "$dir/c.json" | head -1)
[ -n "$repro" ] || fail "no reproduce command in $(cat "$dir/c.json")"
read -r -a words <<<"${repro#capsim }"
"$capsim" "${words[@]}" --json >"$dir/d.json" || fail "reproduction failed: $(cat "$dir/d.json")"
first=$(grep '"counterexample"' "$dir/c.json" | head -1)
again=$(grep '"counterexample"' "$dir/d.json" | head -1)
[ -n "$first" ] && [ "$first" = "$again" ] || fail "the reproduction differs: $first vs $again"

# --save-failures: a caught control's counterexample as text and as a trace,
# recorded from the broken model, so that the sound model's replay fails on it.
"$capsim" check --property cudagraphs.copies-only-non-static --cases 20 --save-failures "$dir/f" \
  >/dev/null || fail "check --save-failures failed"
trace=$(ls "$dir"/f/cudagraphs.copies-only-non-static.control.case*.jsonl 2>/dev/null | head -1)
[ -n "$trace" ] || fail "no saved trace: $(ls "$dir/f")"
[ -e "${trace%.jsonl}.txt" ] || fail "no saved text"
"$capsim" replay "$trace" >"$dir/r.out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "replay of the saved control trace exited $rc: $(cat "$dir/r.out")"

# JUnit, complete.
"$capsim" check --property 'capture.*' --cases 20 --junit "$dir/j.xml" >/dev/null ||
  fail "check --junit failed"
grep -q '<testsuite name="capsim check" tests="6" failures="0"' "$dir/j.xml" ||
  fail "unexpected JUnit: $(cat "$dir/j.xml")"
[ "$(tail -1 "$dir/j.xml")" = "</testsuite>" ] || fail "JUnit file not closed"
[ ! -e "$dir/j.xml.tmp" ] || fail "temporary JUnit file left behind"

# The failure corpus, the probes.
"$capsim" check --property 'cudagraphs.pool-accounting' --cases 5 --no-controls --stats \
  >"$dir/s.out" || fail "check --stats failed: $(cat "$dir/s.out")"
grep -q '^  pass  regression cudagraphs.pool-accounting\.' "$dir/s.out" ||
  fail "no regression replayed: $(cat "$dir/s.out")"
grep -q '^coverage probes' "$dir/s.out" || fail "no probes: $(cat "$dir/s.out")"
"$capsim" check --property 'cudagraphs.pool-accounting' --cases 5 --no-controls --no-regressions \
  >"$dir/n.out" || fail "check --no-regressions failed"
! grep -q 'regression' "$dir/n.out" || fail "--no-regressions replayed: $(cat "$dir/n.out")"
grep -q '"probes": \[' "$dir/a.json" || fail "no probes in --json"
grep -q '"regressions": \[' "$dir/a.json" || fail "no regressions in --json"
"$capsim" check --property 'capture.equals-eager' --cases 5 --no-controls --require-probes \
  >"$dir/q.out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "--require-probes on a small run exited $rc: $(cat "$dir/q.out")"
grep -q 'coverage probes never hit: warmup' "$dir/q.out" || fail "no missed probes: $(cat "$dir/q.out")"

# An injected bug, caught; bad --inject names.
"$capsim" check --property 'cudagraphs.copies-only-non-static' --cases 20 --no-controls \
  --no-regressions --inject skip_first_copy >"$dir/i.out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "--inject skip_first_copy exited $rc: $(cat "$dir/i.out")"
grep -q 'every sound case with fault skip_first_copy' "$dir/i.out" ||
  fail "the header does not name the injected fault: $(cat "$dir/i.out")"
grep -q '^  FAIL  cudagraphs.copies-only-non-static' "$dir/i.out" ||
  fail "the injected bug was not caught: $(cat "$dir/i.out")"
grep -q 'reproduce: capsim check .* --no-controls --inject skip_first_copy$' "$dir/i.out" ||
  fail "the reproduction does not inject the fault: $(cat "$dir/i.out")"
for bad in nope none skip_upload; do
  "$capsim" check --cases 1 --inject "$bad" >"$dir/b.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "--inject $bad exited $rc: $(cat "$dir/b.out")"
  [ "$(wc -l <"$dir/b.out")" = 1 ] && grep -q "^capsim: error: --inject '$bad': " "$dir/b.out" ||
    fail "--inject $bad: not one error line: $(cat "$dir/b.out")"
done

# Interrupted: exit 130, a summary that says so, a valid partial JUnit file.
"$capsim" check --cases 100000 --junit "$dir/p.xml" --no-progress >"$dir/p.out" 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] || fail "interrupted run exited $rc: $(cat "$dir/p.out")"
grep -q '^interrupted: ' "$dir/p.out" || fail "no partial summary: $(cat "$dir/p.out")"
grep -q '<skipped message="the run was interrupted"/>' "$dir/p.xml" ||
  fail "partial JUnit without skipped tests: $(cat "$dir/p.xml")"
[ "$(tail -1 "$dir/p.xml")" = "</testsuite>" ] || fail "partial JUnit file not closed"
exit 0
