// run_program's one stop rule (traces/simulation/run_program.hpp), seen by
// an observer: a prediction ends at its first raise, keeps going past it
// when asked, ends at an action refused after a raise, and reports one
// refused with no raise before it as bad input naming its line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "traces/simulation/program_file.hpp"
#include "traces/simulation/run_program.hpp"

namespace capsim {
namespace {

// Two outputs kept across calls and read later: the read of y1 (action 6)
// raises E1, and so does the read of y2 (action 7). `last` is one more
// action line.
std::string kept_outputs(const std::string& last) {
  return R"({"type":"header","name":"kept"}
{"type":"function","function":"f","mode":"inference","inputs":["x","w"],"ops":[{"op":"mul","args":[0,1]}],"outputs":[2]}
{"type":"action","action":"new_tensor","name":"w","sizes":[4],"parameter":true}
{"type":"action","action":"new_tensor","name":"x","sizes":[4]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y1"]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y2"]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y3"]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y4"]}
{"type":"action","action":"read","name":"y1"}
{"type":"action","action":"read","name":"y2"}
)" + last +
         "\n";
}

// Which actions ran and which were read after the simulation stopped.
struct Tally : RunObserver {
  std::vector<std::size_t> ran, unsimulated;
  RunEnd end;
  bool keep_reading = false;  // a refusal stops the simulation, not the run
  Status after_action(const TraceItem& item, World&, std::vector<Event>&) override {
    ran.push_back(item.action_index);
    return {};
  }
  Status on_unsimulated_action(const TraceItem& item) override {
    unsimulated.push_back(item.action_index);
    return {};
  }
  Status on_refused(const TraceItem* action, const std::string& source, const Error& why) override {
    if (keep_reading) return {};
    return RunObserver::on_refused(action, source, why);
  }
  Status on_end(const World&, const RunEnd& e) override {
    end = e;
    return {};
  }
};

Status run(const std::string& text, OnRaise on_raise, Tally& tally) {
  Result<ProgramFile> file = read_program_bytes(text, "kept.jsonl");
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  ProgramFileSource source(*file, "kept.jsonl");
  WorldOptions options;
  options.config = file->header.config;
  options.memory_budget_bytes = kDefaultMemoryBudget;
  return run_program(source, options, on_raise, tally);
}

TEST_CASE("run_program: a prediction ends after its first raise") {
  Tally t;
  REQUIRE(run(kept_outputs(R"({"type":"action","action":"read","name":"y4"})"), OnRaise::kStop, t));
  CHECK(t.ran == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(t.unsimulated == std::vector<std::size_t>{7, 8});
  CHECK(t.end.error_at == 6u);
  CHECK(t.end.stopped_at == 7u);
  CHECK(t.end.stop == RunStop::kRaise);
}

TEST_CASE("run_program: keep going runs past a raise, and ends at a refusal after one") {
  Tally t;
  REQUIRE(run(kept_outputs(R"({"type":"action","action":"read","name":"y4"})"), OnRaise::kKeepGoing,
              t));
  CHECK(t.ran.size() == 9);
  CHECK(t.end.error_at == 6u);
  CHECK(t.end.stop == RunStop::kNone);
  Tally refused;
  REQUIRE(
      run(kept_outputs(
              R"({"type":"action","action":"call","function":"g","args":["x"],"outputs":["z"]})"),
          OnRaise::kKeepGoing, refused));
  CHECK(refused.ran.size() == 8);
  CHECK(refused.end.stopped_at == 8u);
  CHECK(refused.end.stop == RunStop::kRefusedAfterRaise);
}

TEST_CASE("run_program: a refusal with no raise before it is bad input at its line") {
  const std::string text = R"({"type":"header","name":"bad"}
{"type":"action","action":"new_tensor","name":"x","sizes":[4]}
{"type":"action","action":"call","function":"g","args":["x"],"outputs":["z"]}
{"type":"action","action":"read","name":"x"}
)";
  Tally t;
  Status s = run(text, OnRaise::kKeepGoing, t);
  REQUIRE(!s);
  INFO(s.error().message);
  CHECK(s.error().message.starts_with("kept.jsonl:3: action 1"));
  // An observer that goes on without the model (the Chrome export) reads on.
  Tally reading;
  reading.keep_reading = true;
  REQUIRE(run(text, OnRaise::kKeepGoing, reading));
  CHECK(reading.ran == std::vector<std::size_t>{0});
  CHECK(reading.unsimulated == std::vector<std::size_t>{2});
  CHECK(reading.end.stop == RunStop::kRefused);
  CHECK(reading.end.stopped_at == 1u);
}

TEST_CASE("run_program: functions the World refuses are bad input, with or without actions") {
  const std::string f =
      R"({"type":"function","function":"f","mode":"inference","inputs":["x"],"ops":[],"outputs":[0]})";
  Tally t;
  Status s = run(R"({"type":"header","name":"twice"})"
                 "\n" +
                     f + "\n" + f + "\n",
                 OnRaise::kStop, t);
  REQUIRE(!s);
  CHECK(s.error().message.find("defined twice") != std::string::npos);
  INFO(s.error().message);
  CHECK(s.error().message.starts_with("kept.jsonl: "));
}

}  // namespace
}  // namespace capsim
