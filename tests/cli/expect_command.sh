#!/usr/bin/env bash
# `capsim expect` (docs/ci-recipe.md): each limit held and broken, its exit
# statuses (0 all hold, 1 one broken, 2 bad input), the explanation of the
# decision that broke a limit, per-function limits, the limits file, --json
# and --junit, and no JUnit file left behind by bad input.
#   expect_command.sh CAPSIM CORPUS_DIR
set -u
capsim=$1
corpus=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "expect: $*"; exit 1; }
# run STATUS ARGS...: capsim expect ARGS, its output in $work/out, its status checked.
run() {
  local want=$1
  shift
  "$capsim" expect "$@" > "$work/out" 2>&1
  local got=$?
  [ "$got" = "$want" ] || { cat "$work/out"; fail "expect $* exited $got, not $want"; }
}
has() { grep -q -- "$1" "$work/out" || { cat "$work/out"; fail "no '$1' in the output"; }; }

kept=$corpus/issue_122192_two_iterations.jsonl      # 1 recording, 1 E1
copied=$corpus/issue_122192_three_iterations.jsonl  # x copied in at each replay (16 B)
moved=$corpus/mark_static_default_guard.jsonl       # 3 recordings, 2 re-recordings
warned=$corpus/warn_on_pending_backward.jsonl       # W1 once
eager=$corpus/fallback_to_eager_if_recompiling_too_many_times.jsonl  # 1 eager fallback

# Each limit, held and broken; a broken one shows explain's paragraph.
run 0 "$kept" --max-recordings 1
has "^ok   max_recordings (all functions): 1 <= 1$"
run 1 "$kept" --max-recordings 0
has "^FAIL max_recordings (all functions): 1 > 0$"
has "recorded a CUDA graph \[f\]"
run 0 "$moved" --max-rerecords 2
run 1 "$moved" --max-rerecords 1
has "re-recorded: a static input moved \[step\]"
run 0 "$copied" --max-copy-bytes-per-call 16
run 1 "$copied" --max-copy-bytes-per-call 15
has "^FAIL max_copy_bytes_per_call (all functions): 16 > 15$"
has "copied inputs into the graph \[f\]"
run 0 "$eager" --max-eager-fallbacks 1
run 1 "$eager" --max-eager-fallbacks 0
has "ran eagerly: past the re-record limit \[fwd\]"
run 0 "$kept" --errors 1
run 1 "$kept" --errors 0
has "Error: accessing tensor output of CUDAGraphs that has been overwritten"
has "fix:    Clone what you keep across calls"
run 0 "$warned" --warnings 1
run 1 "$warned" --warnings 0
has "pending, uninvoked backwards"
# The summary line, and several limits at once: 1 if any is broken.
run 1 "$kept" --max-recordings 1 --errors 0
has "issue_122192_two_iterations.jsonl: 1 of 2 limits hold$"

# Per function: FUNCTION=N; a name the run lacks is bad input.
run 0 "$moved" --max-rerecords step=2
run 1 "$moved" --max-rerecords step=1
has "^FAIL max_rerecords (step): 2 > 1$"
run 2 "$moved" --max-rerecords nope=1
has "capsim: error: .*field '--max-rerecords': no compiled function 'nope' in the run (known: step)"

# Bad input: no limits, a bad value, a bad file.
run 2 "$kept"
has "capsim: error: field '--limits': no limits given"
run 2 "$kept" --errors -1
run 2 "$kept" --errors 1x
has "field '--errors': expected N or FUNCTION=N (N a count), got '1x'"
echo '{"type":"header"' > "$work/bad.jsonl"
run 2 "$work/bad.jsonl" --errors 0

# The limits file: top-level keys and [function.NAME] tables.
cat > "$work/limits.toml" <<'TOML'
max_recordings = 3
[function.step]
max_rerecords = 1
TOML
run 1 "$moved" --limits "$work/limits.toml"
has "^ok   max_recordings (all functions): 3 <= 3$"
has "^FAIL max_rerecords (step): 2 > 1$"
printf 'max_recordings = 3\nmax_rerecord = 1\n' > "$work/typo.toml"
run 2 "$moved" --limits "$work/typo.toml"
has "typo.toml:2: field 'max_rerecord': unknown limit"
printf 'errors = -1\n' > "$work/negative.toml"
run 2 "$moved" --limits "$work/negative.toml"
has "negative.toml:1: field 'errors': expected a count"
printf 'errors = \n' > "$work/broken.toml"
run 2 "$moved" --limits "$work/broken.toml"
has "broken.toml:1: field '--limits': "

# --json: one object; --junit: a suite with one case per limit.
run 1 "$kept" --max-recordings 1 --errors 0 --json --junit "$work/junit.xml"
python3 - "$work/out" <<'PY' || fail "--json is not the documented object"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["holds"] is False and j["as_on_a_gpu"] is False, j
a, b = j["limits"]
assert (a["limit"], a["figure"], a["holds"], a["action"]) == ("max_recordings", 1, True, None), a
assert (b["limit"], b["max"], b["figure"], b["holds"]) == ("errors", 0, 1, False), b
assert b["action"] == 5 and b["explanation"]["title"] == "error: an output was overwritten", b
PY
grep -q '<testsuite name="capsim.expect" tests="2" failures="1"' "$work/junit.xml" || fail "junit suite"
grep -q '<failure message="1 &gt; 0">' "$work/junit.xml" || fail "junit failure"
rm -f "$work/junit.xml"
run 2 "$kept" --errors x --junit "$work/junit.xml"
[ -e "$work/junit.xml" ] && fail "bad input left a JUnit file"
echo "expect: ok"
