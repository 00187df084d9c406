#!/usr/bin/env bash
# Builds the fuzz targets (trace_reader, render, diff, export, program_reader)
# with clang's libFuzzer, ASan and UBSan, and fuzzes each for SECONDS / 5 from
# its seeds (the trace corpus; data/programs/ for the program reader)
# (ctest: fuzz/libfuzzer_trace_reader). With TARGET, only that target, for
# SECONDS (a campaign: docs/reliability.md).
#
#   run-libfuzzer.sh SRC_DIR BUILD_DIR SECONDS [TARGET [LIBFUZZER_FLAGS...]]
#
# Exits 77 (ctest SKIP) when clang++ is not on PATH or cannot link
# -fsanitize=fuzzer. Otherwise compiles, straight from the sources, only the
# translation units the target links, into BUILD_DIR/fuzz/; make rebuilds only
# when a source, a header or the flags changed, so a second run starts fuzzing
# at once. The corpus is copied into a temporary directory as the seeds (new
# inputs go there and are dropped afterwards); a crash, leak, timeout or
# out-of-memory fails the test and leaves its input in BUILD_DIR/fuzz/artifacts/
# (reproduce: BUILD_DIR/fuzz/fuzz_TARGET FILE, or, with any compiler,
# BUILD_DIR/tests/fuzz/capsim_fuzz_TARGET --mutations 0 FILE; the reader's
# driver is named capsim_fuzz_replay).
#
# CAPSIM_FUZZ_JOBS sets the compile parallelism (default 2).
set -euo pipefail

if [[ $# -lt 3 ]]; then
  echo "usage: run-libfuzzer.sh SRC_DIR BUILD_DIR SECONDS [TARGET [LIBFUZZER_FLAGS...]]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
build=$2
seconds=$3
all_targets=(trace_reader render diff export program_reader)
targets=("${all_targets[@]}")
extra=()
if [[ $# -ge 4 ]]; then
  targets=("$4")
  extra=("${@:5}")
else
  seconds=$((seconds / ${#targets[@]} > 0 ? seconds / ${#targets[@]} : 1))
fi
out="$build/fuzz"

if ! command -v clang++ >/dev/null 2>&1; then
  echo "run-libfuzzer.sh: clang++ is not on PATH; skipping the libFuzzer run"
  exit 77
fi
mkdir -p "$out"
tmp_dir=$(mktemp -d)
trap 'rm -rf "$tmp_dir"' EXIT
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
  >"$tmp_dir/probe.cpp"
if ! clang++ -fsanitize=fuzzer "$tmp_dir/probe.cpp" -o "$tmp_dir/probe" >/dev/null 2>&1; then
  echo "run-libfuzzer.sh: clang++ cannot link -fsanitize=fuzzer (no libFuzzer); skipping"
  exit 77
fi

# The translation units the target needs: what the linker pulls from the
# libraries for LLVMFuzzerTestOneInput (found with -Wl,-Map), that is the
# reader and replay, the World, and most of sim/ and model/ beneath it.
# A new dependency shows up as an undefined reference at link time: add its TU
# here. They compile as five unity files: compiled one by one, each TU parsed
# the same heavy headers (nlohmann, fmt, Boost) again, and the build took four
# times as long. Two TUs that define the same name in an anonymous namespace
# must go in different files. fmt and simdjson link as the system libraries.
unity_a=(
  traces/format/event_schema.cpp traces/format/json_fields.cpp traces/format/config_json.cpp traces/format/program_json.cpp traces/format/action_json.cpp traces/format/action_schema.cpp traces/format/body_op_json.cpp traces/simulation/resimulation.cpp
  traces/format/json_text.cpp traces/format/trace_format.cpp traces/format/trace_reader.cpp traces/format/line_fast.cpp traces/format/event_line_fast.cpp traces/format/action_line_fast.cpp traces/simulation/run_program.cpp
  model/caching_allocator.cpp model/cpu_backend.cpp model/device_memory.cpp model/digest.cpp model/fault.cpp
  model/graph_evidence.cpp
  model/kernel_launch.cpp model/kernel_table.cpp model/step_program.cpp model/tensor.cpp
  model/tensor_store.cpp model/host_memory.cpp model/dtype_values.cpp traces/format/input_file.cpp
)
unity_b=(
  sim/core/body_interpreter.cpp sim/core/decisions.cpp sim/core/eager_oracle.cpp sim/core/event_fields.cpp sim/core/events.cpp
  sim/core/field_value.cpp sim/core/function_def.cpp sim/core/generic_op.cpp
  sim/core/cudagraph_config.cpp sim/core/messages.cpp sim/core/torch_profile.cpp sim/core/tensor_refs.cpp sim/trees/tree_manager.cpp sim/trees/tree_managed_inputs.cpp sim/trees/tree_memory.cpp
  sim/trees/tree_replay.cpp sim/trees/tree_warmup_record.cpp sim/world/dynamo.cpp sim/world/partitions.cpp sim/program/program.cpp sim/world/world.cpp sim/world/compiled_optimizers.cpp
  sim/world/plain_graphs.cpp sim/world/world_compile.cpp sim/world/object_table.cpp sim/world/world_context.cpp
)
# Compiled autograd, for the run_capture_scenario action. capture.cpp and
# compiled_backward.cpp each have their own anonymous `Value`, so they go in
# different files.
unity_c=(
  sim/world/world_capture.cpp sim/scenarios/autograd_scenarios.cpp
  sim/compiled_autograd/runner.cpp sim/autograd/autograd_engine.cpp sim/autograd/autograd_backward_graph.cpp sim/autograd/autograd_aot.cpp
  sim/compiled_autograd/collect.cpp sim/compiled_autograd/capture.cpp sim/compiled_autograd/capture_nodes.cpp sim/compiled_autograd/end_capture_order.cpp
  sim/compiled_autograd/imported_autograd.cpp sim/compiled_autograd/fx_target_names.cpp
  sim/compiled_autograd/release_form.cpp sim/compiled_autograd/release_form_passes.cpp
)
unity_d=(
  sim/autograd/autograd_backward.cpp sim/autograd/autograd_backward_ops.cpp sim/compiled_autograd/compiled_backward.cpp
  model/autograd_graph.cpp model/fx_arg.cpp model/fx_graph.cpp
  traces/format/imported_graph_json.cpp traces/simulation/event_compare.cpp model/output_file.cpp
  traces/simulation/program_file.cpp traces/format/generic_op_json.cpp
)
# Autograd over the World's own tensors: eager_call with requires_grad and the
# backward action, eager or through compiled autograd and its lowering.
unity_f=(
  sim/world/world_autograd.cpp sim/world/world_compiled_autograd.cpp
  sim/autograd/autograd_adopt.cpp sim/autograd/autograd_body.cpp
  sim/compiled_autograd/function_lowering.cpp
)
# The drawings, the diffs and the Chrome export, for the targets beyond replay,
# and the structure-aware custom mutator that every target uses.
unity_e=(
  render/capture_drawings.cpp render/dot_writer.cpp render/draw_graph.cpp render/fold.cpp
  render/graph_diff.cpp render/graphviz_output.cpp render/memory_drawings.cpp
  render/trace_graphs.cpp render/tree_drawing.cpp traces/analyses/chrome_export.cpp
  traces/analyses/chrome_event.cpp traces/analyses/chrome_trace_check.cpp traces/analyses/chrome_export_file.cpp
  tests/fuzz/trace_mutations.cpp tests/fuzz/custom_mutator.cpp
)
# -gline-tables-only: file:line in every stack trace, at a fraction of -g's cost.
# -O2 runs 15% more inputs a second than -O1, and the ignorelist keeps the
# coverage hooks out of nlohmann, the standard library, fmt and Boost (2.3
# times as many; tests/fuzz/coverage_ignorelist.txt says why).
flags="-std=c++20 -O2 -gline-tables-only -fsanitize=fuzzer,address,undefined"
flags+=" -fsanitize-coverage-ignorelist=$src/tests/fuzz/coverage_ignorelist.txt"
flags+=" -fno-sanitize-recover=undefined -ffp-contract=off -fno-fast-math -I$src"

# Rewritten only when the text changes, so that make sees what changed.
write_if_changed() { # FILE; the text comes on stdin
  local next="$tmp_dir/next"
  cat >"$next"
  if ! cmp -s "$next" "$1"; then mv "$next" "$1"; fi
}
for s in "${unity_a[@]}"; do printf '#include "%s/%s"\n' "$src" "$s"; done |
  write_if_changed "$out/unity_a.cpp"
for s in "${unity_b[@]}"; do printf '#include "%s/%s"\n' "$src" "$s"; done |
  write_if_changed "$out/unity_b.cpp"
for s in "${unity_c[@]}"; do printf '#include "%s/%s"\n' "$src" "$s"; done |
  write_if_changed "$out/unity_c.cpp"
for s in "${unity_d[@]}"; do printf '#include "%s/%s"\n' "$src" "$s"; done |
  write_if_changed "$out/unity_d.cpp"
for s in "${unity_e[@]}"; do printf '#include "%s/%s"\n' "$src" "$s"; done |
  write_if_changed "$out/unity_e.cpp"
for s in "${unity_f[@]}"; do printf '#include "%s/%s"\n' "$src" "$s"; done |
  write_if_changed "$out/unity_f.cpp"
for t in "${all_targets[@]}"; do
  printf '#include "%s/tests/fuzz/fuzz_%s.cpp"\n' "$src" "$t" | write_if_changed "$out/target_$t.cpp"
done
# The ignorelist is part of the flags: a change to it rebuilds everything.
{ echo "$flags"; cat "$src/tests/fuzz/coverage_ignorelist.txt"; } | write_if_changed "$out/flags"
write_if_changed "$out/Makefile" <<MAKEFILE
# Generated by tests/fuzz/run-libfuzzer.sh.
CXXFLAGS := $flags

COMMON := unity_a.o unity_b.o unity_c.o unity_d.o unity_e.o unity_f.o
# Kept: make would delete the target objects as intermediates.
.SECONDARY:

fuzz_%: target_%.o \$(COMMON)
	clang++ \$(CXXFLAGS) \$^ -lfmt -lsimdjson -lgvc -lcgraph -o \$@

%.o: %.cpp flags
	clang++ \$(CXXFLAGS) -MMD -MP -c \$< -o \$@

-include unity_a.d unity_b.d unity_c.d unity_d.d unity_e.d unity_f.d \$(wildcard target_*.d)
MAKEFILE

start=$(date +%s)
nice make -C "$out" -j"${CAPSIM_FUZZ_JOBS:-2}" --no-print-directory "${targets[@]/#/fuzz_}"
echo "run-libfuzzer.sh: the targets are up to date ($(($(date +%s) - start)) s)"

mkdir -p "$out/artifacts"
for t in "${targets[@]}"; do
  # Each target grows its own corpus from its seeds: programs for the program
  # reader, recorded traces for the others.
  seeds="$src/data/corpus"
  if [[ $t == program_reader ]]; then seeds="$src/data/programs"; fi
  rm -rf "$tmp_dir/grown" && mkdir -p "$tmp_dir/grown"
  find "$seeds" -type f -name '*.jsonl' -exec cp {} "$tmp_dir/grown/" \;
  # libFuzzer's own failure exit code is 77, ctest's SKIP: make every failure 1.
  set +e
  # -entropic=0: libFuzzer's entropic schedule spent 60% of the time in
  # UpdateFeatureFrequency on these inputs (some 58,000 features); without it
  # the reader runs 470 inputs a second instead of 45 (docs/reliability.md).
  "$out/fuzz_$t" "$tmp_dir/grown" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -entropic=0 \
    -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$out/artifacts/$t-" \
    -print_final_stats=1 "${extra[@]}"
  rc=$?
  set -e
  if [[ $rc -ne 0 ]]; then
    echo "run-libfuzzer.sh: libFuzzer failed on fuzz_$t (exit $rc); the input is in $out/artifacts/" >&2
    exit 1
  fi
  echo "run-libfuzzer.sh: fuzz_$t: ${seconds} s of fuzzing found nothing"
done
