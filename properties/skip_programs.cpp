// Programs for the skip properties (skip_programs.hpp).
#include "properties/skip_programs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/function_builder.hpp"

namespace capsim {

namespace {

constexpr std::int64_t kSkipNumel = 8;
const Dims kSkipSizes = {2, 4};

// f(x, p) = x * p + x, with the plan's mutation, cut and declarations; no
// x.add_ into a strided x (PyTorch refuses to write an overlapping one).
FunctionDef skip_function(const SkipFunctionPlan& f, std::uint32_t index, TorchProfile profile) {
  FunctionBuilder b(fmt::format("f{}", index), CompilationMode::kInference,
                    {"arg0_1", "primals_2"});
  b.params({1}).static_inputs({1});
  const ValueIndex y = b.mul(b.input(0), b.input(1));
  const ValueIndex z = b.add(y, b.input(0));
  if (f.mutate == 1 && f.layout % kSkipLayouts == 0) b.add_(b.input(0), y);
  if (f.mutate == 2) b.add_(b.input(1), y);
  FunctionDef def = b.returns({z});
  if (f.cut_reason) {
    const auto at = static_cast<std::uint32_t>(f.cut_at % def.ops.size());
    def.partition_cuts = {{at, at + 1, static_cast<PartitionCutReason>(*f.cut_reason % 4)}};
  }
  def.non_tensor_inputs = f.non_tensor;
  for (std::uint32_t d = 0; d < f.devices; ++d) def.cuda_devices.push_back(d);
  if (f.set_input && profile_rules(profile).input_storage_mutation_skip) {
    def.input_storage_mutations = {0};
  }
  return def;
}

CudagraphConfig skip_config(const SkipPlan& plan) {
  const TorchProfileRules& rules = profile_rules(plan.torch_profile);
  CudagraphConfig c;
  c.torch_profile = plan.torch_profile;
  c.graph_partition = plan.graph_partition;
  c.cudagraph_skip_dynamic_graphs = plan.skip_dynamic_graphs;
  c.cudagraph_support_input_mutation = plan.support_input_mutation;
  c.caching_allocator_enabled = plan.caching_allocator || !rules.caching_allocator_skip;
  c.cudagraph_or_error = plan.or_error && rules.has_cudagraph_or_error;
  return c;
}

}  // namespace

Dims skip_layout_strides(std::uint32_t layout) {
  static const Dims kStrides[kSkipLayouts] = {{4, 1}, {1, 2}, {8, 1}, {0, 1},
                                              {1, 1}, {2, 1}, {3, 2}};
  return kStrides[layout % kSkipLayouts];
}

SkipProgram lower_skips(const SkipPlan& plan) {
  SkipProgram out;
  out.config = skip_config(plan);
  GeneratedProgram& g = out.generated;
  g.seed = plan.seed;
  g.numel = kSkipNumel;
  g.torch_profile = plan.torch_profile;
  std::vector<SkipFunctionPlan> functions = plan.functions;
  if (functions.empty()) functions.emplace_back();
  for (std::uint32_t i = 0; i < functions.size(); ++i) {
    g.program.functions.push_back(skip_function(functions[i], i, plan.torch_profile));
  }
  const auto add = [&g](Action a, std::vector<ArgKnowledge> knowledge = {}) {
    g.program.actions.push_back(std::move(a));
    g.knowledge.push_back(std::move(knowledge));
    g.numel_at.push_back(kDefaultNumel);
  };
  NewTensor p;
  p.name = "p";
  p.sizes = kSkipSizes;
  p.parameter = true;
  add(p);
  std::vector<SkipCallPlan> calls = plan.calls;
  if (calls.empty()) calls.emplace_back();
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const std::string x = fmt::format("x{}", k);
    const std::uint32_t f = calls[k].function % functions.size();
    NewTensor t;
    t.name = x;
    t.sizes = kSkipSizes;
    if (functions[f].layout % kSkipLayouts != 0)
      t.strides = skip_layout_strides(functions[f].layout);
    add(t);
    Call call;
    call.function = fmt::format("f{}", f);
    call.args = {x, "p"};
    call.outputs = {""};
    if (calls[k].key % 3 != 0) call.int_key = {kSkipNumel + calls[k].key % 3 - 1};
    add(call, {ArgKnowledge::kNonStatic, ArgKnowledge::kStatic});
    add(Del{x});
    ++g.calls;
  }
  return out;
}

std::string describe(const SkipProgram& program) {
  const CudagraphConfig& c = program.config;
  std::string line = fmt::format(
      "# graph_partition={} cudagraph_skip_dynamic_graphs={} "
      "cudagraph_support_input_mutation={} caching_allocator={} cudagraph_or_error={}\n",
      c.graph_partition ? (*c.graph_partition ? "True" : "False") : "default",
      c.cudagraph_skip_dynamic_graphs, c.cudagraph_support_input_mutation,
      c.caching_allocator_enabled, c.cudagraph_or_error);
  for (const FunctionDef& def : program.generated.program.functions) {
    std::vector<std::string> facts;
    if (!def.non_tensor_inputs.empty()) {
      std::vector<std::string_view> kinds;
      for (NonTensorInput k : def.non_tensor_inputs) kinds.push_back(non_tensor_input_name(k));
      facts.push_back(fmt::format("non_tensor_inputs=[{}]", fmt::join(kinds, ", ")));
    }
    if (!def.cuda_devices.empty()) {
      facts.push_back(fmt::format("cuda_devices=[{}]", fmt::join(def.cuda_devices, ", ")));
    }
    if (!def.input_storage_mutations.empty()) {
      facts.push_back(fmt::format("input_storage_mutations=[{}]",
                                  fmt::join(def.input_storage_mutations, ", ")));
    }
    if (!facts.empty()) line += fmt::format("# {}: {}\n", def.name, fmt::join(facts, " "));
  }
  return line + describe(program.generated);
}

}  // namespace capsim
