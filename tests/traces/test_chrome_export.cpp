// The Chrome export (traces/analyses/chrome_export.hpp): built-in scenarios export to
// documents that pass the validator, with one replay slice per replay event,
// its kernels nested in it and named by the re-simulation, one flow arrow per
// replay, ids unique across tree managers, and the same bytes
// every time; the validator refuses documents that viewers would misdraw.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "sim/scenarios/scenarios.hpp"
#include "tests/traces/trace_test_support.hpp"
#include "traces/analyses/chrome_export.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim {
namespace {

Result<Json> export_lines(const std::vector<std::string>& lines) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, test::reader_of(test::join_lines(lines)));
  return chrome_trace(*reader);
}

std::vector<std::string> recorded(const ProgramScenario& s) {
  Result<std::vector<std::string>> lines = trace_scenario(s);
  REQUIRE(lines.ok());
  return *lines;
}

// Lines holding `needle` (and `also`, when given).
std::size_t count_lines(const std::vector<std::string>& lines, const std::string& needle,
                        const std::string& also = "") {
  std::size_t n = 0;
  for (const std::string& l : lines) {
    n += l.find(needle) != std::string::npos && l.find(also) != std::string::npos;
  }
  return n;
}

struct Tally {
  std::size_t replays = 0, tree_replays = 0, records = 0, kernels = 0, starts = 0, finishes = 0;
  std::size_t step_fallbacks = 0;
  std::set<std::string> flow_ids;
};

// Counts, and checks that every kernel slice lies inside the replay slice
// before it (they are written right after it) with graph_node_id 0, 1, ...
Tally tally(const Json& doc) {
  Tally t;
  const Json& events = doc["traceEvents"];
  double replay_start = -1, replay_end = -1;
  std::int64_t next_node = 0;
  for (auto it = events.begin(); it != events.end(); ++it) {
    const Json& e = *it;
    const std::string ph = e["ph"].get<std::string>();
    const std::string name = e["name"].get<std::string>();
    if (ph == "s") ++t.starts;
    if (ph == "f") ++t.finishes;
    if (ph == "s" || ph == "f") t.flow_ids.insert(e["id"].dump());
    if (ph != "X") continue;
    if (name.starts_with("record ")) ++t.records;
    if (name.starts_with("replay ")) {
      ++t.replays;
      t.tree_replays += name.starts_with("replay graph ");
      replay_start = e["ts"].get<double>();
      replay_end = replay_start + e["dur"].get<double>();
      next_node = 0;
      if (e["args"]["kernel_names"] == "step k") ++t.step_fallbacks;
    } else if (e["args"].contains("graph_node_id")) {
      ++t.kernels;
      CAPTURE(name);
      CHECK(e["args"]["graph_node_id"].get<std::int64_t>() == next_node++);
      CHECK(e["ts"].get<double>() > replay_start);
      CHECK(e["ts"].get<double>() + e["dur"].get<double>() < replay_end);
    }
  }
  return t;
}

TEST_CASE("chrome export: scenarios export valid, counted, named documents") {
  for (const char* name :
       {"rerecord_if_static_input_address_changed", "multi_dispatch_single_compile_param_inputs",
        "compiled_adam_cudagraphed_backward", "forward_backward", "plain_api_param_reassigned"}) {
    CAPTURE(name);
    const ProgramScenario* s = find_program_scenario(name);
    REQUIRE(s != nullptr);
    const std::vector<std::string> lines = recorded(*s);
    Result<Json> doc = export_lines(lines);
    REQUIRE(doc.ok());
    const Status valid = validate_chrome_trace(*doc);
    INFO((valid ? std::string() : valid.error().message));
    CHECK(valid.ok());
    CHECK((*doc)["displayTimeUnit"] == "ms");
    CHECK((*doc)["otherData"]["kernel_names"] == "simulated");

    const Tally t = tally(*doc);
    const std::size_t replay_events = count_lines(lines, "\"event\":\"replay\"");
    const std::size_t plain_replays =
        count_lines(lines, "\"event\":\"replay\"", "\"api\":\"plain\"");
    CHECK(t.replays == replay_events);
    CHECK(t.records == count_lines(lines, "\"event\":\"record\""));
    // One arrow per replay, from its recording (every replay here has one).
    CHECK(t.starts == t.replays);
    CHECK(t.finishes == t.replays);
    CHECK(t.flow_ids.size() == t.replays);
    CHECK(t.tree_replays == replay_events - plain_replays);
    // Plain-API graphs are not in the tree manager: their steps stay "step k".
    if (t.tree_replays > 0) {
      CHECK(t.kernels > 0);
      CHECK(t.step_fallbacks == t.replays - t.tree_replays);
    }
  }
}

TEST_CASE("chrome export: tree replays are named after the recorded kernels") {
  const std::vector<std::string> lines =
      recorded(*find_program_scenario("rerecord_if_static_input_address_changed"));
  Result<Json> doc = export_lines(lines);
  REQUIRE(doc.ok());
  std::map<std::string, std::size_t> names;
  const Json& events = (*doc)["traceEvents"];
  for (auto it = events.begin(); it != events.end(); ++it) {
    if (it->contains("args") && (*it)["args"].contains("graph_node_id")) {
      ++names[(*it)["name"].get<std::string>()];
      CHECK((*it)["args"]["step"] != "step");
    }
  }
  REQUIRE(!names.empty());
  for (const auto& [n, count] : names) CHECK(!n.starts_with("step "));
}

TEST_CASE("chrome export: the same trace gives the same bytes") {
  const std::vector<std::string> lines =
      recorded(*find_program_scenario("multi_dispatch_single_compile_param_inputs"));
  Result<Json> a = export_lines(lines);
  Result<Json> b = export_lines(lines);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->dump() == b->dump());
}

TEST_CASE("chrome export: flow ids stay unique when a reset restarts graph ids") {
  ProgramScenario s = *find_program_scenario("rerecord_if_static_input_address_changed");
  const std::vector<Action> first = s.program.actions;
  s.program.actions.push_back(Reset{});
  s.program.actions.insert(s.program.actions.end(), first.begin(), first.end());
  const std::vector<std::string> lines = recorded(s);
  REQUIRE(count_lines(lines, "\"event\":\"shutdown\"") >= 1);
  Result<Json> doc = export_lines(lines);
  REQUIRE(doc.ok());
  const Status valid = validate_chrome_trace(*doc);
  INFO((valid ? std::string() : valid.error().message));
  CHECK(valid.ok());
  const Tally t = tally(*doc);
  CHECK(t.replays == count_lines(lines, "\"event\":\"replay\""));
  CHECK(t.starts == t.replays);
  CHECK(t.flow_ids.size() == t.replays);
  CHECK(t.step_fallbacks == 0);
}

TEST_CASE("chrome export: replays fall back to \"step k\" where the model cannot name them") {
  std::vector<std::string> lines =
      recorded(*find_program_scenario("rerecord_if_static_input_address_changed"));
  // A trace whose first recording has another step count than the model's.
  std::vector<std::string> other = lines;
  for (std::string& l : other) {
    const std::size_t at = l.find("\"steps\":3");
    if (l.find("\"event\":\"record\"") == std::string::npos || at == std::string::npos) continue;
    l.replace(at, 9, "\"steps\":4");
    break;
  }
  Result<Json> doc = export_lines(other);
  REQUIRE(doc.ok());
  CHECK(validate_chrome_trace(*doc).ok());
  Tally t = tally(*doc);
  CHECK(t.step_fallbacks == count_lines(other, "\"event\":\"replay\"", "\"graph\":0,"));
  CHECK(t.step_fallbacks > 0);

  // A trace the model refuses part-way: the export goes on, unnamed.
  for (std::string& l : lines) {
    if (l.find("\"index\":5,") != std::string::npos) {
      l = l.substr(0, l.find("\"action\":\"")) + "\"action\":\"read\",\"name\":\"nope\"}";
    }
  }
  doc = export_lines(lines);
  REQUIRE(doc.ok());
  CHECK(validate_chrome_trace(*doc).ok());
  CHECK((*doc)["otherData"]["kernel_names"].get<std::string>().find("unknown tensor 'nope'") !=
        std::string::npos);
  t = tally(*doc);
  CHECK(t.replays == count_lines(lines, "\"event\":\"replay\""));
  CHECK(t.step_fallbacks == t.replays);  // the refusal came before the first recording
}

TEST_CASE("chrome export: a refusal after a raise ends the model's names, not the export") {
  // error_on_dealloc_use raises E1 at action 3; its last action, made to
  // read a tensor nobody made, is refused after that raise.
  std::vector<std::string> lines = recorded(*find_program_scenario("error_on_dealloc_use"));
  REQUIRE(count_lines(lines, "\"event\":\"error\"") > 0);
  std::size_t replaced = 0;
  for (std::string& l : lines) {
    if (l.find("\"type\":\"action\"") != std::string::npos &&
        l.find("\"index\":5,") != std::string::npos) {
      l = l.substr(0, l.find("\"action\":\"")) + "\"action\":\"read\",\"name\":\"nope\"}";
      ++replaced;
    }
  }
  REQUIRE(replaced == 1);
  Result<Json> doc = export_lines(lines);
  REQUIRE_MESSAGE(doc.ok(), doc.error().message);
  CHECK(validate_chrome_trace(*doc).ok());
  CHECK((*doc)["otherData"]["kernel_names"].get<std::string>() ==
        "step k: the model raised, then refused action 5");
}

TEST_CASE("chrome export: bad input is an error naming file and line") {
  std::vector<std::string> lines =
      recorded(*find_program_scenario("rerecord_if_static_input_address_changed"));
  lines.push_back("{\"seq\":999,\"type\":\"event\"}");
  Result<Json> doc = export_lines(lines);
  REQUIRE(!doc.ok());
  CHECK(doc.error().message.starts_with("mem.jsonl:" + std::to_string(lines.size()) + ":"));
}

Json minimal_document() {
  return Json::parse(R"({"traceEvents":[
    {"name":"process_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"dev"}},
    {"name":"record","ph":"X","ts":0,"dur":3,"pid":1,"tid":1,"args":{}},
    {"name":"replay","ph":"X","ts":5,"dur":4,"pid":1,"tid":1,"args":{}},
    {"name":"k","ph":"X","ts":6,"dur":1,"pid":1,"tid":1,"args":{}},
    {"name":"g","cat":"graph","ph":"s","id":7,"ts":1,"pid":1,"tid":1},
    {"name":"g","cat":"graph","ph":"f","bp":"e","id":7,"ts":5.5,"pid":1,"tid":1}
  ],"displayTimeUnit":"ms"})");
}

TEST_CASE("chrome export: the validator refuses broken documents") {
  CHECK(validate_chrome_trace(minimal_document()).ok());

  auto refused = [](const Json& doc, const std::string& needle) {
    const Status s = validate_chrome_trace(doc);
    REQUIRE(!s.ok());
    CAPTURE(s.error().message);
    CHECK(s.error().message.find(needle) != std::string::npos);
  };
  Json d = minimal_document();
  d["traceEvents"][1].erase("dur");
  refused(d, "traceEvents[1]: X event without a non-negative 'dur'");

  d = minimal_document();
  d["traceEvents"][1]["dur"] = -1;
  refused(d, "non-negative 'dur'");

  d = minimal_document();
  d["traceEvents"].erase(5);  // the f side of flow 7
  refused(d, "flow id 7 has no matching f event");

  d = minimal_document();
  d["traceEvents"][5]["id"] = 8;
  refused(d, "has no matching");

  d = minimal_document();
  d["traceEvents"][4]["ts"] = 4;  // between the two slices
  refused(d, "lies inside no X event");

  d = minimal_document();
  d["traceEvents"][3]["dur"] = 10;  // the kernel outlives its replay
  refused(d, "without nesting");

  d = minimal_document();
  d["traceEvents"][0]["name"] = "process_colour";
  refused(d, "unknown metadata");

  d = minimal_document();
  d["traceEvents"][2].erase("ts");
  refused(d, "missing 'ts'");

  refused(Json::array(), "traceEvents array");
}

// The minimal document's events as an export sends them, typed: the flow's
// two ends with the replay they land in, before the replay's kernel.
std::vector<ChromeEvent> minimal_stream() {
  const auto x = [](std::string name, std::uint64_t ts, std::uint64_t dur) {
    return ChromeEvent{.ph = ChromePhase::kComplete,
                       .name = std::move(name),
                       .pid = 1,
                       .tid = 1,
                       .ts = ts,
                       .dur = dur};
  };
  const auto flow = [](ChromePhase ph, std::uint64_t ts) {
    return ChromeEvent{
        .ph = ph, .name = "g", .pid = 1, .tid = 1, .ts = ts, .id = 7, .cat = "graph"};
  };
  return {ChromeEvent{.ph = ChromePhase::kMetadata,
                      .name = "process_name",
                      .pid = 1,
                      .tid = 1,
                      .args = R"({"name":"dev"})"},
          x("record", 0, 3),
          x("replay", 5, 5),
          flow(ChromePhase::kFlowEnd, 6),
          flow(ChromePhase::kFlowStart, 1),
          x("k", 7, 1)};
}

// The events through the streaming check, the recording (the first slice)
// sent as a place where flows start.
Status streamed(const std::vector<ChromeEvent>& events) {
  ChromeTraceChecker checker;
  for (std::size_t i = 0; i < events.size(); ++i) {
    CAPSIM_TRY(checker.add(events[i], i == 1));
  }
  return checker.finish();
}

TEST_CASE("chrome export: the streaming check refuses what the validator refuses") {
  const std::vector<ChromeEvent> good = minimal_stream();
  CHECK(streamed(good).ok());
  {
    // What the writer prints of it is a document the validator accepts.
    std::string text = R"({"traceEvents":[)";
    for (std::size_t i = 0; i < good.size(); ++i) {
      if (i > 0) text += ',';
      append_chrome_event(text, good[i]);
    }
    text += "]}";
    CHECK(validate_chrome_trace(Json::parse(text)).ok());
  }
  auto refused = [](const std::vector<ChromeEvent>& events, const std::string& needle) {
    const Status s = streamed(events);
    REQUIRE(!s.ok());
    CAPTURE(s.error().message);
    CHECK(s.error().message.find(needle) != std::string::npos);
  };
  std::vector<ChromeEvent> broken = good;
  broken[5].dur = 10;  // the kernel outlives its replay
  refused(broken, "without nesting");
  broken = good;
  broken.erase(broken.begin() + 3);  // the f side of flow 7
  refused(broken, "flow id 7 has no matching f event");
  broken = good;
  broken[4].ts = 4;  // the s side between the two slices
  refused(broken, "lies inside no X event");
  broken = good;
  broken[3].ts = 4;  // f before the replay it lands in
  refused(broken, "lies inside no X event");
  broken = good;
  std::swap(broken[1], broken[2]);  // out of time order
  refused(broken, "before the last slice of its thread");
  broken = good;
  broken[4].name = "h";
  refused(broken, "flow id 7: s and f differ in name or cat");
  broken = good;
  broken[4] = broken[3];  // two ends of one kind
  refused(broken, "flow id 7 repeats");
  broken = good;
  broken[0].name = "process_colour";
  refused(broken, "unknown metadata 'process_colour'");
}

// Counts what a sink is sent, as the CLI's writer counts.
class CountingSink : public ChromeEventSink {
 public:
  Status event(const ChromeEvent& event, bool may_start_flows) override {
    CAPSIM_TRY(checker.add(event, may_start_flows));
    ++events;
    kernels += event.replayed_step;
    return {};
  }
  ChromeTraceChecker checker;
  std::size_t events = 0, kernels = 0;
};

TEST_CASE("chrome export: a stream passes its own check and draws a capped replay") {
  const ProgramScenario* s = find_program_scenario("rerecord_if_static_input_address_changed");
  std::vector<std::string> lines = recorded(*s);
  Result<Json> whole = export_lines(lines);
  REQUIRE(whole.ok());
  {
    Result<std::unique_ptr<TraceReader>> reader = test::reader_of(test::join_lines(lines));
    REQUIRE(reader.ok());
    CountingSink sink;
    REQUIRE(stream_chrome_trace(**reader, sink).ok());
    CHECK(sink.checker.finish().ok());
    CHECK(sink.events == (*whole)["traceEvents"].size());
  }
  // A recording that claims 2^20 steps: its replays draw no nested slices
  // (the model's graph has another step count, so they would be "step k").
  for (std::string& l : lines) {
    const std::size_t at = l.find("\"event\":\"record\"");
    if (at == std::string::npos) continue;
    const std::size_t steps = l.find("\"steps\":");
    REQUIRE(steps != std::string::npos);
    const std::size_t end = l.find_first_of(",}", steps);
    l = l.substr(0, steps) + "\"steps\":1048576" + l.substr(end);
  }
  Result<std::unique_ptr<TraceReader>> reader = test::reader_of(test::join_lines(lines));
  REQUIRE(reader.ok());
  CountingSink sink;
  REQUIRE(stream_chrome_trace(**reader, sink).ok());
  CHECK(sink.kernels == 0);
  CHECK(sink.events < 200);
}

}  // namespace
}  // namespace capsim
