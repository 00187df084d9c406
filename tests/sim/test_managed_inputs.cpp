// 2.15's managed-input demotion (cudagraph_managed_input_rerecord_limit and
// _action) through the built-in decode-loop scenarios: what each profile and
// action decides, the limit as a knob, and the negative control (a demoted
// input that is never copied must make replays differ from eager).
#include <doctest/doctest.h>

#include "sim/scenarios/scenarios.hpp"
#include "sim/world/world.hpp"

using namespace capsim;

namespace {

const ProgramScenario& scenario(const char* name) {
  const ProgramScenario* s = find_program_scenario(name);
  REQUIRE(s != nullptr);
  return *s;
}

std::int64_t events_named(const World& w, EventKind kind, FieldKey key, std::string_view value) {
  return std::count_if(w.events().begin(), w.events().end(),
                       [&](const Event& e) { return e.kind == kind && e.text(key) == value; });
}

}  // namespace

TEST_CASE("managed inputs: 2.15 demotes at the limit; 2.14 re-records every step") {
  const ProgramScenario& s = scenario("managed_input_demoted_to_copy");
  World w(s.options);
  REQUIRE(w.run(s.program).ok());
  CHECK(w.counters().graphs_recorded == 7);
  CHECK(count_events(w.events(), EventKind::kDemote) == 1);
  // The demoted recording names its copied input and no managed one.
  const auto record = std::find_if(w.events().rbegin(), w.events().rend(), [](const Event& e) {
    return e.kind == EventKind::kRecord && e.has(F::copied_managed);
  });
  REQUIRE(record != w.events().rend());
  CHECK(record->count(F::graph) == 6);
  // As CUDAGraphNode.__init__ (2.15.0): the demoted index stays in `static`,
  // with its pointer, and leaves `managed` and `non_static`.
  const IntList& demoted = record->get<IntList>(F::copied_managed);
  const IntList& statics = record->get<IntList>(F::static_);
  REQUIRE(demoted.size() == 1);
  CHECK(std::count(statics.begin(), statics.end(), demoted[0]) == 1);
  CHECK(record->get<AddressList>(F::static_ptrs).size() == statics.size());
  const IntList& managed = record->get<IntList>(F::managed);
  const IntList& non_static = record->get<IntList>(F::non_static);
  CHECK(std::count(managed.begin(), managed.end(), demoted[0]) == 0);
  CHECK(std::count(non_static.begin(), non_static.end(), demoted[0]) == 0);
  CHECK(w.counters().replay_mismatches == 0);
  CHECK(w.counters().replay_checks > 0);

  const ProgramScenario older = under_profile(s, TorchProfile::k2_14);
  World w14(older.options);
  REQUIRE(w14.run(older.program).ok());
  CHECK(w14.counters().graphs_recorded == 10);  // f, then g at every step from the second
  CHECK(count_events(w14.events(), EventKind::kDemote) == 0);
}

TEST_CASE("managed inputs: the limit is a knob") {
  ProgramScenario s = scenario("managed_input_demoted_to_copy");
  s.options.config.cudagraph_managed_input_rerecord_limit = 1;
  World w(s.options);
  REQUIRE(w.run(s.program).ok());
  CHECK(w.counters().graphs_recorded == 3);  // f, g, and g with the row copied in
  CHECK(w.counters().replay_mismatches == 0);
  s.options.config.cudagraph_managed_input_rerecord_limit = 1000;
  World none(s.options);
  REQUIRE(none.run(s.program).ok());
  CHECK(none.counters().graphs_recorded == 10);
}

TEST_CASE("managed inputs: action skip sends the edge to eager once, with E9") {
  const ProgramScenario& s = scenario("managed_input_rerecord_skip");
  World w(s.options);
  REQUIRE(w.run(s.program).ok());
  CHECK(events_named(w, EventKind::kSkip, F::id, "E9") == 1);
  CHECK(w.counters().cudagraph_skips == 1);
  // Under cudagraph_or_error the skip raises once (E8), then the edge is eager.
  ProgramScenario raising = s;
  raising.options.config.cudagraph_or_error = true;
  World r(raising.options);
  REQUIRE(r.run(raising.program).ok());
  CHECK(events_named(r, EventKind::kError, F::id, "E8") == 1);
  CHECK(events_named(r, EventKind::kEager, F::reason, "managed_input_rerecord_limit") == 3);
}

TEST_CASE("managed inputs: the negative control, a demoted input never copied, is caught") {
  ProgramScenario s = scenario("managed_input_demoted_to_copy");
  s.options.fault = Fault::kDemotedNotCopied;
  World w(s.options);
  REQUIRE(w.run(s.program).ok());
  // The replays after the demotion read the row the recording copied.
  CHECK(w.counters().replay_mismatches == 3);
}
