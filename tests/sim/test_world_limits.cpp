// The World's limits on actions: a program held in memory stops at
// kMaxActions, a run (a streamed trace replays one action at a time) at
// kMaxRunActions, so that a 10^7-event trace replays (issue 26).
#include <doctest/doctest.h>
#include <fmt/format.h>

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
