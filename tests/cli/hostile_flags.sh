#!/usr/bin/env bash
# The hostile-input catalogue's second half: flags, echoed values, standard
# streams and host memory, across subcommands (docs/reliability.md).
#
#   hostile_flags.sh CAPSIM CORPUS_DIR SANITIZED
#
# SANITIZED is 1 in the ASan build, whose runtime cannot start under an
# address-space limit: the cases that set one are skipped there.
set -u
capsim=$(realpath "$1")
corpus=$(realpath "$2")
sanitized=${3:-0}
passed=0 failed=0
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
source "$(dirname "$0")/hostile_lib.sh"

simple=$corpus/run_simple.jsonl
one_property=(--property capture.no-proxy-metadata-read --no-controls --no-regressions --no-progress)

# fail_case NAME WHY: a case checked by hand failed.
fail_case() {
  echo "FAIL $1: $2"
  failed=$((failed + 1))
}

# --- numbers: decimal digits only, everywhere ---------------------------------
fresh decimal_leading_zero
check decimal_leading_zero 0 "1 properties, 10 cases each" -- "$capsim" check --cases 010 "${one_property[@]}"
fresh decimal_hex
check decimal_hex 2 "--cases: '0x10' is not a non-negative decimal integer" -- "$capsim" check --cases 0x10
fresh decimal_negative_action
check decimal_negative_action 2 "--action: '-1' is not a non-negative decimal integer" -- "$capsim" explain "$simple" --action -1
fresh decimal_steps_octal_looking
check decimal_steps_octal_looking 2 "--steps: '08x' is not a non-negative decimal integer" -- "$capsim" run --steps 08x
fresh decimal_size_hex
check decimal_size_hex 2 "--memory-budget: '0x10' is not a decimal size" -- "$capsim" replay --memory-budget 0x10 "$simple"
fresh decimal_size_leading_zero
check decimal_size_leading_zero 0 "ok, 6 actions" -- "$capsim" replay --memory-budget 0010MiB "$simple"

# --- values that would be ignored: refused with the reason -----------------------
fresh empty_html
check empty_html 2 "--html: an empty value" -- "$capsim" explain "$simple" --html ''
fresh empty_inject
check empty_inject 2 "--inject: an empty value" -- "$capsim" check --inject ''
fresh render_list_with_graph
check render_list_with_graph 2 "--list excludes --graph" -- "$capsim" render "$simple" --list --graph tree
fresh what_if_extension_key
check what_if_extension_key 2 "'x_foo' is an extension key, which capsim ignores" -- "$capsim" explain "$simple" --what-if 'config x_foo=1'
fresh unknown_producer
edit "$simple" 1 'l.replace("\"producer\":\"capsim\"", "\"producer\":\"me\"")' t.jsonl
check unknown_producer 2 "t.jsonl:1:[0-9]+: field 'producer': unknown producer 'me'" -- "$capsim" replay t.jsonl

# --- values echoed from argv and the input: escaped, one line ------------------
fresh echo_argv_control_bytes
check echo_argv_control_bytes 2 'a\\x0ab\\x1b\[31m: cannot open' -- "$capsim" explain $'a\nb\x1b[31m'
fresh echo_trace_control_bytes
edit "$simple" 5 'l.replace("\"function\":\"foo\"", "\"function\":\"f\\u001b[31m\\noo\"")' t.jsonl
check echo_trace_control_bytes 2 'f\\x1b\[31m\\x0aoo' -- "$capsim" replay t.jsonl

# --- standard output: a closed pipe, --junit - --------------------------------
fresh stdout_closed_pipe
python3 - "$capsim" <<'EOF' >../out 2>../err
import os, subprocess, sys
read_end, write_end = os.pipe()
os.close(read_end)  # the reader is gone before capsim writes anything
done = subprocess.run([sys.argv[1], "check", "--list"], stdout=write_end,
                      stderr=subprocess.PIPE, text=True, timeout=20)
print(done.returncode, done.stderr.strip())
EOF
if grep -Eq "^2 capsim: error: standard output: write failed: Broken pipe$" ../out; then
  passed=$((passed + 1))
else
  fail_case stdout_closed_pipe "$(cat ../out ../err)"
fi

fresh junit_on_stdout
"$capsim" check --cases 2 "${one_property[@]}" --junit - >out.xml 2>report.txt
rc=$?
if [ "$rc" != 0 ] || ! head -1 out.xml | grep -q '^<?xml' || grep -q 'capsim check:' out.xml ||
  ! grep -q 'capsim check: 1 properties' report.txt; then
  fail_case junit_on_stdout "exit $rc; stdout starts $(head -c 60 out.xml | tr '\n' ' ')"
else
  passed=$((passed + 1))
fi
fresh junit_json_on_stdout
"$capsim" check --cases 2 "${one_property[@]}" --json --junit - >out.xml 2>report.json
rc=$?
if [ "$rc" != 0 ] || ! head -1 out.xml | grep -q '^<?xml' ||
  ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' report.json; then
  fail_case junit_json_on_stdout "exit $rc"
else
  passed=$((passed + 1))
fi

# --- one reader, one behaviour: a cut last line is named by every command ------
cut_warning="t.jsonl:20:1: warning: the last line is truncated \(162 bytes, no newline\)"
for command in "replay:0" "render:0" "explain:0" "diff --predicted:1" "export --chrome x.json:0"; do
  words=${command%:*}
  name="cut_last_line_${words%% *}"
  fresh "$name"
  head -c -30 "$simple" >t.jsonl
  EXPECT_NEW=1 check "$name" "${command##*:}" "$cut_warning" -- "$capsim" $words t.jsonl
done

# --- host memory ---------------------------------------------------------------
# 60 tensors of 64 MiB: more than the host gives under the limits below.
big() { big_tensors "$simple" 60 big.jsonl; }
# "${limited[@]}" KIB COMMAND...: COMMAND under an address-space limit.
limited=(bash -c 'ulimit -v "$0" && exec "$@"')
if [ "$sanitized" = 1 ]; then
  echo "skip budget_above_host, out_of_host_memory: ASan cannot start under ulimit -v"
else
  fresh budget_above_host
  big
  check budget_above_host 2 "--memory-budget: 1099511627776 bytes is more than this host can give \(RLIMIT_AS: 4096000000 bytes\)" -- "${limited[@]}" 4000000 "$capsim" replay --memory-budget 1TiB big.jsonl
  fresh out_of_host_memory
  big
  check out_of_host_memory 3 "^capsim: error: out of host memory" -- "${limited[@]}" 1100000 "$capsim" replay --memory-budget 1GiB big.jsonl
  fresh out_of_host_memory_export
  big
  check out_of_host_memory_export 3 "^capsim: error: out of host memory" -- "${limited[@]}" 1100000 "$capsim" export --chrome x.json --memory-budget 1GiB big.jsonl
fi

echo "hostile flags: $passed passed, $failed failed"
[ "$failed" = 0 ]
