// Replay of a real run's trace (producer "pytorch"): addresses compare by
// their order of first appearance, and only the fields a recorded event has
// are compared. Checked on capsim's own corpus traces dressed as real runs:
// every pointer moved to another address space, capsim-only fields dropped.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "tests/traces/trace_test_support.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/simulation/event_compare.hpp"

namespace capsim {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(CAPSIM_SOURCE_DIR) / "data/corpus";

// A real GPU's pointers: another base and every allocation 256 bytes apart
// more, so that neither the values nor the differences match capsim's.
std::uint64_t moved(std::uint64_t a) {
  return 0x7f3a00000000ULL + (a - 0x7f0000000000ULL) * 2 + 0x100;
}

std::string move_hex(const std::string& s) {
  return fmt::format("{:#x}", moved(std::stoull(s.substr(2), nullptr, 16)));
}

std::string move_decimal(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end - i >= 10) {
      out += std::to_string(moved(std::stoull(text.substr(i, end - i))));
      i = end;
    } else if (end > i) {
      out += text.substr(i, end - i);
      i = end;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The trace of `file` as a recorder of a real run would write it.
std::string as_real_run(const std::string& file,
                        const std::function<void(Json&)>& edit_event = nullptr,
                        bool drop_steps = true) {
  std::ifstream in(kCorpus / file);
  std::string text;
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line);
    if (j["type"] == "header") j["producer"] = "pytorch";
    if (j["type"] == "event") {
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it->is_string() && it->get<std::string>().rfind("0x", 0) == 0) {
          *it = move_hex(it->get<std::string>());
        } else if (it->is_array()) {
          for (auto& e : *it) {
            if (e.is_string() && e.get<std::string>().rfind("0x", 0) == 0) {
              e = move_hex(e.get<std::string>());
            }
          }
        } else if (it.key() == "message") {
          *it = move_decimal(it->get<std::string>());
        }
      }
      if (drop_steps) j.erase("steps");  // capsim's own count: a real run cannot observe it
      if (edit_event) edit_event(j);
    }
    text += j.dump() + "\n";
  }
  return text;
}

TEST_CASE("address order: ordinals by first appearance, in hex and in messages") {
  AddressOrder order;
  CHECK(order.ordinal(0x7f00) == "#0");
  CHECK(order.ordinal(0x7f10) == "#1");
  CHECK(order.ordinal(0x7f00) == "#0");
  CHECK(order.translate_decimal("changed from 139637976727552 to 32512, input 3") ==
        "changed from #2 to 32512, input 3");
  CHECK(order.ordinal(0x7f10) == "#1");
}

TEST_CASE("real-run replay: moved pointers and missing capsim fields still match") {
  for (const char* file :
       {"rerecord_if_static_input_address_changed.jsonl", "unstable_ptr.jsonl",
        "fallback_to_eager_if_recompiling_too_many_times.jsonl", "forward_backward.jsonl"}) {
    CAPTURE(file);
    const auto report = test::replay_text(as_real_run(file));
    REQUIRE_MESSAGE(report.ok(), report.error().message);
    const std::string why = report->divergence ? report->divergence->recorded : "";
    INFO(why);
    CHECK(!report->divergence);
    CHECK(report->events_matched > 0);
  }
}

TEST_CASE("real-run replay: negative controls, a pointer that should repeat is new") {
  // The first replay of graph 0 finds a static pointer never seen before: a
  // re-record was due, so the model (which replays) must disagree.
  bool edited = false;
  const std::string text =
      as_real_run("rerecord_if_static_input_address_changed.jsonl", [&](Json& j) {
        if (!edited && j["event"] == "replay" && j.contains("static_ptrs") &&
            !j["static_ptrs"].empty()) {
          j["static_ptrs"][0] = "0x1230000";
          edited = true;
        }
      });
  REQUIRE(edited);
  const auto report = test::replay_text(text);
  REQUIRE(report.ok());
  REQUIRE(report->divergence);
  CHECK(report->divergence->field == "static_ptrs");
  // The same moved pointers without translation (a capsim producer) diverge.
  std::string as_model =
      as_real_run("rerecord_if_static_input_address_changed.jsonl", nullptr, false);
  as_model.replace(as_model.find("\"pytorch\""), 9, "\"capsim\"");
  const auto strict = test::replay_text(as_model);
  REQUIRE(strict.ok());
  REQUIRE(strict->divergence);
  CHECK(strict->divergence->field == "static_ptrs");
}

}  // namespace
}  // namespace capsim
