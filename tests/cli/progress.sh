#!/usr/bin/env bash
# The progress line of long commands (cli/progress.hpp): drawn on stderr
# when stdout and stderr are terminals (script(1) gives the command one),
# redrawn only when its percentage changes, and absent from logs and pipes.
#
#   progress.sh CAPSIM CORPUS_DIR
set -u
capsim=$(realpath "$1")
corpus=$(realpath "$2")
command -v script >/dev/null || { echo "no script(1): skipped"; exit 77; }
passed=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

expect() {  # expect NAME CONDITION-TEXT STATUS
  if [ "$3" = 0 ]; then passed=$((passed + 1)); else echo "FAIL $1: $2"; failed=$((failed + 1)); fi
}

# On a terminal: the line, erased before the report, and at most one
# redraw per percent (101 for 0..100 %), not one per replay.
script -qec "$capsim run --steps 20000" /dev/null >"$out"
draws=$(tr '\r' '\n' <"$out" | grep -c "capsim run: replays")
expect run_on_a_terminal "a progress line ($draws draws)" $([ "$draws" -ge 2 ] && [ "$draws" -le 101 ]; echo $?)
grep -q "steps replayed: 20000" "$out"
expect run_report_after_the_line "the report" $?

script -qec "$capsim replay $corpus/run_simple.jsonl $corpus/rerecord_if_static_input_address_changed.jsonl" /dev/null >"$out"
tr '\r' '\n' <"$out" | grep -q "capsim replay: traces 1/2 (50%)"
expect replay_of_several_traces "a line per trace" $?

# Not on a terminal: nothing but the report.
"$capsim" run --steps 2000 >/dev/null 2>"$out"
expect run_in_a_log "stderr empty, got $(head -c 80 "$out")" $([ ! -s "$out" ]; echo $?)
script -qec "$capsim run --steps 2000 >/dev/null" /dev/null >"$out"
expect run_with_stdout_to_a_file "no line" $(! grep -q "capsim run" "$out"; echo $?)

echo "progress: $passed passed, $failed failed"
[ "$failed" = 0 ]
