// Scenarios that reproduce reports from pytorch/pytorch's issue tracker, each
// named after its issue and written for the newest profile.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

// #122192's loop: `iterations` calls of f(x) that keep the output as `out`,
// one call of f(y), then a read of `out`, probed as out[0] (x = 1, y = 3,
// f = 2x: 2 if it kept its values, 6 if the last call overwrote it).
void kept_output_loop(ProgramScenario& s, int iterations) {
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"primals_1"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  p.add(tensor("x", {4}, 1.0f));
  p.add(tensor("y", {4}, 3.0f));
  for (int i = 0; i < iterations; ++i) p.add(call("f", {"x"}, {"out"}));
  p.add(call("f", {"y"}, {"next"}));
  p.add(Read{"out"});
  p.probe([](const World& w) -> std::int64_t {
    const auto v = w.values("out");
    return v.ok() && !v->empty() ? static_cast<std::int64_t>((*v)[0]) : -1;
  });
}

// pytorch/pytorch#122192 ("extra checks for reduce-overhead inconsistent
// when warmup/recording"): a loop keeps the last output of f, then calls f
// once more and reads that output. With two iterations the kept output came
// from the recording, so the new generation poisons it and the read raises
// E1. With three it came from a replay: nothing poisons a replayed output
// (dealloc_current_path_weakrefs runs only from WARMUP or RECORDING), the
// next replay writes the same storage, and the read returns the new call's
// values without a word.
ProgramScenario issue_122192(int iterations) {
  ProgramScenario s;
  s.name = iterations == 2 ? "issue_122192_two_iterations" : "issue_122192_three_iterations";
  s.mirrors = "pytorch/pytorch#122192";
  s.description =
      iterations == 2
          ? "the kept output of the recording iteration is poisoned by the next call: E1"
          : "the kept output of a replay is overwritten by the next call, silently";
  s.options.config.torch_profile = kNewestTorchProfile;
  kept_output_loop(s, iterations);
  s.expect = [iterations](const World& w, const std::vector<std::int64_t>& probes) {
    if (iterations == 2) {
      return std::vector<Expectation>{
          {"E1 errors", 1, decisions_made(w, Decision::kErrorOverwrittenOutput)},
          {"graphs recorded", 1, graphs(w)}};
    }
    return std::vector<Expectation>{
        {"E1 errors", 0, decisions_made(w, Decision::kErrorOverwrittenOutput)},
        {"replays", 2, static_cast<std::int64_t>(w.counters().replays)},
        {"out[0]: f(y), not f(x) = 2", 6, probes.at(0)}};
  };
  return s;
}

// cudagraph_trees_generation_cloning="user_visible" (2.14 on): the kept
// output of #122192 is cloned out of the pool before each new generation,
// so the read sees f(x) whether it came from the recording (no E1) or from
// a replay (not overwritten), at the price of one copy per generation.
ProgramScenario clone_live_output_on_new_generation(int iterations) {
  ProgramScenario s;
  s.name =
      iterations == 2 ? "clone_live_output_on_new_generation" : "clone_live_output_from_a_replay";
  s.mirrors = iterations == 2 ? "test_cudagraph_trees.py::test_clone_live_output_on_new_generation"
                              : "pytorch/pytorch#122192 with cudagraph_trees_generation_cloning";
  s.description = iterations == 2
                      ? "generation cloning: the recording's kept output is cloned, no E1"
                      : "generation cloning: a replay's kept output is cloned, not overwritten";
  s.options.config.torch_profile = kNewestTorchProfile;
  s.options.config.cudagraph_trees_generation_cloning = true;
  kept_output_loop(s, iterations);
  s.expect = [iterations](const World& w, const std::vector<std::int64_t>& probes) {
    return std::vector<Expectation>{
        {"E1 errors", 0, decisions_made(w, Decision::kErrorOverwrittenOutput)},
        {"storages cloned", iterations, static_cast<std::int64_t>(w.counters().generation_clones)},
        {"out[0] = f(x)", 2, probes.at(0)}};
  };
  return s;
}

}  // namespace

void add_issue_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(issue_122192(2));
  out.push_back(issue_122192(3));
  out.push_back(clone_live_output_on_new_generation(2));
  out.push_back(clone_live_output_on_new_generation(3));
}

}  // namespace capsim
