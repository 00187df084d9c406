// Built-in scenarios, part 9: 2.15's managed-input demotion
// (triton.cudagraph_managed_input_rerecord_limit and _action; PyTorch PRs
// #188161 and #191369). A managed input is an output of an earlier graph on
// the path; when its pointer keeps changing, every call re-records. From 2.15
// the manager counts those changes per input and per (parent node, function)
// edge, and at the limit copies the input in from then on ("copy", the
// default) or runs the edge eagerly ("skip", E9).
//
// The program is a decode loop with a graph break: a compiled graph `f`
// makes a buffer, eager code slices one row of it at a moving position, and
// a second graph `g` of the same invocation reads the slice. The slice is a
// view of f's output, so it is managed, and its data pointer moves by one row
// each step.
#include <fmt/format.h>

#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

constexpr int kSteps = 10;

// f(x) = x + x, g(v) = v * v, and row_k(y) = y[k:k+1] for each step k.
void add_decode_loop(ProgramWriter& p) {
  {
    FunctionBuilder f("f", kInference, {"arg0_1"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  {
    FunctionBuilder g("g", kInference, {"arg0_1"});
    p.function(g.returns({g.mul(g.input(0), g.input(0))}));
  }
  for (int k = 0; k < kSteps; ++k) {
    FunctionBuilder row(fmt::format("row_{}", k), kInference, {"y"});
    p.function(row.returns({row.slice(row.input(0), k, k + 1)}));
  }
  p.add(tensor("x", {kSteps, 4}));  // rows of 16 bytes: aligned, and distinct
  for (int k = 0; k < kSteps; ++k) {
    p.add(call("f", {"x"}, {"y"}));
    p.add(eager(fmt::format("row_{}", k), {"y"}, {"v"}));
    p.add(call_same("g", {"v"}, {"z"}));
    p.add(Read{"z"});
  }
}

std::int64_t replay_mismatches(const World& w) {
  return static_cast<std::int64_t>(w.counters().replay_mismatches);
}

}  // namespace

// Action "copy": the fifth change of g's managed input on the edge under f's
// node demotes it; the sixth recording of g copies the row in, and every
// later step replays it.
ProgramScenario managed_input_demoted_to_copy() {
  ProgramScenario s;
  s.name = "managed_input_demoted_to_copy";
  s.mirrors =
      "cudagraph_trees.py::CUDAGraphTreeManager._update_cudagraph_managed_input_rerecord "
      "(2.15.0; no PyTorch test found)";
  s.description =
      "a managed input whose pointer moves each step: re-records 5 times, then is copied in";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.verify_replays = true;
  ProgramWriter p(s);
  add_decode_loop(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded (f, then g 6 times)", 7, graphs(w)},
        {"demote events", 1, events_of(w, EventKind::kDemote)},
        {"g replays after the demotion", 3, events_where(w, EventKind::kReplay, F::function, "g")},
        {"replays that differ from eager", 0, replay_mismatches(w)}};
  };
  return s;
}

// Action "skip": at the fifth change the edge runs eagerly (E9), and stays
// eager without another message.
ProgramScenario managed_input_rerecord_skip() {
  ProgramScenario s;
  s.name = "managed_input_rerecord_skip";
  s.mirrors =
      "cudagraph_trees.py::CUDAGraphTreeManager._run (2.15.0, "
      "cudagraph_managed_input_rerecord_action=\"skip\"; no PyTorch test found)";
  s.description = "action skip: the fifth pointer change sends g's edge to eager (E9)";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.cudagraph_managed_input_rerecord_action = ManagedInputAction::kSkip;
  s.options.verify_replays = true;
  ProgramWriter p(s);
  add_decode_loop(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded (f, then g 5 times)", 6, graphs(w)},
        {"E9 skips", 1, decisions_made(w, Decision::kSkipManagedInputLimit)},
        {"g eager from the fifth change on", 4,
         decisions_made(w, Decision::kEagerManagedInputLimit)},
        {"replays that differ from eager", 0, replay_mismatches(w)}};
  };
  return s;
}

void add_managed_input_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(managed_input_demoted_to_copy());
  out.push_back(managed_input_rerecord_skip());
}

}  // namespace capsim
