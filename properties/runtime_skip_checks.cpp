// Run-time skips checked against the doc's conditions (runtime_skip_checks.hpp).
#include "properties/runtime_skip_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "properties/runtime_skip_oracle.hpp"
#include "sim/core/decisions.hpp"

namespace capsim {

namespace {

// What the events of one action show of its run-time skips.
struct Observed {
  std::vector<std::optional<Decision>> skips;  // skip events with a fid
  std::vector<Decision> reasons;               // eager events' run-time skip reasons
  bool raised = false;                         // error id=E8 where=run
  std::size_t demotions = 0;
};

bool runtime_reason(std::optional<Decision> r) {
  return r == Decision::kEagerMutatedInputs || r == Decision::kEagerRerecordLimit ||
         r == Decision::kEagerManagedInputLimit;
}

// A decision as the failure line names it: its id or reason.
std::string named(std::optional<Decision> d) {
  return d ? decision_key(*d) : "(not in the table)";
}

void observe(const Event& e, Observed& o) {
  switch (e.kind) {
    case EventKind::kSkip:
      if (e.has(F::fid)) o.skips.push_back(decision_of(e));
      break;
    case EventKind::kEager:
      if (const std::optional<Decision> r = decision_of(e); runtime_reason(r))
        o.reasons.push_back(*r);
      break;
    case EventKind::kError:
      o.raised =
          o.raised || (decision_of(e) == Decision::kErrorSkipRaised && e.text(F::where) == "run");
      break;
    case EventKind::kDemote: ++o.demotions; break;
    default: break;
  }
}

bool quiet(const Observed& o) {
  return o.skips.empty() && o.reasons.empty() && !o.raised;
}

std::optional<std::string> compare(const RuntimeVerdict& v, const Observed& o) {
  using K = RuntimeVerdict::Kind;
  if (o.demotions != (v.demotes ? 1u : 0u)) {
    return fmt::format("it has {} demote events", o.demotions);
  }
  std::vector<std::string> skip_names, reason_names;
  for (const std::optional<Decision>& s : o.skips) skip_names.push_back(named(s));
  for (Decision r : o.reasons) reason_names.push_back(named(r));
  const std::string seen =
      fmt::format("skips [{}], eager reasons [{}]{}", fmt::join(skip_names, ", "),
                  fmt::join(reason_names, ", "), o.raised ? ", E8 raised" : "");
  switch (v.kind) {
    case K::kCompileTime:
    case K::kNone:
      if (!quiet(o)) return "it has " + seen;
      return std::nullopt;
    case K::kSilent:
      if (!o.skips.empty() || o.raised || o.reasons != std::vector<Decision>{v.reason.value()}) {
        return "it has " + seen;
      }
      return std::nullopt;
    case K::kLogged: break;
  }
  const std::vector<Decision> reasons =
      v.raises ? std::vector<Decision>{} : std::vector<Decision>{v.reason.value()};
  if (o.skips != std::vector<std::optional<Decision>>{v.id} || o.raised != v.raises ||
      o.reasons != reasons) {
    return "it has " + seen;
  }
  return std::nullopt;
}

std::string expected(const RuntimeVerdict& v) {
  using K = RuntimeVerdict::Kind;
  const std::string demote = v.demotes ? " and a demotion" : "";
  switch (v.kind) {
    case K::kCompileTime: return "no run-time skip (" + v.why + ")" + demote;
    case K::kNone: return "no run-time skip (" + v.why + ")" + demote;
    case K::kSilent:
      return fmt::format("eager reason={} without a skip ({})", named(v.reason), v.why);
    case K::kLogged: break;
  }
  return fmt::format("skip {} and {} ({}){}", named(v.id),
                     v.raises ? std::string("E8") : fmt::format("eager reason={}", named(v.reason)),
                     v.why, demote);
}

}  // namespace

CheckResult check_runtime_skips_as_documented(const World& world, const RuntimeProgram& program) {
  std::map<std::uint32_t, Observed> by_action;
  for (const Event& e : world.events()) observe(e, by_action[e.action]);
  const std::vector<RuntimeVerdict> verdicts = documented_runtime_skips(program);
  std::map<std::size_t, std::size_t> call_of;  // action -> index in program.calls
  for (std::size_t k = 0; k < program.calls.size(); ++k) call_of[program.calls[k].action] = k;
  for (const auto& [action, o] : by_action) {
    const auto it = call_of.find(action);
    if (it == call_of.end()) {
      if (!quiet(o) || o.demotions != 0) {
        return fmt::format("action {} (not a call of g) has a run-time skip or demotion", action);
      }
      continue;
    }
    if (std::optional<std::string> wrong = compare(verdicts[it->second], o)) {
      return fmt::format("action {} (call {} of g): the doc says {}, but {}", action,
                         it->second + 1, expected(verdicts[it->second]), *wrong);
    }
  }
  // A call with no events at all must have expected none.
  for (std::size_t k = 0; k < program.calls.size(); ++k) {
    const RuntimeVerdict& v = verdicts[k];
    const bool expects_events = v.demotes || v.kind == RuntimeVerdict::Kind::kLogged ||
                                v.kind == RuntimeVerdict::Kind::kSilent;
    if (expects_events && by_action.count(program.calls[k].action) == 0) {
      return fmt::format("action {} (call {} of g): the doc says {}, but it has no events",
                         program.calls[k].action, k + 1, expected(v));
    }
  }
  return std::nullopt;
}

}  // namespace capsim
