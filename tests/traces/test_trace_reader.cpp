// The trace reader and writer on bad input: each malformed trace gives one
// precise error naming file, line and column (the CLI turns it into exit
// code 2); a cut last line gives a warning and the valid prefix. Also the
// replay verdicts on small hand-made divergences.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <streambuf>

#include "tests/traces/trace_test_support.hpp"
#include "traces/format/trace_writer.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim {
namespace {

std::vector<std::string> base_lines() {
  auto lines = trace_scenario(*find_program_scenario("rerecord_if_static_input_address_changed"));
  REQUIRE(lines.ok());
  return *lines;
}

std::string with_line(std::vector<std::string> lines, std::size_t index, std::string text) {
  lines.at(index) = std::move(text);
  return test::join_lines(lines);
}

// A stream of one enormous line, generated as it is read (never stored).
class EndlessLine : public std::streambuf {
 public:
  explicit EndlessLine(std::size_t bytes) : left_(bytes) {}

 protected:
  int_type underflow() override {
    if (left_ == 0) return traits_type::eof();
    const std::size_t n = std::min(left_, sizeof(chunk_));
    std::fill(chunk_, chunk_ + n, 'x');
    if (first_) {
      const char head[] = "{\"seq\":0,\"x_pad\":\"";
      std::copy(head, head + sizeof(head) - 1, chunk_);
      first_ = false;
    }
    left_ -= n;
    setg(chunk_, chunk_, chunk_ + n);
    return traits_type::to_int_type(chunk_[0]);
  }

 private:
  std::size_t left_;
  bool first_ = true;
  char chunk_[1 << 16];
};

TEST_CASE("trace reader: a recorded trace reads line by line") {
  const std::vector<std::string> lines = base_lines();
  CHECK(test::read_error(test::join_lines(lines)) == "");
}

TEST_CASE("trace reader: a missing header") {
  std::vector<std::string> lines = base_lines();
  lines.erase(lines.begin());
  CHECK(
      test::read_error(test::join_lines(lines)) ==
      "mem.jsonl:1:1: missing header: the first line must be {\"seq\":0,\"type\":\"header\",...}");
  CHECK(test::read_error("") == "mem.jsonl:1:1: empty file: no header line");
}

TEST_CASE("trace reader: version 2 is refused") {
  std::vector<std::string> lines = base_lines();
  const std::size_t at = lines[0].find("\"version\":1");
  REQUIRE(at != std::string::npos);
  lines[0].replace(at, 11, "\"version\":2");
  CHECK(test::read_error(test::join_lines(lines)) ==
        "mem.jsonl:1:" + std::to_string(at + 1) +
            ": field 'version': unsupported version 2 (this capsim reads version 1)");
}

TEST_CASE("trace reader: an error says its kind and its field without being parsed") {
  std::vector<std::string> lines = base_lines();
  std::string version = lines[0];
  version.replace(version.find("\"version\":1"), 11, "\"version\":2");
  const std::optional<Error> newer = test::read_failure(with_line(lines, 0, version));
  REQUIRE(newer.has_value());
  CHECK(newer->kind == ErrorKind::unsupported);
  CHECK(newer->field == "version");

  std::string index = lines[2];
  index.replace(index.find("\"index\":0"), 9, "\"index\":-1");
  const std::optional<Error> negative = test::read_failure(with_line(lines, 2, index));
  REQUIRE(negative.has_value());
  CHECK(negative->kind == ErrorKind::bad_trace);
  CHECK(negative->field == "index");
  CHECK(negative->message.starts_with("mem.jsonl:3:" + std::to_string(index.find("\"index\"") + 1) +
                                      ": field 'index': "));

  const std::optional<Error> json = test::read_failure(with_line(lines, 2, "{\"seq\":2,"));
  REQUIRE(json.has_value());
  CHECK(json->kind == ErrorKind::bad_trace);
  CHECK(json->field.empty());
  CHECK(error_kind_name(json->kind) == "bad trace");
}

TEST_CASE("trace reader: a duplicate sequence number") {
  std::vector<std::string> lines = base_lines();
  const std::string dup =
      "{\"seq\":1,\"type\":\"action\"" + lines[2].substr(lines[2].find(",\"index\""));
  CHECK(test::read_error(with_line(lines, 2, dup)) ==
        "mem.jsonl:3:2: field 'seq': sequence number 1 repeats or goes back (expected 2)");
}

TEST_CASE("trace reader: an unknown event kind") {
  std::vector<std::string> lines = base_lines();
  // Line 8 is the first event (compile).
  std::string line = lines[7];
  REQUIRE(line.find("\"event\":\"compile\"") != std::string::npos);
  line.replace(line.find("\"compile\""), 9, "\"teleport\"");
  CHECK(test::read_error(with_line(lines, 7, line)) ==
        "mem.jsonl:8:36: field 'event': unknown event kind 'teleport'");
}

TEST_CASE("trace reader: unknown fields are refused, x_ extensions ignored") {
  std::vector<std::string> lines = base_lines();
  std::string line = lines[7];
  line.insert(line.size() - 1, ",\"colour\":\"red\"");
  CHECK(test::read_error(with_line(lines, 7, line))
            .starts_with("mem.jsonl:8:" + std::to_string(line.find("\"colour\"") + 1) +
                         ": field 'colour': unknown field for event 'compile'"));
  std::string ext = lines[7];
  ext.insert(ext.size() - 1, ",\"x_host\":\"gpu-7\"");
  CHECK(test::read_error(with_line(lines, 7, ext)) == "");
}

TEST_CASE("trace reader: a huge number") {
  std::vector<std::string> lines = base_lines();
  std::string line = lines[2];
  line.replace(line.find("\"index\":0"), 9, "\"index\":123456789012345678901234567890");
  CHECK(test::read_error(with_line(lines, 2, line)) ==
        "mem.jsonl:3:" + std::to_string(line.find("\"index\"") + 1) +
            ": field 'index': integer out of range (more than 2^63-1)");
  std::string overflow = lines[2];
  overflow.replace(overflow.find("\"index\":0"), 9, "\"index\":1e999");
  // The column of the literal, and nlohmann's text without its tag.
  CHECK(test::read_error(with_line(lines, 2, overflow)) ==
        "mem.jsonl:3:" + std::to_string(overflow.find("1e999") + 1) +
            ": invalid JSON: number overflow parsing '1e999'");
  std::string below = lines[2];
  below.replace(below.find("\"index\":0"), 9, "\"index\":-9223372036854775809");
  CHECK(test::read_error(with_line(lines, 2, below))
            .ends_with(": field 'index': integer out of range (less than -2^63)"));
  std::string fraction = lines[2];
  fraction.replace(fraction.find("\"index\":0"), 9, "\"index\":0.0");
  CHECK(test::read_error(with_line(lines, 2, fraction))
            .ends_with(
                ": field 'index': expected an integer, got a number with a fraction or exponent"));
}

TEST_CASE("trace reader: a repeated key") {
  std::vector<std::string> lines = base_lines();
  std::string line = lines[2];
  line.replace(line.find("\"index\":0"), 9, "\"index\":0,\"index\":0");
  const std::size_t second = line.find("\"index\"", line.find("\"index\"") + 1);
  CHECK(test::read_error(with_line(lines, 2, line)) ==
        "mem.jsonl:3:" + std::to_string(second + 1) +
            ": invalid JSON: duplicate key \"index\" in one object");
}

TEST_CASE("trace reader: a field past its limit") {
  std::vector<std::string> lines = base_lines();
  std::size_t warmup = 0;
  while (lines.at(warmup).find("\"depth\":0") == std::string::npos) ++warmup;
  std::string line = lines[warmup];
  line.replace(line.find("\"depth\":0"), 9, "\"depth\":2147483648");
  CHECK(test::read_error(with_line(lines, warmup, line)) ==
        fmt::format("mem.jsonl:{}:{}: field 'depth': 2147483648 is above the limit of 65536 "
                    "(docs/trace-format.md §8)",
                    warmup + 1, line.find("\"depth\"") + 1));
  line = lines[warmup];
  line.replace(line.find("\"depth\":0"), 9, "\"depth\":-1");
  CHECK(test::read_error(with_line(lines, warmup, line))
            .ends_with(": field 'depth': -1 is below the limit of 0 (docs/trace-format.md §8)"));
}

TEST_CASE("trace reader: invalid UTF-8") {
  std::vector<std::string> lines = base_lines();
  std::string line = lines[2];
  line.replace(line.find("\"weight\""), 8, "\"w\xff\xfeight\"");
  const std::string error = test::read_error(with_line(lines, 2, line));
  CHECK(error.starts_with("mem.jsonl:3:"));
  CHECK(error.find("invalid JSON") != std::string::npos);
  CHECK(error.find("UTF-8") != std::string::npos);
}

TEST_CASE("trace reader: a 100 MB single line stops at the line limit") {
  EndlessLine source(std::size_t{100} << 20);
  auto in = std::make_unique<std::istream>(&source);
  auto reader = TraceReader::open(std::move(in), "big.jsonl");
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().message ==
        "big.jsonl:1:1048577: line longer than the limit of 1048576 bytes");
}

TEST_CASE("trace reader: deep nesting is refused before parsing") {
  std::vector<std::string> lines = base_lines();
  std::string line = lines[2];
  line.insert(line.size() - 1, ",\"x_deep\":" + std::string(1000, '[') + std::string(1000, ']'));
  CHECK(test::read_error(with_line(lines, 2, line)) ==
        "mem.jsonl:3:1: nesting deeper than 32 levels");
}

TEST_CASE("trace reader: a cut last line warns and the prefix replays") {
  const std::vector<std::string> lines = base_lines();
  std::string text = test::join_lines(lines);
  text.resize(text.size() - lines.back().size() / 2 - 1);  // cut, no newline
  auto report = test::replay_text(text);
  REQUIRE(report.ok());
  REQUIRE(report->warnings.size() == 1);
  CHECK(report->warnings[0] == "mem.jsonl:" + std::to_string(lines.size()) +
                                   ":1: warning: the last line is truncated (" +
                                   std::to_string(lines.back().size() - lines.back().size() / 2) +
                                   " bytes, no newline); replaying the " +
                                   std::to_string(lines.size() - 1) + " lines before it");
  CHECK(report->ok());
  CHECK(report->events_matched == report->events_recorded);
}

TEST_CASE("replay: an event the model does not predict, and one it predicts that is missing") {
  std::vector<std::string> lines = base_lines();
  // Drop the warmup event (line 9): the model predicts it, the trace lacks it.
  REQUIRE(lines[8].find("\"event\":\"warmup\"") != std::string::npos);
  std::vector<std::string> missing = lines;
  missing.erase(missing.begin() + 8);
  for (std::size_t i = 8; i < missing.size(); ++i) {
    const std::size_t comma = missing[i].find(',');
    missing[i] = "{\"seq\":" + std::to_string(i) + missing[i].substr(comma);
  }
  auto report = test::replay_text(test::join_lines(missing));
  REQUIRE(report.ok());
  REQUIRE(report->divergence.has_value());
  CHECK(report->divergence->line == 9);  // the next action line
  CHECK(report->divergence->recorded == "");
  CHECK(report->divergence->predicted.find("\"event\":\"warmup\"") != std::string::npos);
  CHECK(report_summary(*report).starts_with(
      "mem.jsonl:9: diverged: the model predicts an event the trace does not have"));
}

TEST_CASE("replay: context holds the last matching lines") {
  std::vector<std::string> lines = base_lines();
  std::string line = lines[18];
  REQUIRE(line.find("\"copies\":1") != std::string::npos);
  line.replace(line.find("\"copies\":1"), 10, "\"copies\":5");
  auto report = test::replay_text(with_line(lines, 18, line), 2);
  REQUIRE(report.ok());
  REQUIRE(report->divergence.has_value());
  CHECK(report->divergence->line == 19);
  CHECK(report->divergence->field == "copies");
  REQUIRE(report->divergence->context.size() == 2);
  CHECK(report->divergence->context[1].starts_with("18: "));
  REQUIRE(report->violations.size() == 1);
  CHECK(report->violations[0].invariant == "copies_non_static_only");
}

TEST_CASE("trace writer: the file appears only complete; an abandoned write leaves nothing") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "capsim_writer_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.jsonl").string();
  {
    auto w = TraceFileWriter::create(path);
    REQUIRE(w.ok());
    REQUIRE((*w)->write_line("{\"seq\":0}").ok());
    CHECK_FALSE(std::filesystem::exists(path));
    // Flushed line by line: a killed recorder leaves this prefix.
    CHECK(std::filesystem::file_size((*w)->temporary_path()) == 10);
  }
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  REQUIRE(write_trace_file(path, {"{\"seq\":0}", "{\"seq\":1}"}).ok());
  CHECK(std::filesystem::file_size(path) == 20);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  CHECK_FALSE(write_trace_file((dir / "no/such/dir/t.jsonl").string(), {"x"}).ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("replay: what the recorder left out keeps a matching trace from a plain ok") {
  std::vector<std::string> lines = base_lines();
  const std::string plain = report_summary(*test::replay_text(test::join_lines(lines)));
  CHECK(plain.find("incomplete") == std::string::npos);
  std::string header = lines[0];
  REQUIRE(header.back() == '}');
  header.pop_back();
  header +=
      R"(,"x_untranslated":["aten.exp.default","aten.sigmoid.default"],"x_notes":["backward 0: left out",7]})";
  auto report = test::replay_text(with_line(lines, 0, header));
  REQUIRE(report.ok());
  CHECK(report->ok());
  const std::string summary = report_summary(*report);
  CHECK(summary.find("; incomplete: graphs left out over 2 untranslated ops (aten.exp.default, "
                     "...); 1 recorder note (x_notes): backward 0: left out") != std::string::npos);
  const Json j = report_to_json(*report);
  CHECK(j["complete"] == false);
  CHECK(j["untranslated"].size() == 2);
  CHECK(j["recorder_notes"].size() == 1);  // the 7 is not a string: ignored
}

TEST_CASE("printable_block keeps a message's lines, each indented, and escapes the rest") {
  CHECK(printable_block("one", "  ") == "one");
  CHECK(printable_block("a\nb\n", "    ") == "a\n    b\n    ");
  // No byte of the input starts a line; a control byte is still \xNN.
  CHECK(printable_block("x\nok 0 <= 0\x1b]0;t\x07\r", "  ") ==
        "x\n  ok 0 <= 0\\x1b]0;t\\x07\\x0d");
  CHECK(printable_block(std::string("\xff\n", 2), " ") == "\\xff\n ");
}

}  // namespace
}  // namespace capsim
