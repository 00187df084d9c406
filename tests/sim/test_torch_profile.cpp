// Torch profiles (sim/core/torch_profile.hpp): which release a version
// names, and the rules that set each release's tree manager apart, each seen
// in a program that the classic manager and the newer one decide differently.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include <variant>

#include "sim/core/messages.hpp"
#include "sim/core/torch_profile.hpp"
#include "sim/scenarios/scenarios.hpp"

namespace capsim {
namespace {

// The rules a profile switches, in words, without its name, sources and what
// it leaves out.
std::vector<std::string> modelled_rules(TorchProfile p) {
  std::vector<std::string> out;
  for (const std::string& line : describe_profile(profile_rules(p))) {
    if (!line.starts_with("read from:") && !line.starts_with("not modelled yet:")) {
      out.push_back(line);
    }
  }
  return out;
}

TEST_CASE("torch profiles: a release or a name picks the profile that covers it") {
  CHECK(torch_profile_for("2.5") == TorchProfile::kClassic);
  CHECK(torch_profile_for("2.8.0") == TorchProfile::kClassic);
  CHECK(torch_profile_for("2.9.1") == TorchProfile::k2_9);
  CHECK(torch_profile_for("2.10") == TorchProfile::k2_10);
  CHECK(torch_profile_for("2.11") == TorchProfile::k2_11);
  CHECK(torch_profile_for("2.12") == TorchProfile::k2_12);
  CHECK(torch_profile_for("2.14.2") == TorchProfile::k2_14);
  CHECK(torch_profile_for("2.15") == TorchProfile::k2_15);
  CHECK(torch_profile_for("classic") == TorchProfile::kClassic);
  for (const char* bad :
       {"", "2", "2.", "2.4", "2.16", "3.0", "2.13x", "2.13.", "2.13.1.2", "v2.13", "Classic"}) {
    CAPTURE(bad);
    CHECK_FALSE(torch_profile_for(bad).has_value());
  }
  CHECK(torch_profile_name(kNewestTorchProfile) == "2.15");
  CHECK(known_torch_profiles() == "classic, 2.9, 2.10, 2.11, 2.12, 2.13, 2.14, 2.15");
  // Each profile differs from the one before it in a modelled rule (2.15:
  // cudagraph_dynamic_shape_rerecord_limit).
  for (int i = 1; i < static_cast<int>(TorchProfile::kCount); ++i) {
    const auto p = static_cast<TorchProfile>(i);
    CAPTURE(torch_profile_name(p));
    CHECK(modelled_rules(p) != modelled_rules(static_cast<TorchProfile>(i - 1)));
  }
  // Managed-input demotion is 2.15's alone.
  CHECK(profile_rules(TorchProfile::k2_15).has_managed_input_demotion);
  CHECK_FALSE(profile_rules(TorchProfile::k2_14).has_managed_input_demotion);
}

std::int64_t count_where(const std::vector<Event>& events, EventKind kind, const char* id) {
  std::int64_t n = 0;
  for (const Event& e : events) n += e.kind == kind && e.text(F::id) == id;
  return n;
}

// The scenario under `profile`, run.
ProgramScenarioRun run_under(const std::string& name, TorchProfile profile) {
  const ProgramScenario* s = find_program_scenario(name);
  REQUIRE(s != nullptr);
  return run_program_scenario(under_profile(*s, profile));
}

TEST_CASE("torch profiles: from 2.12 a changed static pointer re-records instead of E4") {
  CHECK(count_where(run_under("unstable_ptr", TorchProfile::kClassic).events, EventKind::kError,
                    "E4") == 1);
  CHECK(count_where(run_under("unstable_ptr", TorchProfile::k2_12).events, EventKind::kError,
                    "E4") == 0);
}

TEST_CASE("torch profiles: the re-record limit, per release") {
  // Static-pointer churn with inlining off and limit 0: counted, and past the
  // limit, only by the classic manager; 2.12 has no limit; 2.13 on do not
  // count static churn.
  const char* churn = "fallback_to_eager_if_recompiling_too_many_times";
  CHECK(count_where(run_under(churn, TorchProfile::kClassic).events, EventKind::kSkip, "E5") == 1);
  for (TorchProfile p : {TorchProfile::k2_12, TorchProfile::k2_13, TorchProfile::k2_15}) {
    CAPTURE(torch_profile_name(p));
    CHECK(count_where(run_under(churn, p).events, EventKind::kSkip, "E5") == 0);
  }
  // A live output expected dead: counted from 2.13 only, and with inlining on.
  CHECK(count_where(run_under("liveness_mismatch_counts", TorchProfile::kClassic).events,
                    EventKind::kSkip, "E5") == 0);
  CHECK(count_where(run_under("liveness_mismatch_counts", TorchProfile::k2_12).events,
                    EventKind::kSkip, "E5") == 0);
  CHECK(count_where(run_under("liveness_mismatch_counts", TorchProfile::k2_13).events,
                    EventKind::kSkip, "E5") == 1);
}

std::string message_of(const std::vector<Event>& events, EventKind kind, const char* id) {
  for (const Event& e : events) {
    if (e.kind == kind && e.text(F::id) == id) return std::string(*e.text(F::message));
  }
  return "";
}

TEST_CASE("torch profiles: W1's text changed in 2.12") {
  const std::string classic =
      message_of(run_under("warn_on_pending_backward", TorchProfile::kClassic).events,
                 EventKind::kWarning, "W1");
  const std::string newer = message_of(
      run_under("warn_on_pending_backward", TorchProfile::k2_12).events, EventKind::kWarning, "W1");
  CHECK(classic.find("pending, uninvoked backwards") != std::string::npos);
  CHECK(newer.find("outputs from a previous step still require backward") != std::string::npos);
}

TEST_CASE("torch profiles: E1 of a grad output has its own text from 2.13") {
  // The MLP trained with a compiled forward and its AOT backward (a BACKWARD
  // function), its grads kept by zero_grad(set_to_none=False): the next
  // generation frees the grads the recorded backward left in the pool.
  const ProgramScenario* s = find_program_scenario("mlp_training_aot_backward");
  REQUIRE(s != nullptr);
  Program kept = s->program;
  for (Action& a : kept.actions) {
    if (auto* z = std::get_if<ZeroGrad>(&a)) z->set_to_none = false;
  }
  auto e1_under = [&](TorchProfile p) {
    WorldOptions o = s->options;
    o.config.torch_profile = p;
    World w(o);
    REQUIRE(w.run(kept).ok());
    return message_of(w.events(), EventKind::kError, "E1");
  };
  CHECK(e1_under(TorchProfile::k2_12).rfind("Error: accessing tensor output", 0) == 0);
  CHECK(e1_under(TorchProfile::k2_13).rfind("Error: accessing gradient tensor output", 0) == 0);
  // Other outputs keep the forward text, which 2.14 points at generation cloning.
  CHECK(messages::overwritten_output(profile_rules(TorchProfile::k2_13)).find("generation") ==
        std::string::npos);
  CHECK(messages::overwritten_output(profile_rules(TorchProfile::k2_14))
            .find("cudagraph_trees_generation_cloning = 'user_visible'") != std::string::npos);
}

}  // namespace
}  // namespace capsim

namespace capsim {
namespace {

TEST_CASE("torch profiles: check_memory_pool's texts changed in 2.11") {
  const std::vector<Address> two = {1024, 2048};
  CHECK(messages::pool_untracked(profile_rules(TorchProfile::k2_10), two) ==
        "These live storage data ptrs are in the cudagraph pool but not accounted for as an "
        "output of cudagraph trees: \n\nData Pointer: 1024, history: \n\nData Pointer: 2048, "
        "history: \n");
  CHECK(messages::pool_untracked(profile_rules(TorchProfile::k2_11), two) ==
        "Detected 2 tensor(s) in the cudagraph pool not tracked as outputs. All live allocations "
        "must be tracked for correctness.\nDebugging:\n- Set "
        "torch._inductor.config.triton.cudagraph_trees_history_recording = True for allocation "
        "origins\n- Objgraph backrefs disabled; set "
        "torch._inductor.config.triton.cudagraph_trees_objgraph = True "
        "(refs_live_tensor_{index}.svg)\n- Search gc.get_objects() for tensors with data_ptr() in "
        "OrderedSet([1024, 2048])\n- Use refcycle to find what is preventing cleanup\n"
        "Allocations:\nData Pointer: 1024, history: \n\nData Pointer: 2048, history: \n");
  CHECK(messages::pool_missing(profile_rules(TorchProfile::kClassic), 1, two) ==
        "These storage data ptrs are not allocated in pool 1 but should be {1024, 2048}");
  CHECK(messages::pool_missing(profile_rules(TorchProfile::k2_15), 1, two) ==
        "These storage data ptrs are not allocated in pool 1 but should be: {1024, 2048}. This "
        "could be a bug in inductor aliasing tracking or in a custom op's meta function. Please "
        "file an issue.");
}

}  // namespace
}  // namespace capsim
