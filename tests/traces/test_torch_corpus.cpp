// The corpus of real PyTorch traces (data/corpus/torch/RELEASE/, recorded
// by recorder/ on each release): every trace replays, node for node unless
// it opts into the structural comparison, and its first divergence is exactly
// the one docs/fidelity.md lists for it ("none" for most). The list is read
// from the document itself, so that fixing a difference in capsim fails this
// test until the document says so too, and a new trace needs a line there.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tests/traces/trace_test_support.hpp"
#include "traces/simulation/run_program.hpp"

namespace capsim {
namespace {

const std::filesystem::path kSource(CAPSIM_SOURCE_DIR);
const std::filesystem::path kTorchCorpus = kSource / "data/corpus/torch";

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The ```expected-divergences block of docs/fidelity.md: per trace
// ("RELEASE/FILE"), "none" or "LINE FIELD" (the first divergence replay
// reports), after "structural " for a trace compared structurally.
std::map<std::string, std::string> expected_divergences() {
  std::istringstream doc(read_file(kSource / "docs/fidelity.md"));
  std::map<std::string, std::string> out;
  bool inside = false;
  for (std::string line; std::getline(doc, line);) {
    if (line == "```expected-divergences") {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line == "```") break;
    const std::size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

// "RELEASE/FILE" for every trace of every release folder.
std::set<std::string> corpus_files() {
  std::set<std::string> found;
  if (!std::filesystem::exists(kTorchCorpus)) return found;
  for (const auto& release : std::filesystem::directory_iterator(kTorchCorpus)) {
    if (!release.is_directory()) continue;
    for (const auto& entry : std::filesystem::directory_iterator(release.path())) {
      if (entry.path().extension() != ".jsonl") continue;
      found.insert(release.path().filename().string() + "/" + entry.path().filename().string());
    }
  }
  return found;
}

Result<ResimulationReport> replay(const std::string& text, bool structural) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, test::reader_of(text));
  ResimulationOptions options;
  options.structural = structural;
  return resimulate_trace(*reader, options);
}

TEST_CASE("torch corpus: docs/fidelity.md lists exactly the traces of data/corpus/torch") {
  const auto expected = expected_divergences();
  std::set<std::string> listed;
  for (const auto& [file, what] : expected) listed.insert(file);
  CHECK(!listed.empty());
  CHECK(listed == corpus_files());
}

TEST_CASE("torch corpus: every trace replays with exactly the divergences docs/fidelity.md lists") {
  const auto expected = expected_divergences();
  for (const std::string& file : corpus_files()) {
    CAPTURE(file);
    const std::string text = read_file(kTorchCorpus / file);
    const auto it = expected.find(file);
    REQUIRE(it != expected.end());
    const bool structural = it->second.starts_with("structural ");
    const auto report = replay(text, structural);
    REQUIRE_MESSAGE(report.ok(), report.error().message);
    std::string got = "none";
    if (report->divergence) {
      got = fmt::format("{} {}", report->divergence->line, report->divergence->field);
    }
    if (structural) got = "structural " + got;
    const std::string recorded = report->divergence ? report->divergence->recorded : "";
    const std::string predicted = report->divergence ? report->divergence->predicted : "";
    INFO("recorded: ", recorded, "\npredicted: ", predicted);
    CHECK(got == it->second);
    CHECK(report->violations.empty());
    CHECK(report->header.producer == "pytorch");
  }
}

TEST_CASE("torch corpus: every release folder holds the same programs, each recorded by it") {
  std::map<std::string, std::set<std::string>> by_release;
  for (const std::string& file : corpus_files()) {
    const std::size_t slash = file.find('/');
    by_release[file.substr(0, slash)].insert(file.substr(slash + 1));
    const std::string text = read_file(kTorchCorpus / file);
    // The header names the release the folder is named after.
    CHECK(text.find(fmt::format("\"x_torch_version\":\"{}", file.substr(0, slash))) !=
          std::string::npos);
  }
  REQUIRE(by_release.size() >= 3);
  for (const auto& [release, files] : by_release) {
    CAPTURE(release);
    CHECK(files == by_release.begin()->second);
  }
}

// hooks.jsonl of the release the recorder pins (recorder/requirements.txt).
std::string hooks_trace() {
  return read_file(kTorchCorpus / "2.11.0/hooks.jsonl");
}

TEST_CASE("torch corpus: negative control, one node's argument changed diverges at that node") {
  std::string text = hooks_trace();
  // The first validate_outputs of the first capture, its root grad's
  // metadata said to be a subclass: the same calls, another graph.
  const std::string from = "[], False, 6)])\"";
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), "[], True, 6)])\"");
  const auto report = replay(text, false);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  REQUIRE(report->divergence);
  CHECK(report->divergence->field.starts_with("fx_nodes["));
  CHECK(report->divergence->line == 4);
  CHECK(report->divergence->detail.find("True, 6)]) | predicted") != std::string::npos);
  // Structurally the graph is the same: the fallback cannot see it.
  const auto structural = replay(text, true);
  REQUIRE_MESSAGE(structural.ok(), structural.error().message);
  CHECK(!structural->divergence);
}

// Collects, per compiled backward, capsim's cache-miss text and PyTorch's
// (the recorded x_message).
struct MissTexts : RunObserver {
  std::vector<std::string> predicted, recorded;
  Status after_action(const TraceItem&, World&, std::vector<Event>& events) override {
    for (const Event& e : events) {
      if (e.kind == EventKind::kCaCacheMiss) predicted.push_back(e.get<std::string>(F::message));
    }
    return {};
  }
};

TEST_CASE("torch corpus: capsim's changed-shapes miss text is PyTorch's, word for word") {
  // The x_message extension rides along uncompared by replay; the one text
  // whose numbers capsim's model fixes (which sizes[j] became dynamic) is
  // checked here: static_shapes' recapture on each release.
  for (const char* release : {"2.8.0", "2.11.0", "2.15.0"}) {
    CAPTURE(release);
    const std::string text = read_file(kTorchCorpus / release / "static_shapes.jsonl");
    const std::string key = "\"x_message\":\"Cache miss due to ";
    std::vector<std::string> recorded;
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
      const std::size_t begin = at + key.size() - std::string("Cache miss due to ").size();
      recorded.push_back(text.substr(begin, text.find('"', begin) - begin));
    }
    auto reader = test::reader_of(text);
    REQUIRE(reader.ok());
    MissTexts visitor;
    Result<WorldOptions> options = replay_world_options((*reader)->header(), {});
    REQUIRE(options.ok());
    TraceSource source(**reader);
    REQUIRE(run_program(source, *options, OnRaise::kKeepGoing, visitor).ok());
    REQUIRE(recorded.size() == 2);
    REQUIRE(visitor.predicted.size() == 2);
    CHECK(recorded[1].find("changed tensor shapes") != std::string::npos);
    CHECK(visitor.predicted[1] == recorded[1]);
  }
}

TEST_CASE("torch corpus: negative control, structurally a graph with its dataflow cut diverges") {
  // Every call of hooks.jsonl's first capture made to use nothing: the same
  // calls in the same order, but not the graph capsim predicts.
  std::string text = hooks_trace();
  const std::size_t at = text.find("\"uses\":[[");
  REQUIRE(at != std::string::npos);
  const std::size_t end = text.find("]]", at);
  std::string cut = "\"uses\":[";
  const std::string old = text.substr(at, end + 2 - at);
  std::size_t entries = 0;  // one '[' per call after the outer one
  for (std::size_t i = cut.size(); i < old.size(); ++i) entries += old[i] == '[' ? 1 : 0;
  for (std::size_t i = 0; i < entries; ++i) cut += i == 0 ? "[]" : ",[]";
  text.replace(at, old.size(), cut + "]");
  const auto report = replay(text, true);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  REQUIRE(report->divergence);
  CHECK(report->divergence->field == "uses");
  CHECK(report->divergence->line == 4);
  // Node for node, `uses` is not compared: the nodes still match.
  const auto by_nodes = replay(text, false);
  REQUIRE_MESSAGE(by_nodes.ok(), by_nodes.error().message);
  CHECK(!by_nodes->divergence);
}

TEST_CASE("torch corpus: a malformed recorder output is refused with file, line and field") {
  const std::set<std::string> files = corpus_files();
  REQUIRE(!files.empty());
  const std::string text = read_file(kTorchCorpus / *files.begin());
  // A node without its kind: the recorder must write one for every node.
  const std::size_t at = text.find(",\"kind\":\"");
  REQUIRE(at != std::string::npos);
  const std::size_t end = text.find('"', at + 9);
  std::string broken = text;
  broken.erase(at, end + 1 - at);
  const std::string error = test::read_error(broken);
  CHECK(error.find("field 'nodes[") != std::string::npos);
  CHECK(error.find("kind") != std::string::npos);
}

}  // namespace
}  // namespace capsim
