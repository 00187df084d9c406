// Built-in scenarios, part 10: the compile-time skips that a graph's inputs
// and devices cause (docs/cudagraph-trees.md §2.5): more than one device
// (S3), a non-Tensor input or (up to 2.12) one whose elements overlap (S4,
// logged as a list without graph partitions, silent with them), an opaque input (allowed from 2.12)
// and a set_ on an input (S7, 2.13 on); and a body that asks for more warmups (2.14 on). Each graph
// is x * x * x, called three times.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

ProgramScenario cube_scenario(std::string name, std::string mirrors, std::string description,
                              FunctionDef f) {
  ProgramScenario s;
  s.name = std::move(name);
  s.mirrors = std::move(mirrors);
  s.description = std::move(description);
  s.options.config.torch_profile = TorchProfile::k2_15;
  ProgramWriter p(s);
  p.function(std::move(f));
  p.add(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) {
    p.add(call("f", {"x"}, {"out"}));
    p.add(Del{"out"});
  }
  return s;
}

std::int64_t cudagraph_skips(const World& w) {
  return static_cast<std::int64_t>(w.counters().cudagraph_skips);
}

}  // namespace

ProgramScenario multiple_devices_skip() {
  FunctionDef f = cube("f", kInference);
  f.cuda_devices = {0, 1};
  ProgramScenario s = cube_scenario(
      "multiple_devices_skip",
      "test_cudagraph_trees.py::test_multiple_devices_msg (cuda:0, cuda:1)",
      "a graph on two CUDA devices skips cudagraphs (S3), with partitions on too", std::move(f));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S3 skips", 1, decisions_made(w, Decision::kSkipMultipleDevices)},
        {"graphs recorded", 0, graphs(w)}};
  };
  return s;
}

// Without graph partitions cudagraph_post_compile logs the failed tests.
ProgramScenario non_tensor_input_skip() {
  FunctionDef f = cube("f", kInference);
  f.non_tensor_inputs = {NonTensorInput::kFloat};
  ProgramScenario s = cube_scenario(
      "non_tensor_input_skip", "output_code.py::CompiledFxGraph.__init__ (graph_partition=False)",
      "a float input fails the non-Tensor test: S4 lists it", std::move(f));
  s.options.config.graph_partition = false;
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S4 skips", 1, decisions_made(w, Decision::kSkipFailedCompileTest)},
        {"cudagraph_skips", 1, cudagraph_skips(w)},
        {"graphs recorded", 0, graphs(w)}};
  };
  return s;
}

// With graph partitions (the default from 2.9) the same failed test drops
// cudagraphs without a log or a count: cudagraph_partition_post_compile.
ProgramScenario non_tensor_input_silent() {
  FunctionDef f = cube("f", kInference);
  f.non_tensor_inputs = {NonTensorInput::kFloat};
  ProgramScenario s = cube_scenario(
      "non_tensor_input_silent",
      "output_code.py::cudagraph_partition_post_compile (pytorch/pytorch#193044)",
      "graph_partition on: a float input drops cudagraphs silently, no skip logged", std::move(f));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"skips logged", 0, events_of(w, EventKind::kSkip)},
        {"cudagraph_skips", 0, cudagraph_skips(w)},
        {"silent eager runs", 3, decisions_made(w, Decision::kEagerSilentSkip)}};
  };
  return s;
}

// An opaque object passes the test from 2.12 (OpaqueBase, CustomClassBase
// from 2.14); a torch.Generator always did.
ProgramScenario opaque_input_cudagraphed() {
  FunctionDef f = cube("f", kInference);
  f.non_tensor_inputs = {NonTensorInput::kOpaque, NonTensorInput::kGenerator};
  ProgramScenario s = cube_scenario(
      "opaque_input_cudagraphed", "output_code.py::CompiledFxGraph.__init__ (2.12 on)",
      "an opaque object and a Generator as inputs: still cudagraphed", std::move(f));
  s.options.config.graph_partition = false;
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S4 skips", 0, decisions_made(w, Decision::kSkipFailedCompileTest)},
        {"graphs recorded", 1, graphs(w)}};
  };
  return s;
}

// An input whose elements share memory (as_strided((4, 4), (1, 1))) fails
// Inductor's "complex memory overlap" test up to 2.12 (output_code.py,
// complex_memory_overlap); 2.13 dropped the test and cudagraphs it.
ProgramScenario complex_memory_overlap_skip() {
  ProgramScenario s;
  s.name = "complex_memory_overlap_skip";
  s.mirrors = "output_code.py::complex_memory_overlap (2.12.1; graph_partition=False)";
  s.description = "an input whose elements overlap fails the complex-memory-overlap test (S4)";
  s.options.config.torch_profile = TorchProfile::k2_12;
  s.options.config.graph_partition = false;
  ProgramWriter p(s);
  p.function(cube("f", kInference));
  NewTensor x = tensor("x", {4, 4}, 1.0f);
  x.strides = Dims{1, 1};
  p.add(std::move(x));
  for (int i = 0; i < 3; ++i) {
    p.add(call("f", {"x"}, {"out"}));
    p.add(Del{"out"});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S4 skips naming complex memory overlap", 1,
         events_where(w, EventKind::kSkip, F::message,
                      "skipping cudagraphs due to ['complex memory overlap']")},
        {"graphs recorded", 0, graphs(w)}};
  };
  return s;
}

// A set_ on an input (2.13 on): logged on the partition path too.
ProgramScenario input_storage_mutation_skip() {
  FunctionDef f = cube("f", kInference);
  f.input_storage_mutations = {0};
  ProgramScenario s = cube_scenario(
      "input_storage_mutation_skip", "cudagraph_utils.py::get_input_storage_mutation_info (2.13)",
      "x.set_(...) on a graph input skips cudagraphs (S7), with partitions on", std::move(f));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S7 skips", 1, decisions_made(w, Decision::kSkipInputStorageReplaced)},
        {"graphs recorded", 0, graphs(w)}};
  };
  return s;
}

// An autotuner in the body asks for two more warmups (2.14 on): three
// warmup runs, then the recording, then replays.
ProgramScenario mark_warmup_incomplete() {
  FunctionDef f = cube("f", kInference);
  f.warmups_marked_incomplete = 2;
  ProgramScenario s = cube_scenario(
      "mark_warmup_incomplete",
      "cudagraph_trees.py::CUDAGraphTreeManager.mark_warmup_incomplete (2.14, #191386)",
      "the body calls cudagraph_mark_warmup_incomplete() twice: 3 warmups before the recording",
      std::move(f));
  for (int i = 0; i < 2; ++i) {
    s.program.actions.push_back(call("f", {"x"}, {"out"}));
    s.program.actions.push_back(Del{"out"});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"warmups", 3, static_cast<std::int64_t>(w.counters().warmups)},
        {"graphs recorded", 1, graphs(w)},
        {"replays", 1, static_cast<std::int64_t>(w.counters().replays)}};
  };
  return s;
}

void add_compile_skip_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(multiple_devices_skip());
  out.push_back(non_tensor_input_skip());
  out.push_back(non_tensor_input_silent());
  out.push_back(opaque_input_cudagraphed());
  out.push_back(complex_memory_overlap_skip());
  out.push_back(input_storage_mutation_skip());
  out.push_back(mark_warmup_incomplete());
}

}  // namespace capsim
