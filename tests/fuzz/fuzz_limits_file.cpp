// Fuzz target for `capsim expect --limits FILE` (libFuzzer's entry point): the
// bytes are a limits file, read by the reader the CLI uses
// (cli/expect_limits.hpp, toml++ underneath), then checked against a small
// run of one compiled function 'f'. Cross-checks: nothing throws out of the
// reader; a refusal is one line of valid UTF-8 naming the file; every limit
// read names where it was given (one line) and holds a count of at most
// 2^63-1; at most kMaxLimits are read; and checking them against the run
// either refuses with one line (a function the run lacks) or gives one
// check per limit, each figure within what the run holds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/expect_limits.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

constexpr const char* kTarget = "fuzz_limits_file";

// One call of 'f' that recorded, and one error: a figure for every kind.
capsim::ObservedRun small_run() {
  using namespace capsim;
  ObservedRun run;
  FunctionDef f;
  f.name = "f";
  run.functions.push_back(f);
  Call call;
  call.function = "f";
  run.actions.push_back(call);
  Event record;
  record.kind = EventKind::kRecord;
  record.action = 0;
  record.fields = {{F::function, FieldValue(std::string("f"))},
                   {F::reason, FieldValue(std::string("no_child"))}};
  Event error;
  error.kind = EventKind::kError;
  error.action = 0;
  run.events = {record, error};
  run.event_lines = {0, 0};
  run.event_messages = {"", ""};
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  capsim::Result<std::vector<capsim::Limit>> limits =
      capsim::cli::read_limits_text(text, "fuzz.toml");
  if (!limits) {
    capsim::fuzz::check_message(kTarget, limits.error());
    if (!limits.error().message.starts_with("fuzz.toml")) {
      capsim::fuzz::fail(kTarget, "a refusal that does not name the file");
    }
    return 0;
  }
  if (limits->size() > capsim::kMaxLimits) capsim::fuzz::fail(kTarget, "more limits than allowed");
  for (const capsim::Limit& l : *limits) {
    capsim::fuzz::check_message(kTarget, capsim::make_error(l.given_at));
    if (l.max > static_cast<std::uint64_t>(INT64_MAX))
      capsim::fuzz::fail(kTarget, "a count past 2^63-1");
  }
  static const capsim::ObservedRun run = small_run();
  const capsim::Result<std::vector<capsim::LimitCheck>> checks = capsim::check_limits(run, *limits);
  if (!checks) {
    capsim::fuzz::check_message(kTarget, checks.error());
    return 0;
  }
  if (checks->size() != limits->size()) capsim::fuzz::fail(kTarget, "a check per limit");
  for (const capsim::LimitCheck& c : *checks) {
    if (c.figure.saturated || c.figure.value > run.events.size()) {
      capsim::fuzz::fail(kTarget, "a figure past what the run holds");
    }
    (void)capsim::limit_check_line(c);
    (void)capsim::printable_json(capsim::limit_check_json(c));
  }
  return 0;
}
