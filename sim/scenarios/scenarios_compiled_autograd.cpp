// Built-in scenarios, part 5: compiled autograd.
//
// First the two seeds joined. The backward that the tree manager records is
// not written by hand: it is compiled autograd's functional capture of the
// model's autograd graph, lowered to a function body
// (compiled_autograd_function.hpp). Its grads are pool outputs, so the
// compiled Adam step that follows replays with no grad copies, as in PR
// 107504's first case. Then every capture scenario as a one-action program
// (ca_<name>), and the legacy capture of one as a negative control.
#include <fmt/format.h>

#include <map>

#include "sim/autograd/autograd_engine.hpp"
#include "sim/autograd/compiled_autograd_capture.hpp"
#include "sim/autograd/compiled_autograd_function.hpp"
#include "sim/autograd/compiled_autograd_run.hpp"
#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

constexpr std::int64_t kSteps = 5;

// The backward of y = x*w1 + x*w2 (grad_output ones), captured by compiled
// autograd and lowered; its inputs are named after the World's tensors.
struct CapturedBackward {
  FunctionDef def;
  std::vector<std::string> args;     // World names of the call's inputs
  std::vector<std::string> grad_of;  // per output: the param it is the grad of
};

Result<CapturedBackward> capture_model_backward() {
  OwnedAutogradDevice dev;
  AutogradEngine e(dev.device());
  const std::vector<float> zeros(16, 0.0f);
  CAPSIM_TRY_ASSIGN(const Variable w1, e.leaf({4, 4}, zeros));
  CAPSIM_TRY_ASSIGN(const Variable w2, e.leaf({4, 4}, zeros));
  CAPSIM_TRY_ASSIGN(const Variable x, e.constant({4, 4}, zeros));
  CAPSIM_TRY_ASSIGN(const Variable a, e.mul(x, w1));
  CAPSIM_TRY_ASSIGN(const Variable b, e.mul(x, w2));
  CAPSIM_TRY_ASSIGN(const Variable y, e.add(a, b));
  CAPSIM_TRY_ASSIGN(const auto bg, e.backward_graph(y));
  CAPSIM_TRY_ASSIGN(const CollectedBackward c, collect_backward(bg.graph, bg.root, dev.store));
  CAPSIM_TRY_ASSIGN(const CaptureResult r, capture_backward(bg.graph, c));
  CAPSIM_TRY_ASSIGN(const Variable ones, e.constant({4, 4}, zeros));
  const TensorId roots[] = {ones.tensor};
  const CompiledBackwardCall call = make_call(bg.graph, c, roots);
  // x is the forward's saved output "saved"; the root grad is "grad_out".
  const std::map<TensorId, std::string> world_name{
      {x.tensor, "saved"}, {w1.tensor, "w1"}, {w2.tensor, "w2"}, {ones.tensor, "grad_out"}};
  CAPSIM_TRY_ASSIGN(FunctionInputs in, function_inputs(e, dev.store, call));
  CapturedBackward out;
  for (TensorId t : call.inputs) {
    const auto it = world_name.find(t);
    if (it == world_name.end()) return make_error("the capture lifted an unexpected tensor");
    out.args.push_back(it->second);
  }
  CAPSIM_TRY_ASSIGN(
      CompiledBackwardFunction f,
      to_function_def(r.graph, "ca_bwd", in.sizes, std::move(in.names), std::move(in.params)));
  out.def = std::move(f.def);
  for (std::uint32_t input : f.grad_of) out.grad_of.push_back(out.args.at(input));
  return out;
}

ProgramScenario compiled_autograd_backward_adam() {
  ProgramScenario s;
  s.name = "compiled_autograd_backward_adam";
  s.mirrors =
      "PR 144707 x PR 107504: a compiled-autograd backward, cudagraphed, then compiled Adam";
  s.description =
      "the recorded backward is compiled autograd's capture, lowered: grads are pool outputs, 0 "
      "copies per step";
  const Result<CapturedBackward> bwd = capture_model_backward();
  CAPSIM_CHECK(bwd.ok(), "the built-in model's backward must capture and lower");
  ProgramWriter p(s);
  p.function(two_param_forward());
  p.function(bwd->def);
  add_two_params_and_adam(p);
  std::vector<std::string> grads;
  for (std::size_t k = 0; k < bwd->grad_of.size(); ++k) grads.push_back(fmt::format("g{}", k));
  for (std::int64_t i = 0; i < kSteps; ++i) {
    p.add(MarkStepBegin{});
    p.add(tensor("x", {4, 4}));
    p.add(call("fwd", {"x", "w1", "w2"}, {"loss", "saved"}));
    p.add(tensor("grad_out", {4, 4}, 1.0f));
    p.add(consuming(call("ca_bwd", bwd->args, grads), {"saved"}));
    for (std::size_t k = 0; k < grads.size(); ++k) p.add(AccumulateGrad{bwd->grad_of[k], grads[k]});
    for (const std::string& g : grads) p.add(Del{g});
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", true});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"optimizer step replays", kSteps - 2,
         events_where(w, EventKind::kReplay, F::function, "opt.step")},
        {"grad copies in those replays", 0,
         sum_field(w, EventKind::kCopyIn, "opt.step", F::copies)},
        {"ca_bwd replays", kSteps - 2, events_where(w, EventKind::kReplay, F::function, "ca_bwd")},
        {"graphs (fwd, ca_bwd, step)", 3, graphs(w)}};
  };
  return s;
}

// A capture scenario (`capsim capture`) as a one-action program, so that
// compiled autograd's observations are traces too: ca_<name>, and
// ca_<name>_legacy for the capture before PR 144707. The legacy one is the
// corpus's negative control: it reads proxy metadata, which replay reports as
// a violation of no_proxy_metadata_reads.
ProgramScenario capture_program(const AutogradScenario& c, CaptureMode mode,
                                std::int64_t expected_reads = 0) {
  ProgramScenario s;
  const bool legacy = mode == CaptureMode::kLegacy;
  s.name = fmt::format("ca_{}{}", c.name, legacy ? "_legacy" : "");
  s.mirrors = c.mirrors;
  s.description = legacy ? fmt::format("{} (legacy capture: reads proxy metadata)", c.description)
                         : c.description;
  s.options.autograd_scenarios = find_autograd_scenario;
  ProgramWriter p(s);
  p.add(RunCaptureScenario{c.name, mode});
  const std::int64_t captures = static_cast<std::int64_t>(c.expected_captures);
  s.expect = [captures, expected_reads](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"captures (cache misses), as PyTorch's test asserts", captures,
         events_of(w, EventKind::kCaCacheMiss)},
        {"proxy metadata reads", expected_reads, events_of(w, EventKind::kMetadataRead)},
        {"compiled backwards whose grads differ from eager", 0,
         static_cast<std::int64_t>(w.counters().ca_mismatches)}};
  };
  return s;
}

// The legacy capture of `basic` (mm, relu, sum) reads these proxy metadata
// fields (`capsim capture basic --mode legacy` lists them).
constexpr std::int64_t kLegacyBasicReads = 9;

}  // namespace

void add_compiled_autograd_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(compiled_autograd_backward_adam());
  for (const AutogradScenario& c : builtin_autograd_scenarios()) {
    out.push_back(capture_program(c, CaptureMode::kFunctional));
  }
  out.push_back(
      capture_program(*find_autograd_scenario("basic"), CaptureMode::kLegacy, kLegacyBasicReads));
}

}  // namespace capsim
