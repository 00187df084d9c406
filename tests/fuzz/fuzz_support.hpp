// What the fuzz targets share: reading a trace from the fuzzer's bytes, and
// the checks every outcome must pass.
//
// Each target (fuzz_trace_reader, fuzz_render, fuzz_diff, fuzz_export) is
// one subcommand's path from bytes to what it would print or write, with no
// file and no Graphviz layout. Bad input must come back as an Error whose
// message is one line of valid UTF-8 (the CLI prints it as one line, and
// `--json` would throw on anything else); a broken cross-check aborts, which
// libFuzzer and capsim_fuzz_replay's driver report as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "model/result.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::fuzz {

// The simulated device memory each input may ask for (the CLI's default is
// 1 GiB). The work an input costs grows with its tensors: every kernel and
// every read touches each element, and under ASan an element of a replayed
// trace costs about 3 us (docs/reliability.md). At 256 MiB one 3 KB input
// (a 16M-element tensor through warmup, recording and replay) ran 49 s and
// tripped libFuzzer's -timeout=10, slow but not hung; the campaign wants
// inputs in milliseconds, and a bug needs no big tensor to show. 4 MiB keeps
// the budget's refusal path in reach (a size change is enough) and the
// worst single tensor near a second; it also keeps -rss_limit_mb=2048 a real
// alarm for leaks.
inline constexpr std::uint64_t kFuzzMemoryBudget = std::uint64_t{4} << 20;

inline Result<std::unique_ptr<TraceReader>> open_over(const std::string& bytes) {
  return TraceReader::open(std::make_unique<std::istringstream>(bytes), "fuzz.jsonl");
}

[[noreturn]] inline void fail(const char* target, const char* what) {
  std::fprintf(stderr, "%s: %s\n", target, what);
  std::abort();
}

// An error message as the CLI prints it: one line, valid UTF-8 (dumping it
// as JSON throws otherwise).
inline void check_message(const char* target, const Error& e) {
  if (e.message.find('\n') != std::string::npos) fail(target, "a message of more than one line");
  Json j = e.message;
  (void)j.dump();
}

// The prologue of every target: the fuzzer's bytes as a trace whose header
// has been read, or nullptr once a refusal's message has passed the check.
inline std::unique_ptr<TraceReader> open_checked(const char* target, const std::uint8_t* data,
                                                 std::size_t size) {
  Result<std::unique_ptr<TraceReader>> reader =
      open_over(std::string(reinterpret_cast<const char*>(data), size));
  if (!reader) {
    check_message(target, reader.error());
    return nullptr;
  }
  return std::move(reader).value();
}

}  // namespace capsim::fuzz
