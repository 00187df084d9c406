// The World's limits on actions: a program held in memory stops at
// kMaxActions, a run (a streamed trace replays one action at a time) at
// kMaxRunActions, so that a 10^7-event trace replays; and the events it
// holds at once stop at a limit too.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "sim/scenarios/scenarios.hpp"
#include "sim/world/world.hpp"

using namespace capsim;

TEST_CASE("world limits: a run's action indices go past a program's limit, up to the run's") {
  const Program program;  // a streamed replay begins with the functions only
  World w{WorldOptions{}};
  REQUIRE(w.begin(program).ok());
  CHECK(w.run_action(kMaxActions, MarkStepBegin{}).ok());
  CHECK(w.run_action(kMaxRunActions - 1, MarkStepBegin{}).ok());
  const Status past = w.run_action(kMaxRunActions, MarkStepBegin{});
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message ==
        fmt::format("action {}: the limit is {} actions", kMaxRunActions, kMaxRunActions));
}

TEST_CASE("world limits: a program held in memory keeps the smaller limit") {
  Program program;
  program.actions.assign(kMaxActions + 1, MarkStepBegin{});
  World w{WorldOptions{}};
  const Status s = w.begin(program);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("the limit is 4194304") != std::string::npos);
}

// Events held at once: input can reach the limit (a long program whose
// command keeps its events), so passing it is bad input, not an abort; a
// run that takes its events as it goes never reaches it.
TEST_CASE("world limits: an action that leaves too many events held is refused") {
  const ProgramScenario* s = find_program_scenario("rerecord_if_static_input_address_changed");
  REQUIRE(s != nullptr);
  // Above any one action's events, below the whole run's.
  WorldOptions options = s->options;
  options.max_held_events = 8;
  {
    World w{options};
    const Status ran = w.run(s->program);
    REQUIRE_FALSE(ran.ok());
    CAPTURE(ran.error().message);
    CHECK(ran.error().message.find("more than the 8 a run may keep at once") != std::string::npos);
    CHECK(w.events().size() > 8);
  }
  World w{options};
  std::size_t events = 0;
  const Status streamed = w.run(s->program, [&](std::size_t) { events += w.take_events().size(); });
  CHECK(streamed.ok());
  CHECK(events > 8);
}

// Not a limit, but the World's other byte count: a new_tensor of another
// dtype takes that dtype's element size (docs/trace-format.md §4.1), so two
// int64 tensors of 100 elements sit 800 bytes apart, rounded to the
// allocator's 512-byte blocks, where two float32 ones sit 512 apart.
TEST_CASE("world: a new_tensor of int64 takes 8 bytes an element") {
  const auto gap = [](DType dtype) {
    World w{WorldOptions{}};
    REQUIRE(w.begin(Program{}).ok());
    NewTensor a{.name = "a", .sizes = {100}, .dtype = dtype};
    NewTensor b{.name = "b", .sizes = {100}, .dtype = dtype};
    REQUIRE(w.run_action(0, a).ok());
    REQUIRE(w.run_action(1, b).ok());
    return w.data_ptr("b").value() - w.data_ptr("a").value();
  };
  CHECK(gap(DType::kFloat32) == 512);
  CHECK(gap(DType::kInt64) == 1024);
  CHECK(gap(DType::kBool) == 512);
}

// A read of another dtype shows one value per element, as PyTorch prints it.
TEST_CASE("world: values of every dtype are one float per element") {
  World w{WorldOptions{}};
  REQUIRE(w.begin(Program{}).ok());
  const std::pair<DType, std::vector<float>> cases[] = {
      {DType::kInt64, {-3, -3, -3}}, {DType::kFloat64, {-3.5f, -3.5f, -3.5f}},
      {DType::kBool, {1, 1, 1}},     {DType::kFloat16, {-3.5f, -3.5f, -3.5f}},
      {DType::kInt8, {-3, -3, -3}},  {DType::kBFloat16, {-3.5f, -3.5f, -3.5f}},
  };
  std::int64_t i = 0;
  for (const auto& [dtype, want] : cases) {
    CAPTURE(dtype_name(dtype));
    const std::string name = fmt::format("t{}", i);
    REQUIRE(w.run_action(i++, NewTensor{.name = name, .sizes = {3}, .dtype = dtype, .fill = -3.5f}).ok());
    CHECK(w.values(name).value() == want);
  }
}
