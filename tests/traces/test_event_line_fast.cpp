// The trace reader's fast path for event lines (traces/event_line_fast.hpp)
// against its general path: every line of every corpus trace, and lines made
// to be declined, read the same way (the same items, or the same error),
// and the fast path really reads most events.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "tests/traces/trace_test_support.hpp"
#include "traces/scenario_trace.hpp"

namespace capsim {
namespace {

struct Reading {
  std::vector<TraceItem> items;
  std::string error;  // the first error, "" for none
  std::size_t fast = 0;
};

Reading read_all(Result<std::unique_ptr<TraceReader>> opened, bool fast) {
  Reading out;
  if (!opened) {
    out.error = opened.error().message;
    return out;
  }
  TraceReader& r = **opened;
  r.set_fast_events(fast);
  for (;;) {
    Result<std::optional<TraceItem>> item = r.next();
    if (!item) {
      out.error = item.error().message;
      break;
    }
    if (!*item) break;
    out.items.push_back(std::move(**item));
  }
  out.fast = r.fast_events();
  return out;
}

void check_same(const Reading& fast, const Reading& general) {
  CHECK(fast.error == general.error);
  REQUIRE(fast.items.size() == general.items.size());
  for (std::size_t i = 0; i < fast.items.size(); ++i) {
    const TraceItem &a = fast.items[i], &b = general.items[i];
    INFO("line ", b.line, ": ", b.text);
    CHECK(a.line == b.line);
    CHECK(a.type == b.type);
    CHECK(a.text == b.text);
    CHECK(a.event == b.event);
    CHECK(a.action_index == b.action_index);
  }
}

TEST_CASE("fast event lines: every corpus trace reads as through the general path") {
  std::size_t files = 0, events = 0, fast = 0;
  const std::string corpus = std::string(CAPSIM_SOURCE_DIR) + "/traces/corpus";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus)) {
    if (entry.path().extension() != ".jsonl") continue;
    const std::string path = entry.path().string();
    INFO(path);
    const Reading a = read_all(TraceReader::open(path), true);
    const Reading b = read_all(TraceReader::open(path), false);
    check_same(a, b);
    CHECK(b.fast == 0);
    for (const TraceItem& item : b.items) events += item.type == TraceLineType::kEvent;
    fast += a.fast;
    ++files;
  }
  CHECK(files > 100);
  // Most events take the fast path (the rest: digests, lists of lists, x_).
  CHECK(fast * 10 > events * 8);
}

TEST_CASE("fast event lines: lines it must decline read as through the general path") {
  auto lines = trace_scenario(*find_program_scenario("rerecord_if_static_input_address_changed"));
  REQUIRE(lines.ok());
  std::size_t at = 0;  // the first event line
  while (lines->at(at).find("\"type\":\"event\"") == std::string::npos) ++at;
  const std::string event = lines->at(at);
  const std::string head = event.substr(0, event.size() - 1);  // without its closing brace
  for (const std::string& variant : {
           head + ",\"x_note\":[[[1]]]}",            // an extension: skipped whatever it holds
           head + ",\"x_note\":1,\"x_note\":2}",     // a repeated key
           head + ",\"bogus\":1}",                   // an unknown field
           head + ",\"fid\":1.0}",                   // an integer written as a float
           head + ",\"fid\":18446744073709551615}",  // past int64
           head + ",\"fid\":-1}",                    // below the field's range
           std::string("{\"type\":\"event\",") + event.substr(1),  // type given twice
           event.substr(0, event.find("\"seq\":") + 6) + "99" +
               event.substr(event.find(",\"type\"")),  // seq out of order
           event + " ",                                // trailing white space
           event + " x",                               // trailing garbage
       }) {
    INFO(variant);
    std::vector<std::string> edited = *lines;
    edited.at(at) = variant;
    const std::string text = test::join_lines(edited);
    check_same(read_all(test::reader_of(text), true), read_all(test::reader_of(text), false));
  }
}

}  // namespace
}  // namespace capsim
