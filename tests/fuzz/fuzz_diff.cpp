// Fuzz target for `capsim diff` (libFuzzer's entry point): the bytes are a
// trace; its recorded tree is diffed against capsim's prediction (`diff
// --predicted`), and each graph against the next of the list (`diff
// T#A T#B`), merged and written as DOT, with and without --changes-only.
// Cross-check: a graph diffed with itself is identical.
#include <cstddef>
#include <cstdint>

#include "render/dot_writer.hpp"
#include "render/graph_diff.hpp"
#include "render/trace_graphs.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

constexpr const char* kTarget = "fuzz_diff";
// Pairs diffed per input: each diff is quadratic in the worst case, and a
// few pairs reach every path of the matcher.
constexpr std::size_t kMaxPairs = 8;

void write_diff(const capsim::DrawGraph& a, const capsim::DrawGraph& b) {
  const capsim::GraphDiff diff = capsim::diff_graphs(a, b);
  const capsim::DrawGraph merged = capsim::merge_diff(a, b, diff);
  (void)capsim::to_dot(merged);
  (void)capsim::to_dot(capsim::changes_only(merged));
  (void)capsim::diff_summary(diff.counts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::unique_ptr<capsim::TraceReader> reader =
      capsim::fuzz::open_checked(kTarget, data, size);
  if (!reader) return 0;
  const capsim::Result<capsim::TraceGraphs> graphs =
      capsim::collect_trace_graphs(*reader, {}, capsim::fuzz::kFuzzMemoryBudget);
  if (!graphs) {
    capsim::fuzz::check_message(kTarget, graphs.error());
    return 0;
  }
  const capsim::Result<capsim::TreeAgainstPrediction> trees =
      capsim::tree_against_prediction(*graphs);
  if (!trees) {
    capsim::fuzz::check_message(kTarget, trees.error());
  } else {
    write_diff(trees->recorded, trees->predicted);
  }
  const std::vector<std::string> names = graphs->names();
  for (std::size_t i = 0; i < names.size() && i < kMaxPairs; ++i) {
    const capsim::DrawGraph& a = graphs->graphs.at(names[i]);
    if (!capsim::diff_graphs(a, a).counts.identical()) {
      capsim::fuzz::fail(kTarget, "a graph differs from itself");
    }
    if (i + 1 < names.size()) write_diff(a, graphs->graphs.at(names[i + 1]));
  }
  return 0;
}
