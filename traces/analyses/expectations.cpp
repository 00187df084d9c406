// Expectations (see expectations.hpp): each limit's figure from the run's events, the event that
// broke it, and that event's explanation.
#include "traces/analyses/expectations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "sim/core/event_fields.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

namespace {

struct LimitInfo {
  std::string_view key, flag, what;
};
constexpr std::array<LimitInfo, kLimitKinds> kLimitInfo = {{
#define CAPSIM_INFO_(e, key, flag, what) {key, flag, what},
    CAPSIM_LIMIT_KINDS(CAPSIM_INFO_)
#undef CAPSIM_INFO_
}};

const LimitInfo& info(LimitKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  CAPSIM_CHECK(i < kLimitInfo.size(), "a limit kind has a row");
  return kLimitInfo[i];
}

// A compiled function's events, or a partition's of it ("f.partition_0").
bool in_scope(const Limit& limit, const Event& e) {
  if (!limit.function) return true;
  const std::optional<std::string_view> f = e.text(F::function);
  return f && belongs_to_function(*f, *limit.function);
}

// Whether `e` counts toward a limit on a number of events.
bool counted(LimitKind kind, const Event& e) {
  switch (kind) {
    case LimitKind::kMaxRecordings: return e.kind == EventKind::kRecord;
    case LimitKind::kMaxRerecords: return e.kind == EventKind::kRecord && is_rerecording(e);
    case LimitKind::kMaxEagerFallbacks: return e.kind == EventKind::kEager;
    case LimitKind::kErrors: return e.kind == EventKind::kError;
    case LimitKind::kWarnings: return e.kind == EventKind::kWarning;
    case LimitKind::kMaxCopyBytesPerCall: return false;
  }
  return false;
}

// The figure and, when it passes the limit, the index of the event that did.
struct Figure {
  SaturatingSum value;
  std::optional<std::size_t> broke_at;
};

Figure count_events(const ObservedRun& run, const Limit& limit) {
  Figure f;
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    const Event& e = run.events[i];
    if (!counted(limit.kind, e) || !in_scope(limit, e)) continue;
    f.value.add(1);
    if (f.value > limit.max && !f.broke_at) f.broke_at = i;
  }
  return f;
}

// Bytes copied in per call: the copy_in events of one action added up (a
// partitioned call copies for each piece), the most of any action.
Figure copy_bytes_per_call(const ObservedRun& run, const Limit& limit) {
  Figure f;
  std::optional<std::size_t> action;
  std::size_t first = 0;
  SaturatingSum bytes;
  const auto close = [&] {
    f.value.take_max(bytes);
    if (bytes > limit.max && !f.broke_at) f.broke_at = first;
  };
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    const Event& e = run.events[i];
    if (e.kind != EventKind::kCopyIn || !in_scope(limit, e)) continue;
    if (action != e.action) {
      if (action) close();
      action = e.action;
      first = i;
      bytes = SaturatingSum{};
    }
    bytes.add(e.count(F::bytes));
  }
  if (action) close();
  return f;
}

// The explanation of event `i`: the paragraph of its action with its kind
// (and function), when explain has one.
std::optional<Explanation> explanation_of(const ObservedRun& run, std::size_t i) {
  const Event& e = run.events[i];
  const std::optional<std::string_view> function = e.text(F::function);
  for (Explanation& x : explain(run, e.action)) {
    if (x.kind != e.kind) continue;
    if (function && x.function != *function) continue;
    return std::move(x);
  }
  return std::nullopt;
}

// The functions a limit may name: the run's function lines and any name its
// events carry (a recorded optimizer step has no line).
std::set<std::string, std::less<>> known_functions(const ObservedRun& run) {
  std::set<std::string, std::less<>> names;
  for (const FunctionDef& def : run.functions) names.insert(def.name);
  for (const Event& e : run.events) {
    if (auto f = e.text(F::function)) names.emplace(*f);
  }
  return names;
}

}  // namespace

std::string_view limit_key(LimitKind kind) {
  return info(kind).key;
}
std::string_view limit_flag(LimitKind kind) {
  return info(kind).flag;
}
std::string_view limit_what(LimitKind kind) {
  return info(kind).what;
}

std::optional<LimitKind> limit_from_key(std::string_view key) {
  for (std::size_t i = 0; i < kLimitInfo.size(); ++i) {
    if (kLimitInfo[i].key == key) return static_cast<LimitKind>(i);
  }
  return std::nullopt;
}

Result<std::vector<LimitCheck>> check_limits(const ObservedRun& run,
                                             const std::vector<Limit>& limits) {
  CAPSIM_CHECK(limits.size() <= kMaxLimits, "the caller bounds the limits");
  const auto names = known_functions(run);
  std::vector<LimitCheck> out;
  for (const Limit& limit : limits) {
    if (limit.function && !names.contains(*limit.function)) {
      const std::string where = limit.given_at.empty()
                                    ? fmt::format("field '{}'", limit_flag(limit.kind))
                                    : limit.given_at;
      return make_error(fmt::format("{}: no compiled function '{}' in the run (known: {})", where,
                                    printable_message(*limit.function),
                                    printable_message(fmt::format("{}", fmt::join(names, ", ")))));
    }
    const Figure f = limit.kind == LimitKind::kMaxCopyBytesPerCall ? copy_bytes_per_call(run, limit)
                                                                   : count_events(run, limit);
    LimitCheck c{limit, f.value, f.value <= limit.max, std::nullopt, std::nullopt};
    CAPSIM_CHECK(c.holds == !f.broke_at.has_value(), "a limit breaks at an event");
    if (f.broke_at) {
      c.action = run.events[*f.broke_at].action;
      c.explanation = explanation_of(run, *f.broke_at);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string limit_check_line(const LimitCheck& c) {
  return fmt::format("{} {} ({}): {} {} {}", c.holds ? "ok  " : "FAIL", limit_key(c.limit.kind),
                     c.limit.function ? printable_message(*c.limit.function) : "all functions",
                     c.figure.text(), c.holds ? "<=" : ">", c.limit.max);
}

Json limit_check_json(const LimitCheck& c) {
  Json j = Json::object();
  j["limit"] = std::string(limit_key(c.limit.kind));
  j["function"] = c.limit.function ? Json(*c.limit.function) : Json(nullptr);
  j["max"] = c.limit.max;
  put_figure(j, "figure", c.figure);
  j["holds"] = c.holds;
  j["action"] = c.action ? Json(*c.action) : Json(nullptr);
  j["explanation"] = c.explanation ? explanation_json(*c.explanation) : Json(nullptr);
  return j;
}

}  // namespace capsim
