#!/usr/bin/env bash
# The bad-input catalogue: hostile inputs across every subcommand.
#
#   hostile_inputs.sh CAPSIM CORPUS_DIR
#
# Each case runs in a fresh folder under a 20-second limit (far below a hang:
# each takes milliseconds to a second) and asserts the exit code (2 for bad
# input, 1 where the trace is valid and diverges, 0 where the input is odd but
# valid), that stdout and stderr match a pattern naming the file, line and
# field, that an exit 2 printed one line on stderr, and that no file was left
# behind other than those the case made itself or expects. Inputs are copies
# of corpus traces with one edit. Never touches the machine's real /dev: a
# device or a pipe as output is a FIFO stand-in.
set -u
capsim=$(realpath "$1")
corpus=$(realpath "$2")
passed=0 failed=0
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# edit, check and fresh: hostile_lib.sh.
source "$(dirname "$0")/hostile_lib.sh"

t=$corpus/rerecord_if_static_input_address_changed.jsonl
simple=$corpus/run_simple.jsonl

# --- the two traces of the issue, and limits at the reader ----------------
fresh depth_render
edit "$corpus/warn_on_pending_backward.jsonl" 6 'l.replace("\"depth\":0", "\"depth\":2147483648")' t.jsonl
check depth_render 2 "t.jsonl:6:[0-9]+: field 'depth': 2147483648 is above the limit" -- "$capsim" render t.jsonl -o x.dot
check depth_replay 2 "t.jsonl:6:[0-9]+: field 'depth'" -- "$capsim" replay t.jsonl
fresh steps_export
edit "$corpus/empty_storage.jsonl" 12 'l.replace("\"steps\":2", "\"steps\":9223372036854775807")' t.jsonl
check steps_export 2 "t.jsonl:12:[0-9]+: field 'steps': 9223372036854775807 is above the limit" -- "$capsim" export --chrome out.json t.jsonl
fresh negative_depth
edit "$corpus/warn_on_pending_backward.jsonl" 6 'l.replace("\"depth\":0", "\"depth\":-1")' t.jsonl
check negative_depth 2 "t.jsonl:6:[0-9]+: field 'depth': -1 is below the limit of 0" -- "$capsim" render t.jsonl
fresh depth_2p31_diff
edit "$corpus/warn_on_pending_backward.jsonl" 6 'l.replace("\"depth\":0", "\"depth\":2147483647")' t.jsonl
check depth_2p31_diff 2 "t.jsonl:6:[0-9]+: field 'depth'" -- "$capsim" diff --predicted t.jsonl
fresh static_index_huge
edit "$simple" 11 'l.replace("\"non_static\":[0]", "\"non_static\":[0,9223372036854775807]")' t.jsonl
check static_index_huge 2 "t.jsonl:11:[0-9]+: field 'non_static\[1\]'" -- "$capsim" replay t.jsonl
fresh copies_huge
edit "$t" 19 'l.replace("\"copies\":1", "\"copies\":2147483648")' t.jsonl
check copies_huge 2 "t.jsonl:19:[0-9]+: field 'copies'" -- "$capsim" export --chrome o.json t.jsonl

# --- numbers the JSON reader must name precisely --------------------------
fresh index_float
edit "$t" 3 'l.replace("\"index\":0", "\"index\":1.0")' t.jsonl
check index_float 2 "t.jsonl:3:[0-9]+: field 'index': expected an integer, got a number with a fraction" -- "$capsim" replay t.jsonl
check index_float_render 2 "t.jsonl:3:[0-9]+: field 'index'" -- "$capsim" render t.jsonl
fresh index_below
edit "$t" 3 'l.replace("\"index\":0", "\"index\":-9223372036854775809")' t.jsonl
check index_below 2 "t.jsonl:3:[0-9]+: field 'index': integer out of range \(less than -2\^63\)" -- "$capsim" replay t.jsonl
fresh index_above
edit "$t" 3 'l.replace("\"index\":0", "\"index\":18446744073709551616")' t.jsonl
check index_above 2 "t.jsonl:3:[0-9]+: field 'index': integer out of range \(more than 2\^63-1\)" -- "$capsim" replay t.jsonl
fresh overflow_literal
edit "$t" 3 'l.replace("\"index\":0", "\"index\":1e400")' t.jsonl
check overflow_literal 2 "^capsim: error: t.jsonl:3:[1-9][0-9]+: invalid JSON: number overflow parsing '1e400'$" -- "$capsim" replay t.jsonl
fresh nan_literal
edit "$t" 3 'l.replace("\"index\":0", "\"index\":NaN")' t.jsonl
check nan_literal 2 "t.jsonl:3:[0-9]+: invalid JSON" -- "$capsim" replay t.jsonl
fresh duplicate_key
edit "$t" 3 'l.replace("\"name\":", "\"name\":\"x\",\"name\":", 1)' t.jsonl
check duplicate_key 2 "t.jsonl:3:[0-9]+: invalid JSON: duplicate key \"name\"" -- "$capsim" replay t.jsonl
check duplicate_key_export 2 "t.jsonl:3:[0-9]+: invalid JSON: duplicate key" -- "$capsim" export --chrome o.json t.jsonl
fresh negative_size
edit "$t" 3 'l.replace("\"sizes\":[", "\"sizes\":[-4,", 1)' t.jsonl
check negative_size 2 "t.jsonl:3:[0-9]+: .*sizes" -- "$capsim" replay t.jsonl
fresh size_product
edit "$t" 3 'l.replace("\"sizes\":[", "\"sizes\":[2147483647,2147483647,2147483647,", 1)' t.jsonl
check size_product 2 "t.jsonl:3:[0-9]+: .*(elements|sizes)" -- "$capsim" replay t.jsonl

# --- bytes -----------------------------------------------------------------
fresh invalid_utf8
python3 -c "
import sys
b = open('$t', 'rb').read().split(b'\n')
b[2] = b[2].replace(b'\"name\":\"', b'\"name\":\"\xff\xfe', 1)
open('t.jsonl', 'wb').write(b'\n'.join(b))"
check invalid_utf8 2 "t.jsonl:3:[0-9]+: invalid JSON.*ill-formed UTF-8" -- "$capsim" replay t.jsonl
fresh bom
python3 -c "open('t.jsonl', 'wb').write(b'\xef\xbb\xbf' + open('$t', 'rb').read())"
# A UTF-8 byte order mark before the header is skipped (RFC 8259 lets a reader
# ignore one); the trace is otherwise the corpus's and matches.
check bom 0 "ok, .* match the model" -- "$capsim" replay t.jsonl
fresh crlf
python3 -c "open('t.jsonl', 'wb').write(open('$t', 'rb').read().replace(b'\n', b'\r\n'))"
check crlf 0 "ok, .* match the model" -- "$capsim" replay t.jsonl
fresh nul_byte
python3 -c "open('t.jsonl', 'wb').write(open('$t', 'rb').read().replace(b'\"seq\":2', b'\"seq\":\x002', 1))"
check nul_byte 2 "t.jsonl:3:[0-9]+: invalid JSON" -- "$capsim" replay t.jsonl
fresh long_line
python3 -c "open('t.jsonl', 'w').write(open('$t').readline() + '{\"seq\":1,\"x\":\"' + 'a' * 1100000 + '\"}\n')"
check long_line 2 "t.jsonl:2:1048577: line longer than the limit" -- "$capsim" replay t.jsonl
fresh deep_nesting
python3 -c "open('t.jsonl', 'w').write(open('$t').readline() + '[' * 100000 + ']' * 100000 + '\n')"
check deep_nesting 2 "t.jsonl:2:1: nesting deeper than 32" -- "$capsim" render t.jsonl
fresh empty_file
: >t.jsonl
check empty_file 2 "t.jsonl:1:1: empty file" -- "$capsim" export --chrome o.json t.jsonl
fresh huge_function
python3 - "$t" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
f = json.loads(lines[1])
f["ops"] = [{"op": "mul", "args": [0, 0]}] * 5000
lines[1] = json.dumps(f, separators=(",", ":"))
open("t.jsonl", "w").write("\n".join(lines))
EOF
check huge_function 2 "t.jsonl:2:[0-9]+: field 'ops'.*4096" -- "$capsim" replay t.jsonl

# --- references and structure ----------------------------------------------
fresh dangling_tensor
edit "$simple" 5 'l.replace("\"args\":[\"a\"]", "\"args\":[\"nope\"]")' t.jsonl
check dangling_tensor 2 "t.jsonl:5:[0-9]+: .*nope" -- "$capsim" replay t.jsonl
fresh event_before_action
edit "$t" 3 '"{\"seq\":2,\"type\":\"event\",\"action\":0,\"event\":\"warmup\",\"fid\":0,\"function\":\"f\",\"node\":-1,\"depth\":0}"' t.jsonl
check event_before_action 2 "t.jsonl:3:[0-9]+: field 'action': an event before the first action" -- "$capsim" replay t.jsonl
fresh seq_gap
edit "$t" 3 'l.replace("\"seq\":2", "\"seq\":7")' t.jsonl
check seq_gap 2 "t.jsonl:3:[0-9]+: field 'seq': sequence number 7 skips ahead" -- "$capsim" diff t.jsonl t.jsonl
fresh version_2
edit "$t" 1 'l.replace("\"version\":1", "\"version\":2")' t.jsonl
check version_2 2 "t.jsonl:1:[0-9]+: field 'version': unsupported version 2" -- "$capsim" render t.jsonl
fresh memory_budget
big_tensors "$t" 70 t.jsonl
check memory_budget 2 "t.jsonl:[0-9]+:1: action [0-9]+ \(new_tensor\): out of simulated device memory" -- "$capsim" replay --memory-budget 256MiB t.jsonl
check memory_budget_flag 2 "--memory-budget: Value 1024 not in range" -- "$capsim" replay --memory-budget 1KiB t.jsonl

# --- files that are not trace files ------------------------------------------
fresh directory_input
mkdir d
check directory_input 2 "^capsim: error: d: cannot read: Is a directory$" -- "$capsim" replay d
check directory_input_export 2 "d: cannot read: Is a directory" -- "$capsim" export --chrome o.json d
check missing_input 2 "nope.jsonl: cannot open: No such file or directory" -- "$capsim" render nope.jsonl

# --- outputs -----------------------------------------------------------------
fresh onto_input_export
cp "$t" t.jsonl
check onto_input_export 2 "t.jsonl: is the input t.jsonl" -- "$capsim" export --chrome t.jsonl t.jsonl
cmp -s t.jsonl "$t" || { echo "FAIL onto_input_export: the input changed"; failed=$((failed + 1)); }
fresh onto_input_render
cp "$t" t.dot
check onto_input_render 2 "t.dot: is the input t.dot" -- "$capsim" render t.dot -o t.dot
check onto_input_beside 2 "t.dot: is the input t.dot" -- "$capsim" render t.dot -o t.svg
cmp -s t.dot "$t" || { echo "FAIL onto_input_render: the input changed"; failed=$((failed + 1)); }
fresh onto_input_replay_dot
cp "$t" x.dot
check onto_input_replay_dot 2 "x.dot: is the input x.dot" -- "$capsim" replay --dot x.dot x.dot
fresh onto_input_diff
cp "$t" a.jsonl
cp "$simple" b.jsonl
ln -s a.jsonl link.dot
check onto_input_diff 2 "a.jsonl: is the input a.jsonl" -- "$capsim" diff a.jsonl b.jsonl -o a.jsonl
check onto_input_through_link 2 "link.dot: is the input a.jsonl" -- "$capsim" diff a.jsonl b.jsonl -o link.dot
cmp -s a.jsonl "$t" || { echo "FAIL onto_input_diff: the input changed"; failed=$((failed + 1)); }
fresh output_is_directory
mkdir out
check output_is_directory 2 "out: cannot write: Is a directory" -- "$capsim" record run_simple -o out
check output_in_missing_dir 2 "no/such/t.jsonl: cannot write: No such file or directory" -- "$capsim" record run_simple -o no/such/t.jsonl
fresh output_fifo
mkfifo pipe
(cat pipe >../got &)
check output_fifo 0 "recorded run_simple: 20 lines to pipe" -- "$capsim" record run_simple -o pipe
[ -p pipe ] || { echo "FAIL output_fifo: the FIFO was replaced"; failed=$((failed + 1)); }
sleep 0.2
cmp -s ../got "$simple" || { echo "FAIL output_fifo: the reader did not get the trace"; failed=$((failed + 1)); }
fresh output_fifo_chrome
mkfifo pipe
(cat pipe >../got &)
check output_fifo_chrome 0 "exported .* to pipe" -- "$capsim" export --chrome pipe "$simple"
[ -p pipe ] || { echo "FAIL output_fifo_chrome: the FIFO was replaced"; failed=$((failed + 1)); }
fresh output_fifo_render
mkfifo pipe
(cat pipe >../got &)
check output_fifo_render 0 "wrote pipe" -- "$capsim" render "$t" -o pipe
[ -p pipe ] || { echo "FAIL output_fifo_render: the FIFO was replaced"; failed=$((failed + 1)); }
# A private device node stands in for /dev/null and /dev/full (root can make
# one in a temporary folder; elsewhere the FIFO cases above cover "in place").
fresh output_device
if mknod null c 1 3 2>/dev/null && mknod full c 1 7 2>/dev/null; then
  check output_device_null 0 "recorded run_simple: 20 lines to null" -- "$capsim" record run_simple -o null
  check output_device_full 2 "full: write failed: No space left on device" -- "$capsim" export --chrome full "$t"
  [ -c null ] && [ -c full ] ||
    { echo "FAIL output_device: a device was replaced by a file"; failed=$((failed + 1)); }
else
  echo "skip output_device: cannot make a device node here (not root)"
fi
fresh output_symlink
: >real.jsonl
ln -s real.jsonl link.jsonl
check output_symlink 0 "recorded run_simple" -- "$capsim" record run_simple -o link.jsonl
[ -L link.jsonl ] && cmp -s real.jsonl "$simple" ||
  { echo "FAIL output_symlink: the link was replaced or its target not written"; failed=$((failed + 1)); }
fresh output_user_tmp
echo keep >t.jsonl.tmp
EXPECT_NEW=1 check output_user_tmp 0 "recorded run_simple" -- "$capsim" record run_simple -o t.jsonl
[ "$(cat t.jsonl.tmp)" = keep ] || { echo "FAIL output_user_tmp: a user's file was clobbered"; failed=$((failed + 1)); }
fresh output_stdout
check output_stdout 0 '^\{"seq":0,"type":"header"' -- "$capsim" record run_simple -o -
check output_stdout_render 0 '^digraph' -- "$capsim" render "$simple" -o -
fresh stdout_full
check stdout_full 2 "standard output: write failed: No space left on device" -- bash -c "\"$capsim\" replay \"$t\" >/dev/full"
check stdout_full_render 2 "standard output: write failed" -- bash -c "\"$capsim\" render \"$t\" >/dev/full"

# --- flags -------------------------------------------------------------------
fresh flags
check seed_negative 2 "--seed: '-1' is not an integer from 0 to 2\^64-1" -- "$capsim" check --seed -1
check seed_too_large 2 "--seed: '18446744073709551616' is not an integer" -- "$capsim" check --seed 18446744073709551616
check run_seed_text 2 "--seed: 'x' is not an integer" -- "$capsim" run --seed x
check regressions_missing 2 "--regressions: Directory does not exist: /nonexistent" -- "$capsim" check --regressions /nonexistent
check cases_too_many 2 "--cases: Value 1000001 not in range 1 to 1000000" -- "$capsim" check --cases 1000001
check max_size_too_large 2 "--max-size: Value 1000000 not in range" -- "$capsim" check --max-size 1000000
check graph_spec_bad 2 "pool" -- "$capsim" render "$t" --graph pool:abc
check graph_spec_huge 2 "--graph 'pool:99999999999999999999999': pool takes a trace line number" -- "$capsim" render "$t" --graph pool:99999999999999999999999
check graph_program_huge 2 "program:99999999999999999999999: not in this trace" -- "$capsim" diff "$t#program:99999999999999999999999" "$t#program:0"
check diff_missing_operand 2 "nope.jsonl: cannot open: No such file or directory" -- "$capsim" diff "$t" nope.jsonl
check junit_directory 2 "cannot write: Is a directory" -- "$capsim" check --property 'traces.*' --cases 1 --no-controls --no-regressions --junit .
check unknown_scenario 2 "unknown scenario 'run_simpel', did you mean 'run_simple'" -- "$capsim" record run_simpel -o x.jsonl
check capture_alias 0 "capture basic mode=functional" -- "$capsim" capture ca_basic
check capture_near 2 "unknown capture scenario 'bsic', did you mean 'basic'" -- "$capsim" capture bsic
check version_flag 0 "^capsim [0-9]+\.[0-9]+\.[0-9]+$" -- "$capsim" --version

# --- torch profiles: --torch and the header's config.torch_profile ----------
check torch_unknown 2 "--torch: unknown torch version '3.0' \(a release from 2.5 to 2.15" -- "$capsim" scenario run_simple --torch 3.0
check torch_unknown_record 2 "--torch: unknown torch version '2.4'" -- "$capsim" record run_simple --torch 2.4 -o x.jsonl
check torch_unknown_check 2 "--torch: unknown torch version '9'" -- "$capsim" check --torch 9
check torch_check_pinned 0 "torch 2.13" -- "$capsim" check --torch 2.13 --property 'loop.*' --cases 5 --no-controls --no-regressions
check torch_release 0 "torch_profile=2.14" -- "$capsim" scenario run_simple --torch 2.14.1
check torch_profiles 0 "^2.15 +PyTorch 2.15 \(the newest\)" -- "$capsim" version --profiles
fresh torch_header
edit "$simple" 1 'l.replace("\"poison_freed\":false}", "\"poison_freed\":false,\"torch_profile\":\"2.99\"}")' t.jsonl
check torch_header_unknown 2 "t.jsonl:1:[0-9]+: field 'config.torch_profile': unknown torch profile '2.99'" -- "$capsim" replay t.jsonl
check torch_replay_other 1 "diverge" -- "$capsim" replay "$corpus/liveness_mismatch_counts.jsonl" --torch classic

# --- partition cuts and the newer knobs -------------------------------------
part=$corpus/graph_partition_cpu_op.jsonl
fresh cuts_out_of_range
edit "$part" 2 'l.replace("\"end\":2", "\"end\":9")' t.jsonl
check cuts_out_of_range 2 "t.jsonl:2:[0-9]+: field 'partition_cuts\[0\].end': ops \[1, 9\) is empty or not within the 3 ops" -- "$capsim" replay t.jsonl
fresh cuts_overlapping
edit "$part" 2 'l.replace("\"reason\":\"cpu\"}]", "\"reason\":\"cpu\"},{\"begin\":0,\"end\":2,\"reason\":\"cpu\"}]")' t.jsonl
check cuts_overlapping 2 "t.jsonl:2:[0-9]+: field 'partition_cuts\[1\].begin': ops \[0, 2\) overlap or precede the cut before" -- "$capsim" replay t.jsonl
fresh knob_not_in_profile
edit "$simple" 1 'l.replace("\"poison_freed\":false}", "\"poison_freed\":false,\"cudagraph_or_error\":true}")' t.jsonl
check knob_not_in_profile 2 "t.jsonl:1:[0-9]+: field 'config.cudagraph_or_error': cudagraph_or_error is not a knob of the 'classic' profile" -- "$capsim" replay t.jsonl
fresh visible_out_of_range
edit "$part" 2 'l.replace("\"partition_cuts\"", "\"user_visible_outputs\":[1],\"partition_cuts\"")' t.jsonl
check visible_out_of_range 2 "t.jsonl:2:[0-9]+: field 'user_visible_outputs\[0\]': position 1 is not an output" -- "$capsim" replay t.jsonl
fresh cloning_mode
edit "$corpus/clone_live_output_on_new_generation.jsonl" 1 'l.replace("\"user_visible\"", "\"all\"")' t.jsonl
check cloning_mode 2 "t.jsonl:1:[0-9]+: field 'config.cudagraph_trees_generation_cloning': expected \"user_visible\"" -- "$capsim" replay t.jsonl

# --- 2.15's managed-input knobs and the skips S3, S4, S7 ---------------------
fresh managed_action
edit "$corpus/managed_input_rerecord_skip.jsonl" 1 'l.replace("\"skip\"}", "\"demote\"}")' t.jsonl
check managed_action 2 "t.jsonl:1:[0-9]+: field 'config.cudagraph_managed_input_rerecord_action': expected \"copy\" or \"skip\", got 'demote'" -- "$capsim" replay t.jsonl
fresh managed_not_in_profile
edit "$corpus/managed_input_rerecord_skip.jsonl" 1 'l.replace("\"2.15\"", "\"2.14\"")' t.jsonl
check managed_not_in_profile 2 "t.jsonl:1:[0-9]+: field 'config.cudagraph_managed_input_rerecord_action': cudagraph_managed_input_rerecord_action is not a knob of the '2.14' profile" -- "$capsim" replay t.jsonl
fresh non_tensor_kind
edit "$corpus/non_tensor_input_skip.jsonl" 2 'l.replace("\"float\"", "\"complex\"")' t.jsonl
check non_tensor_kind 2 "t.jsonl:2:[0-9]+: field 'non_tensor_inputs\[0\]': unknown kind 'complex'" -- "$capsim" replay t.jsonl
fresh devices_twice
edit "$corpus/multiple_devices_skip.jsonl" 2 'l.replace("[0,1]", "[1,1]")' t.jsonl
check devices_twice 2 "t.jsonl:2:[0-9]+: .*cuda_devices\[1\]: device 1 is over 63 or named twice" -- "$capsim" replay t.jsonl
fresh set_not_an_input
edit "$corpus/input_storage_mutation_skip.jsonl" 2 'l.replace("\"input_storage_mutations\":[0]", "\"input_storage_mutations\":[3]")' t.jsonl
check set_not_an_input 2 "t.jsonl:2:[0-9]+: .*input_storage_mutations\[0\]: index 3 is not an input" -- "$capsim" replay t.jsonl
fresh set_before_2_13
check set_before_2_13 2 "input_storage_mutations: a set_ on a graph input is modelled from 2.13" -- "$capsim" replay "$corpus/input_storage_mutation_skip.jsonl" --torch 2.12
fresh warmup_mark_before_2_14
check warmup_mark_before_2_14 2 "warmups_marked_incomplete: torch.compiler.cudagraph_mark_warmup_incomplete\(\) exists from 2.14" -- "$capsim" replay "$corpus/mark_warmup_incomplete.jsonl" --torch 2.13
fresh warmup_mark_over
edit "$corpus/mark_warmup_incomplete.jsonl" 2 'l.replace("\"warmups_marked_incomplete\":2", "\"warmups_marked_incomplete\":65")' t.jsonl
check warmup_mark_over 2 "t.jsonl:2:[0-9]+: field 'warmups_marked_incomplete': must be 0 to 64, got 65" -- "$capsim" replay t.jsonl

# --- real PyTorch traces: the release, the fields compiled autograd collects,
# a region's backward graph -------------------------------------------------
torch_corpus=$corpus/torch/2.11.0
fresh torch_release_unknown
edit "$torch_corpus/mlp_adam.jsonl" 1 'l.replace("\"x_torch_version\":\"2.11.0+cu130\"", "\"x_torch_version\":\"2.3.0\"")' t.jsonl
check torch_release_unknown 2 "t.jsonl:1:[0-9]+: field 'x_torch_version': release '2.3.0' has no torch profile" -- "$capsim" replay t.jsonl
fresh torch_release_other_profile
edit "$torch_corpus/mlp_adam.jsonl" 1 'l.replace("\"x_torch_version\":\"2.11.0+cu130\"", "\"x_torch_version\":\"2.15.0\"")' t.jsonl
check torch_release_other_profile 2 "t.jsonl:1:[0-9]+: field 'x_torch_version': release 2.15.0 is profile 2.15, but config.torch_profile is 2.11" -- "$capsim" replay t.jsonl
fresh saved_value_type
edit "$torch_corpus/mlp_adam.jsonl" 2 'l.replace("\"saved_values\":[{\"const\":\"1\"}", "\"saved_values\":[{\"const\":1}", 1)' t.jsonl
check saved_value_type 2 "t.jsonl:2:[0-9]+: field 'nodes\[0\].saved_values\[0\].const': expected a string" -- "$capsim" replay t.jsonl
fresh saved_value_kind
edit "$torch_corpus/mlp_adam.jsonl" 2 'l.replace("\"saved_values\":[{\"const\":\"1\"}", "\"saved_values\":[{\"bytes\":\"1\"}", 1)' t.jsonl
check saved_value_kind 2 "t.jsonl:2:[0-9]+: field 'nodes\[0\].saved_values\[0\]': expected null or one of tensor" -- "$capsim" replay t.jsonl
fresh aot_body_unknown_value
edit "$torch_corpus/twotensor_compiled_region.jsonl" 2 'l.replace("[{\"node\":0},{\"node\":2}]", "[{\"node\":0},{\"node\":99}]", 1)' t.jsonl
check aot_body_unknown_value 2 "t.jsonl:2:[0-9]+: field 'nodes\[1\].aot_backward.nodes\[0\].args\[1\].node': 99 refers to no value defined before it" -- "$capsim" replay t.jsonl
fresh aot_body_bad_epilogue
edit "$torch_corpus/twotensor_compiled_region.jsonl" 2 'l.replace("{\"plain\":2}", "{\"plain\":7}", 1)' t.jsonl
check aot_body_bad_epilogue 2 "t.jsonl:2:[0-9]+: field 'nodes\[1\].aot_backward.epilogue\[1\].plain': output 7 of 3" -- "$capsim" replay t.jsonl

# --- capsim simulate: a program file (a trace without events) ---------------
prog=$corpus/../programs/static_weight_copied_input.jsonl
fresh simulate_event_line
edit "$prog" 5 'l + "\n{\"type\":\"event\",\"action\":2,\"event\":\"read\",\"name\":\"y\",\"numel\":4,\"digest\":\"0000000000000000\"}"' p.jsonl
check simulate_event_line 2 "p.jsonl:6: field 'type': an event line in a program" -- "$capsim" simulate p.jsonl -o out.jsonl
fresh simulate_unknown_function
edit "$prog" 5 'l.replace("\"function\":\"f\"", "\"function\":\"g\"")' p.jsonl
check simulate_unknown_function 2 "p.jsonl:5: action 2 \(call\): unknown function 'g'" -- "$capsim" simulate p.jsonl -o out.jsonl
fresh simulate_bad_json
edit "$prog" 4 'l[:-3]' p.jsonl
check simulate_bad_json 2 "p.jsonl:4:[0-9]+" -- "$capsim" simulate p.jsonl -o out.jsonl
fresh simulate_unknown_config
edit "$prog" 1 'l.replace("\"name\"", "\"config\":{\"cudagraph_trees_please\":true},\"name\"")' p.jsonl
check simulate_unknown_config 2 "p.jsonl:1:[0-9]+: field 'config.cudagraph_trees_please'" -- "$capsim" simulate p.jsonl
# Programs PyTorch would refuse: a grad of another shape, a consumed name
# that was never passed.
fresh simulate_grad_of_another_shape
printf '%s\n' '{"type":"header","name":"p"}' \
  '{"type":"action","action":"new_tensor","name":"w","sizes":[4],"parameter":true}' \
  '{"type":"action","action":"new_tensor","name":"g","sizes":[5]}' \
  '{"type":"action","action":"accumulate_grad","param":"w","grad":"g"}' >p.jsonl
check simulate_grad_of_another_shape 2 "p.jsonl:4: action 2 \(accumulate_grad\): an invalid gradient for 'w': got \[5\] but expected shape compatible with \[4\]" -- "$capsim" simulate p.jsonl
fresh simulate_consume_not_an_arg
printf '%s\n' '{"type":"header","name":"p"}' \
  '{"type":"function","function":"f","mode":"inference","inputs":["x"],"ops":[{"op":"mul","args":[0,0]}],"outputs":[1]}' \
  '{"type":"action","action":"new_tensor","name":"x","sizes":[4]}' \
  '{"type":"action","action":"new_tensor","name":"z","sizes":[4]}' \
  '{"type":"action","action":"call","function":"f","args":["x"],"outputs":["y"],"consume":["z"]}' >p.jsonl
check simulate_consume_not_an_arg 2 "p.jsonl:5: action 2 \(call\): field 'consume': 'z' is not one of the call's args" -- "$capsim" simulate p.jsonl
# A line whose "type" is not a string: the filling-in of left-out fields
# threw (exit 70) before the reader could refuse it (found by
# fuzz_program_reader).
fresh simulate_type_not_a_string
printf '%s\n' '{"type":"header","name":"p"}' '{"type":[4]}' >p.jsonl
check simulate_type_not_a_string 2 "p.jsonl:2:[0-9]+: field 'type': expected a string, got an array" -- "$capsim" simulate p.jsonl
fresh simulate_directory
mkdir d
check simulate_directory 2 "capsim: error: d: cannot read: Is a directory" -- "$capsim" simulate d
fresh function_line_field_named
edit "$simple" 2 'l.replace("\"param_input_idxs\":[]", "\"param_input_idxs\":[],\"cuda_devices\":[0,0]")' t.jsonl
check function_line_field_named 2 "t.jsonl:2:[0-9]+: field 'cuda_devices\[1\]': .*device 0 is over 63 or named twice" -- "$capsim" replay t.jsonl
fresh simulate_missing_file
check simulate_missing_file 2 "nope.jsonl: cannot open: No such file or directory" -- "$capsim" simulate nope.jsonl -o out.jsonl

# --- capsim explain ------------------------------------------------------------
fresh explain_action_past_end
check explain_action_past_end 2 "run_simple.jsonl: field '--action': 99 is past the last action" -- "$capsim" explain "$simple" --action 99
fresh explain_bad_line
edit "$simple" 3 'l[:-2]' t.jsonl
check explain_bad_line 2 "t.jsonl:3:[0-9]+" -- "$capsim" explain t.jsonl
fresh explain_what_if_unknown_tensor
check explain_what_if_unknown_tensor 2 "field '--what-if': 'mark-static=nope': no action binds" -- "$capsim" explain "$simple" --what-if mark-static=nope
fresh explain_what_if_clone_past_end
check explain_what_if_clone_past_end 2 "field '--what-if': 'clone=x@999': action 999 is past the last action" -- "$capsim" explain "$simple" --what-if clone=x@999
fresh explain_what_if_unknown_edit
check explain_what_if_unknown_edit 2 "field '--what-if': 'frobnicate': unknown edit" -- "$capsim" explain "$simple" --what-if frobnicate
fresh explain_as_on_a_gpu_with_cudagraphs
check explain_as_on_a_gpu_with_cudagraphs 2 "run_simple.jsonl: field '--as-on-a-gpu': the run had CUDA graphs" -- "$capsim" explain "$simple" --as-on-a-gpu
fresh explain_html_onto_input
cp "$simple" t.jsonl
check explain_html_onto_input 2 "t.jsonl: is the input t.jsonl; writing it would destroy it" -- "$capsim" explain t.jsonl --html t.jsonl
# A trace capsim wrote, without events (its run had none): read as a trace
# (its header says who wrote it), not simulated again as a program.
fresh explain_trace_without_events
big_tensors "$simple" 60 t.jsonl
check explain_trace_without_events 0 "^t.jsonl: 0 decisions explained$" -- "$capsim" explain t.jsonl
fresh explain_missing
check explain_missing 2 "nope.jsonl" -- "$capsim" explain nope.jsonl

echo "hostile inputs: $passed passed, $failed failed"
[ "$failed" = 0 ]
