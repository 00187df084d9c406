#!/usr/bin/env bash
# The hostile-input catalogue's reports: what-if, expect, explain's page and
# JSON, value semantics, inputs read once, one escaping rule per output
# format, documents on standard output, and the messages of limits files
# (docs/reliability.md, "Reports, pages and values").
#
#   hostile_reports.sh CAPSIM DATA_DIR SANITIZED
#
# Each case runs in a fresh folder under a 20-second limit (hostile_lib.sh's
# check) or is checked by hand; SANITIZED is 1 in the ASan build, where the
# cases under an address-space limit are skipped.
set -u
capsim=$(realpath "$1")
data=$(realpath "$2")
sanitized=${3:-0}
passed=0 failed=0
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
source "$(dirname "$0")/hostile_lib.sh"

simple=$data/corpus/run_simple.jsonl
buffer=$data/programs/persistent_buffer_copied.jsonl
cpu_run=$data/corpus/torch/2.11.0/launcher_reduce_overhead.jsonl

fail_case() {
  echo "FAIL $1: $2"
  failed=$((failed + 1))
}
pass_case() { passed=$((passed + 1)); }

# program FILE LINE...: a program of these lines (a short header first).
program() {
  local out=$1
  shift
  printf '%s\n' "$@" >"$out"
}

# --- what-if: every edit simulated as the original was, none dropped --------------
# One large unused tensor turns values off (auto); the copied input's mark
# must still run, values off too, and be reported.
large_unused() {
  { head -2 "$buffer"
    echo '{"type":"action","action":"new_tensor","name":"unused","sizes":[33554432]}'
    tail -n +3 "$buffer"; } >big.jsonl
}
fresh what_if_auto_values_off
large_unused
check what_if_auto_values_off 0 "^what-if mark-static=state: better: .*copies 2 \(512 B\) -> 0 \(0 B\)" -- "$capsim" explain big.jsonl --what-if auto
fresh what_if_one_values_off
large_unused
check what_if_one_values_off 0 "^what-if mark-static=state: better: " -- "$capsim" explain big.jsonl --what-if mark-static=state
fresh what_if_auto_reports_worse
check what_if_auto_reports_worse 0 "^what-if mark-static=x: worse: .*re-recorded 0 -> 1" -- "$capsim" explain "$data/programs/static_weight_copied_input.jsonl" --what-if auto
fresh what_if_auto_json_outcomes
"$capsim" explain "$data/programs/static_weight_copied_input.jsonl" --what-if auto --json >out.json 2>err.txt
if python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["what_if"]; assert w and all("outcome" in e for e in w), w' out.json; then
  pass_case
else
  fail_case what_if_auto_json_outcomes "$(head -c 300 out.json) $(cat err.txt)"
fi

# --- one saturating sum for every figure ------------------------------------------
# 16,385 copy_in events of 2^50 bytes in one call: past 2^64, which a
# wrapping sum reads as a small number ("ok 0 <= 0").
huge_copies() {
  python3 - "$data/corpus/alias_of_parameter.jsonl" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
out = []
for l in lines:
    if l.get("event") == "copy_in" and not any(o.get("event") == "copy_in" for o in out):
        for _ in range(16385):
            out.append(dict(l, bytes=2**50))
    else:
        out.append(l)
for i, l in enumerate(out):
    l["seq"] = i
open("huge.jsonl", "w").write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in out))
EOF
}
fresh sum_saturates_expect
huge_copies
check sum_saturates_expect 1 "FAIL max_copy_bytes_per_call \(all functions\): more than 18446744073709551615 > 0" -- "$capsim" expect huge.jsonl --max-copy-bytes-per-call 0
fresh sum_saturates_expect_json
huge_copies
"$capsim" expect huge.jsonl --max-copy-bytes-per-call 0 --json >out.json 2>err.txt
if python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["limits"][0]; assert l["figure_saturated"] is True and l["holds"] is False, l' out.json; then
  pass_case
else
  fail_case sum_saturates_expect_json "$(head -c 300 out.json)"
fi
fresh sum_saturates_chart
huge_copies
"$capsim" explain huge.jsonl --html page.html >out.txt 2>err.txt
if grep -q "more than 16777216.0 TiB" page.html; then pass_case; else fail_case sum_saturates_chart "no saturated figure on the page"; fi

# --- values PyTorch refuses or rounds otherwise -------------------------------------
fresh value_write_into_expand
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"function","function":"f","mode":"inference","inputs":["x","y"],"ops":[{"op":"expand","args":[0],"sizes":[4]},{"op":"add_","args":[2,1]}],"outputs":[3]}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[1]}' \
  '{"type":"action","action":"new_tensor","name":"y","sizes":[4]}' \
  '{"type":"action","action":"call","function":"f","args":["x","y"],"outputs":["z"]}'
check value_write_into_expand 2 "add_: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone\(\) the tensor before performing the operation." -- "$capsim" simulate p.jsonl
fresh value_amax_empty_dim
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"function","function":"f","mode":"inference","inputs":["x"],"ops":[{"op":"amax","args":[0],"dims":[0]}],"outputs":[1]}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[0,3]}' \
  '{"type":"action","action":"call","function":"f","args":["x"],"outputs":["z"]}'
check value_amax_empty_dim 2 "amax\(\): Expected reduction dim 0 to have non-zero size." -- "$capsim" simulate p.jsonl
fresh value_amax_error_names_amax
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"function","function":"f","mode":"inference","inputs":["x"],"ops":[{"op":"amax","args":[0],"dims":[5]}],"outputs":[1]}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[2,3]}' \
  '{"type":"action","action":"call","function":"f","args":["x"],"outputs":["z"]}'
check value_amax_error_names_amax 2 "op 0 \(amax\): amax: dim 5 is out of range for rank 2" -- "$capsim" simulate p.jsonl
fresh value_fill_int8_overflow
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[2],"dtype":"int8","fill":300}'
check value_fill_int8_overflow 2 "p.jsonl:2:[0-9]+: field 'fill': value cannot be converted to type int8_t without overflow" -- "$capsim" simulate p.jsonl
fresh value_fill_int64_overflow
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[2],"dtype":"int64","fill":1e20}'
check value_fill_int64_overflow 2 "field 'fill': value cannot be converted to type int64_t without overflow" -- "$capsim" simulate p.jsonl
fresh value_fill_bfloat16_rounds_to_even
# 1 + 3*2^-8 lies halfway between two bfloat16 values: it rounds to the
# even one, 1.015625 (truncation gave 1.0078125).
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[1],"dtype":"bfloat16","fill":1.01171875}' \
  '{"type":"action","action":"read","name":"x"}'
check value_fill_bfloat16_rounds_to_even 0 "1\.015625" -- "$capsim" simulate p.jsonl

# --- cost that follows the input --------------------------------------------------
fresh values_limit_counts_elements
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[1048576,1048576],"strides":[0,0]}' \
  '{"type":"action","action":"read","name":"x"}'
check values_limit_counts_elements 2 "with values on" -- "$capsim" simulate p.jsonl --values on
fresh values_limit_auto_turns_off
program p.jsonl '{"type":"header","name":"p"}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[1048576,1048576],"strides":[0,0]}' \
  '{"type":"action","action":"read","name":"x"}'
check values_limit_auto_turns_off 0 "values off \(tensor 'x' has more than the 16777216 elements" -- "$capsim" simulate p.jsonl
# Many identical calls: every format folds them, and the page stays small.
many_calls() {
  { head -4 "$buffer"
    for _ in $(seq 1 4000); do tail -n 1 "$buffer"; done; } >many.jsonl
}
fresh fold_json
many_calls
"$capsim" explain many.jsonl --json >out.json 2>err.txt
if python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["explanations"]; assert len(e) <= 4 and any(len(x.get("again", [])) > 3000 for x in e), len(e)' out.json; then
  pass_case
else
  fail_case fold_json "$(head -c 200 out.json) $(cat err.txt)"
fi
fresh fold_html_bounded
many_calls
"$capsim" explain many.jsonl --html page.html >out.txt 2>err.txt
size=$(stat -c %s page.html 2>/dev/null || echo 0)
if [ "$size" -gt 0 ] && [ "$size" -lt 400000 ] && grep -q "more times, the same" page.html; then
  pass_case
else
  fail_case fold_html_bounded "page of $size bytes"
fi
if [ "$sanitized" = 1 ]; then
  echo "skip values_off_budget_not_host: ASan cannot start under ulimit -v"
else
  fresh values_off_budget_not_host
  check values_off_budget_not_host 0 "^simulated " -- bash -c 'ulimit -v 4000000 && exec "$0" simulate "$1" --values off --memory-budget 1TiB' "$capsim" "$buffer"
  fresh values_on_budget_host
  check values_on_budget_host 2 "field '--memory-budget': 1099511627776 bytes is more than this host can give" -- bash -c 'ulimit -v 4000000 && exec "$0" simulate "$1" --values on --memory-budget 1TiB' "$capsim" "$buffer"
fi

# --- inputs read once: FIFOs, process substitution, "-" ---------------------------
fresh read_once_process_substitution
check read_once_process_substitution 0 "decisions explained" -- bash -c '"$0" explain <(cat "$1")' "$capsim" "$simple"
fresh read_once_expect_process_substitution
check read_once_expect_process_substitution 0 "limits hold" -- bash -c '"$0" expect <(cat "$1") --errors 9' "$capsim" "$simple"
fresh read_once_fifo
mkfifo ../fifo
# The writer opens the FIFO under the time limit too: if capsim never read
# it, the open would block for ever.
(timeout 20 sh -c 'cat "$0" >"$1"' "$simple" ../fifo 2>/dev/null &)
check read_once_fifo 0 "decisions explained" -- "$capsim" explain ../fifo
fresh read_once_stdin_explain
check read_once_stdin_explain 0 "<stdin>: [0-9]+ decisions explained" -- bash -c '"$0" explain - <"$1"' "$capsim" "$simple"
fresh read_once_stdin_program
check read_once_stdin_program 0 "simulated <stdin>: 6 actions" -- bash -c '"$0" simulate - <"$1"' "$capsim" "$buffer"
fresh read_once_stdin_replay
check read_once_stdin_replay 0 "ok" -- bash -c '"$0" replay - <"$1"' "$capsim" "$simple"
fresh read_once_limits_process_substitution
check read_once_limits_process_substitution 0 "limits hold" -- bash -c '"$0" expect "$1" --limits <(printf "errors = 9\n")' "$capsim" "$simple"
fresh read_once_html_from_pipe
EXPECT_NEW=1 check read_once_html_from_pipe 0 "decisions explained" -- bash -c '"$0" explain <(cat "$1") --html page.html && grep -q "<svg" page.html' "$capsim" "$simple"

# --- capsim reads what capsim wrote with values off ---------------------------------
# A program too large for values on (auto turns them off), with a read that
# carries no digest: every reader re-simulates it with values off.
for words in "replay" "render" "diff --predicted" "explain" "export --chrome c.json"; do
  name="values_off_trace_${words%% *}"
  fresh "$name"
  large_unused
  echo '{"type":"action","action":"read","name":"state"}' >>big.jsonl
  "$capsim" simulate big.jsonl -o off.jsonl >/dev/null 2>&1
  EXPECT_NEW=1 check "$name" 0 "." -- "$capsim" $words off.jsonl
done

# --- one escaping rule per output format --------------------------------------------
odd=$'\xff\x1b[31mname.jsonl'
fresh escape_name_explain_json
cp "$simple" "$odd"
"$capsim" explain --json "$odd" >out.json 2>err.txt
rc=$?
if [ "$rc" = 0 ] && python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["file"].startswith("\\xff")' out.json; then
  pass_case
else
  fail_case escape_name_explain_json "exit $rc: $(head -c 200 err.txt)"
fi
fresh escape_name_expect_json
cp "$simple" "$odd"
"$capsim" expect --json "$odd" --errors 9 >out.json 2>err.txt
rc=$?
if [ "$rc" = 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' out.json; then
  pass_case
else
  fail_case escape_name_expect_json "exit $rc: $(head -c 200 err.txt)"
fi
fresh escape_name_junit
cp "$simple" "$odd"
"$capsim" expect "$odd" --errors 9 --junit out.xml >out.txt 2>err.txt
rc=$?
if [ "$rc" = 0 ] && python3 -c 'import sys, xml.dom.minidom as m; d=m.parse(sys.argv[1]); assert "\\xff" in d.documentElement.getAttribute("file")' out.xml; then
  pass_case
else
  fail_case escape_name_junit "exit $rc: $(head -c 200 err.txt)"
fi
fresh escape_name_html
cp "$simple" "$odd"
"$capsim" explain "$odd" --html page.html >out.txt 2>err.txt
rc=$?
if [ "$rc" = 0 ] && ! LC_ALL=C grep -q $'\xff' page.html && grep -q '\\xff' page.html && ! grep -q $'\x1b' page.html; then
  pass_case
else
  fail_case escape_name_html "exit $rc"
fi
# A stack trace with a newline and an escape sequence: no input byte may
# start a line of the report, nor reach the terminal.
fresh escape_stdout_stack_trace
python3 - "$cpu_run" <<'EOF'
import json, sys
out = []
for line in open(sys.argv[1]):
    l = json.loads(line)
    if l.get("type") == "function" and l.get("stack_traces"):
        l["stack_traces"] = [s + "\nok   errors (all functions): 0 <= 0\x1b]0;owned\x07" if s else s
                             for s in l["stack_traces"]]
    out.append(json.dumps(l, separators=(",", ":")))
open("t.jsonl", "w").write("\n".join(out) + "\n")
EOF
"$capsim" explain t.jsonl --as-on-a-gpu >out.txt 2>err.txt
"$capsim" expect t.jsonl --errors 0 >>out.txt 2>>err.txt
if grep -q "^ok   errors" out.txt || grep -q $'\x1b' out.txt || ! grep -q 'owned' out.txt; then
  fail_case escape_stdout_stack_trace "$(grep -n 'owned' out.txt | head -3)"
else
  pass_case
fi

# --- a document on "-": the report goes to stderr -----------------------------------
fresh junit_expect_on_stdout
"$capsim" expect "$simple" --errors 9 --junit - >out.xml 2>report.txt
rc=$?
if [ "$rc" = 0 ] && python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' out.xml &&
  grep -q "limits hold" report.txt; then
  pass_case
else
  fail_case junit_expect_on_stdout "exit $rc; stdout starts $(head -c 60 out.xml | tr '\n' ' ')"
fi
fresh html_explain_on_stdout
"$capsim" explain "$simple" --html - >out.html 2>report.txt
rc=$?
if [ "$rc" = 0 ] && head -1 out.html | grep -q '^<!DOCTYPE html>' && ! grep -q "decisions explained" out.html &&
  grep -q "decisions explained" report.txt; then
  pass_case
else
  fail_case html_explain_on_stdout "exit $rc; stdout starts $(head -c 60 out.html | tr '\n' ' ')"
fi

fresh dot_replay_on_stdout
sed 's/"function":"foo","graph":0,"parent":null/"function":"foo","graph":0,"parent":0/' "$simple" >t.jsonl
"$capsim" replay t.jsonl --dot - >out.dot 2>report.txt
rc=$?
if [ "$rc" = 1 ] && head -1 out.dot | grep -q '^digraph' && ! grep -q "diverged" out.dot &&
  grep -q "diverged: field 'parent'" report.txt; then
  pass_case
else
  fail_case dot_replay_on_stdout "exit $rc; stdout starts $(head -c 60 out.dot | tr '\n' ' ')"
fi

# --- messages: the file, the line and the key ----------------------------------------
fresh limits_unknown_function
printf 'errors = 0\n\n[function.nope]\nerrors = 0\n' >limits.toml
check limits_unknown_function 2 "limits.toml:4: field 'function.nope.errors': no compiled function 'nope'" -- "$capsim" expect "$simple" --limits limits.toml
fresh limits_duplicate_key
printf 'errors = 0\n"errors" = 1\n' >limits.toml
check limits_duplicate_key 2 "limits.toml:2: field 'errors': given twice" -- "$capsim" expect "$simple" --limits limits.toml
fresh limits_missing
check limits_missing 2 "nope.toml: cannot open: No such file or directory" -- "$capsim" expect "$simple" --limits nope.toml
fresh limits_directory
mkdir d
check limits_directory 2 "d: cannot read: Is a directory" -- "$capsim" expect "$simple" --limits d
fresh uses_outside_targets
python3 - "$data/corpus/torch/2.11.0" <<'EOF'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    lines = [json.loads(l) for l in open(path)]
    hit = [l for l in lines if l.get("event") == "ca_graph" and l.get("uses")]
    if hit:
        hit[0]["uses"][0] = [1000000]
        open("t.jsonl", "w").write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))
        break
EOF
check uses_outside_targets 2 "t.jsonl:[0-9]+:[0-9]+: field 'uses\[0\]\[0\]': 1000000 is not an index into 'targets'" -- "$capsim" replay t.jsonl
fresh render_graph_twice
check render_graph_twice 2 "--graph program:0 and the operand's '#tree' both name a graph" -- "$capsim" render "$simple#tree" --graph program:0
fresh render_list_with_operand_graph
check render_list_with_operand_graph 2 "--list lists every graph; the operand's '#tree' names one" -- "$capsim" render "$simple#tree" --list

echo "hostile reports: $passed passed, $failed failed"
[ "$failed" = 0 ]
