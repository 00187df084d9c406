// Programs for the run-time skip properties (runtime_skip_programs.hpp).
#include "properties/runtime_skip_programs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sim/core/function_builder.hpp"

namespace capsim {

namespace {

constexpr std::int64_t kRowNumel = 8;  // 32 bytes: every row is 16-byte aligned
constexpr std::int64_t kSrcNumel = kRowNumel * kRuntimeRows;
// Past any count a program of at most this many calls reaches.
constexpr std::uint32_t kMaxRuntimeSteps = 12;
constexpr std::int64_t kUnreachable = 128;

// src, g, and the row views the program takes (`rows`).
std::vector<FunctionDef> runtime_functions(std::uint32_t mutate,
                                           const std::set<std::uint32_t>& rows) {
  std::vector<FunctionDef> out;
  {
    FunctionBuilder f("src", CompilationMode::kInference, {"arg0_1"});
    out.push_back(f.returns({f.add(f.input(0), f.input(0))}));
  }
  {
    FunctionBuilder g("g", CompilationMode::kInference, {"arg0_1", "primals_2"});
    g.params({1}).static_inputs({1});
    const ValueIndex y = g.mul(g.input(0), g.input(1));
    if (mutate == 1) g.add_(g.input(0), g.input(1));
    if (mutate == 2) g.add_(g.input(1), g.input(0));
    out.push_back(g.returns({y}));
  }
  for (std::uint32_t k : rows) {
    FunctionBuilder row(fmt::format("row{}", k), CompilationMode::kInference, {"y"});
    out.push_back(row.returns({row.slice(row.input(0), k * kRowNumel, (k + 1) * kRowNumel)}));
  }
  return out;
}

CudagraphConfig runtime_config(const RuntimePlan& plan, bool every_step_src) {
  const TorchProfile p = plan.torch_profile;
  CudagraphConfig c;
  c.torch_profile = p;
  c.cudagraph_support_input_mutation = plan.support_input_mutation;
  // inline_inbuilt_nn_modules is a knob up to 2.11 (always on from 2.12);
  // with support off it stays on, out of error mode.
  c.inline_inbuilt_nn_modules =
      p >= TorchProfile::k2_12 || plan.inline_modules || !plan.support_input_mutation;
  c.cudagraph_or_error = plan.or_error && p >= TorchProfile::k2_9;
  const bool has_demotion = p == TorchProfile::k2_15;
  if (has_demotion && plan.managed_skip) {
    c.cudagraph_managed_input_rerecord_action = ManagedInputAction::kSkip;
  }
  if (has_demotion && plan.managed_limit)
    c.cudagraph_managed_input_rerecord_limit = *plan.managed_limit;
  if (plan.rerecord_limit && !(has_demotion && plan.managed_skip)) {
    c.cudagraph_unexpected_rerecord_limit = *plan.rerecord_limit;
  }
  if (!every_step_src) {
    c.cudagraph_unexpected_rerecord_limit = kUnreachable;
    if (has_demotion) c.cudagraph_managed_input_rerecord_limit = kUnreachable;
  }
  return c;
}

struct RuntimeSkipLowering {
  GeneratedProgram& g;
  void add(Action a, std::vector<ArgKnowledge> knowledge = {}, std::int64_t numel = kDefaultNumel) {
    g.program.actions.push_back(std::move(a));
    g.knowledge.push_back(std::move(knowledge));
    g.numel_at.push_back(numel);
  }
  void fresh(const std::string& name, std::int64_t numel) {
    NewTensor t;
    t.name = name;
    t.sizes = {numel};
    add(t, {}, numel);
  }
};

// One step: maybe `o = src(x)` and a row of o, then `g(a, q)`.
RuntimeCall lower_step(const RuntimeStepPlan& s, std::uint32_t mutate, std::size_t k,
                       RuntimeSkipLowering& l) {
  RuntimeCall call;
  call.after_src = s.src;
  call.param = s.param % kRuntimeParams;
  const std::string a = fmt::format("a{}", k);
  if (s.src) {
    const std::string x = fmt::format("x{}", k);
    l.fresh(x, kSrcNumel);
    Call src;
    src.function = "src";
    src.args = {x};
    src.outputs = {"o"};
    l.add(src, {ArgKnowledge::kNonStatic}, kSrcNumel);
    l.add(Del{x});
    // A step that writes a plain a takes a row of o (see the header).
    const bool row = s.arg < kRuntimeRows || mutate == 1;
    if (row) call.row = s.arg % kRuntimeRows;
  }
  if (call.row) {
    l.add(EagerCall{fmt::format("row{}", *call.row), {"o"}, {a}});
  } else {
    l.fresh(a, kRowNumel);
  }
  Call g;
  g.function = "g";
  g.args = {a, fmt::format("p{}", call.param)};
  g.outputs = {""};
  if (s.src) g.new_invocation = false;
  call.action = l.g.program.actions.size();
  l.add(g, {call.row ? ArgKnowledge::kUnknown : ArgKnowledge::kNonStatic, ArgKnowledge::kStatic});
  l.add(Del{a});
  if (s.src) l.add(Del{"o"});
  ++l.g.calls;
  ++l.g.steps;
  return call;
}

}  // namespace

RuntimeProgram lower_runtime_skips(const RuntimePlan& plan) {
  std::vector<RuntimeStepPlan> steps = plan.steps;
  if (steps.empty()) steps.emplace_back();
  if (steps.size() > kMaxRuntimeSteps) steps.resize(kMaxRuntimeSteps);
  const bool every_step_src =
      std::all_of(steps.begin(), steps.end(), [](const RuntimeStepPlan& s) { return s.src; });
  RuntimeProgram out;
  out.config = runtime_config(plan, every_step_src);
  GeneratedProgram& g = out.generated;
  g.seed = plan.seed;
  g.numel = kRowNumel;
  g.torch_profile = plan.torch_profile;
  RuntimeSkipLowering l{g};
  for (std::uint32_t j = 0; j < kRuntimeParams; ++j) {
    NewTensor p;
    p.name = fmt::format("p{}", j);
    p.sizes = {kRowNumel};
    p.parameter = true;
    l.add(p);
  }
  std::set<std::uint32_t> rows;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    out.calls.push_back(lower_step(steps[k], plan.mutate % 3, k, l));
    if (out.calls.back().row) rows.insert(*out.calls.back().row);
  }
  g.program.functions = runtime_functions(plan.mutate % 3, rows);
  return out;
}

const FunctionDef& runtime_g(const RuntimeProgram& program) {
  return program.generated.program.functions.at(1);
}

std::string describe(const RuntimeProgram& program) {
  const CudagraphConfig& c = program.config;
  std::string line = fmt::format(
      "# inline_inbuilt_nn_modules={} cudagraph_support_input_mutation={} "
      "cudagraph_unexpected_rerecord_limit={} cudagraph_or_error={}",
      c.inline_inbuilt_nn_modules, c.cudagraph_support_input_mutation,
      c.cudagraph_unexpected_rerecord_limit, c.cudagraph_or_error);
  if (c.torch_profile == TorchProfile::k2_15) {
    line += fmt::format(" cudagraph_managed_input_rerecord_limit={} _action={}",
                        c.cudagraph_managed_input_rerecord_limit,
                        managed_input_action_name(c.cudagraph_managed_input_rerecord_action));
  }
  return line + "\n" + describe(program.generated);
}

}  // namespace capsim
