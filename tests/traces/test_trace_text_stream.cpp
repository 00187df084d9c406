// traces/format/trace_text_stream.hpp: a run read back as a trace's text, a
// line at a time, gives the bytes trace_lines gives, for every corpus trace
// (read, then streamed back) and for events out of order the same error.
#include <doctest/doctest.h>

#include <filesystem>
#include <iterator>
#include <string>

#include "traces/format/trace_reader.hpp"
#include "traces/format/trace_text_stream.hpp"

namespace capsim {
namespace {

struct Read {
  TraceHeader header;
  Program program;
  std::vector<Event> events;
};

Read read_trace(const std::string& path) {
  Read r;
  std::unique_ptr<TraceReader> reader = TraceReader::open(path).value();
  r.header = reader->header();
  while (std::optional<TraceItem> item = reader->next().value()) {
    if (item->type == TraceLineType::kFunction) r.program.functions.push_back(item->function);
    if (item->type == TraceLineType::kAction) r.program.actions.push_back(item->action);
    if (item->type == TraceLineType::kEvent) r.events.push_back(item->event);
  }
  return r;
}

TEST_CASE("trace text stream: the bytes of trace_lines, a line at a time") {
  std::size_t traces = 0;
  const std::string corpus = std::string(CAPSIM_SOURCE_DIR) + "/data/corpus";
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    if (entry.path().extension() != ".jsonl") continue;
    INFO(entry.path().string());
    const Read r = read_trace(entry.path().string());
    const Result<std::vector<std::string>> lines = trace_lines(r.header, r.program, r.events);
    REQUIRE(lines.ok());
    std::string expected;
    for (const std::string& l : *lines) expected += l + "\n";
    TraceTextStream stream(r.header, r.program, r.events);
    const std::string got(std::istreambuf_iterator<char>(stream), {});
    CHECK(got == expected);
    CHECK(stream.status().ok());
    ++traces;
  }
  CHECK(traces > 40);
}

TEST_CASE("trace text stream: events out of action order end it with trace_lines's error") {
  Read r = read_trace(std::string(CAPSIM_SOURCE_DIR) + "/data/corpus/run_simple.jsonl");
  REQUIRE(r.events.size() > 1);
  std::swap(r.events.front(), r.events.back());
  TraceTextStream stream(r.header, r.program, r.events);
  const std::string got(std::istreambuf_iterator<char>(stream), {});
  REQUIRE_FALSE(stream.status().ok());
  CHECK(stream.status().error().message ==
        trace_lines(r.header, r.program, r.events).error().message);
}

}  // namespace
}  // namespace capsim
