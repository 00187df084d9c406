// Expectations: limits a team sets on a run's cudagraph behaviour (how many
// recordings, re-recordings, eager fallbacks, errors and warnings, how many
// bytes one call may copy in), each checked against the figure a run gives,
// with the decision that broke it (`capsim expect`).
//
// The figures come from the run's events: a trace's own (a GPU run, capsim's
// or the CUDA backend's), or capsim's simulation (a program, or a CPU run as
// on a GPU; traces/analyses/observed_run.hpp). A limit covers every compiled
// function, or the one it names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"
#include "model/saturating_sum.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/analyses/observed_run.hpp"

namespace capsim {

// X(enumerator, key (TOML, JSON), flag, what the figure counts)
#define CAPSIM_LIMIT_KINDS(X)                                                     \
  X(kMaxRecordings, "max_recordings", "--max-recordings", "CUDA graphs recorded") \
  X(kMaxRerecords, "max_rerecords", "--max-rerecords",                            \
    "re-recordings (a recording where one already was)")                          \
  X(kMaxCopyBytesPerCall, "max_copy_bytes_per_call", "--max-copy-bytes-per-call", \
    "bytes copied into placeholders by one call")                                 \
  X(kMaxEagerFallbacks, "max_eager_fallbacks", "--max-eager-fallbacks",           \
    "calls that ran eagerly instead of replaying")                                \
  X(kErrors, "errors", "--errors", "errors raised")                               \
  X(kWarnings, "warnings", "--warnings", "warnings")
enum class LimitKind : std::uint8_t {
#define CAPSIM_ENUM_(e, key, flag, what) e,
  CAPSIM_LIMIT_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
#define CAPSIM_COUNT_(e, key, flag, what) +1
inline constexpr std::size_t kLimitKinds = 0 CAPSIM_LIMIT_KINDS(CAPSIM_COUNT_);
#undef CAPSIM_COUNT_
std::string_view limit_key(LimitKind kind);
std::string_view limit_flag(LimitKind kind);
std::string_view limit_what(LimitKind kind);
std::optional<LimitKind> limit_from_key(std::string_view key);

// The most limits one check takes (flags and a limits file together).
inline constexpr std::size_t kMaxLimits = 256;

struct Limit {
  LimitKind kind = LimitKind::kErrors;
  std::optional<std::string> function;  // none: every function
  std::uint64_t max = 0;
  // Where it was given, for messages: "--errors" (a flag), or a limits
  // file's "FILE:LINE: field 'function.NAME.errors'". Empty: the flag.
  std::string given_at;
};

struct LimitCheck {
  Limit limit;
  // The run's figure (a sum of a trace's byte counts may saturate: then it
  // is past every limit, and says so).
  SaturatingSum figure;
  bool holds = true;
  // Broken: the action of the decision that broke it (the first event past
  // the limit; for bytes per call, the first call over it) and its
  // explanation, when explain has a paragraph for it.
  std::optional<std::size_t> action;
  std::optional<Explanation> explanation;
};

// Each limit checked against `run`, in the order given. A limit naming a
// function the run does not define is bad input, named where it was given
// (Limit::given_at: the flag, or the limits file's line and key).
Result<std::vector<LimitCheck>> check_limits(const ObservedRun& run,
                                             const std::vector<Limit>& limits);

// "max_rerecords (all functions): 3 > 0" (or "<=").
std::string limit_check_line(const LimitCheck& check);
Json limit_check_json(const LimitCheck& check);

}  // namespace capsim
