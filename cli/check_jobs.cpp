// `capsim check --jobs N` (check_jobs.hpp): forked workers, one report each
// through a pipe as JSON, merged back into one process's order.
#include "cli/check_jobs.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "model/check.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim::cli {

namespace {

// --- A worker's report as JSON (names for pointers; nothing but the IPC
// reads it, so it is not a format of its own) ----------------------------

Json failure_to_json(const CaseResult& f, bool ship_traces) {
  Json j = {{"failed", f.failed},
            {"message", f.message},
            {"counterexample", f.counterexample},
            {"shrink_steps", f.shrink_steps},
            {"evaluations", f.evaluations},
            {"shrink_cut", f.shrink_cut},
            {"probes", f.probes.to_string()}};
  if (ship_traces && f.trace) {
    Result<std::vector<std::string>> lines = f.trace();
    if (lines) {
      j["trace"] = *lines;
    } else {
      j["trace_error"] = lines.error().message;
    }
  }
  return j;
}

Json outcome_to_json(const CasesOutcome& o, bool ship_traces) {
  Json j = {{"property", o.property->name}, {"cases_run", o.cases_run}, {"failed", o.failed},
            {"case_index", o.case_index},   {"case_seed", o.case_seed}, {"size", o.size},
            {"evaluations", o.evaluations}, {"seconds", o.seconds},     {"probes", o.probes.cases}};
  if (o.failed) j["failure"] = failure_to_json(o.failure, ship_traces);
  return j;
}

Json report_to_json(const CheckReport& r, bool ship_traces) {
  Json j = {{"interrupted", r.interrupted}};
  j["regressions"] = Json::array();
  for (const RegressionOutcome& o : r.regressions) {
    j["regressions"].push_back({{"property", o.property->name},
                                {"file", o.file},
                                {"failed", o.failed},
                                {"message", o.message}});
  }
  j["properties"] = Json::array();
  for (const PropertyOutcome& o : r.properties) {
    j["properties"].push_back(outcome_to_json(o, ship_traces));
  }
  j["controls"] = Json::array();
  for (const ControlOutcome& o : r.controls) {
    Json c = outcome_to_json(o, ship_traces);
    c["not_applicable"] = o.not_applicable;
    j["controls"].push_back(std::move(c));
  }
  return j;
}

CaseResult failure_from_json(const Json& j) {
  CaseResult f;
  f.failed = j.at("failed").get<bool>();
  f.message = j.at("message").get<std::string>();
  f.counterexample = j.at("counterexample").get<std::string>();
  f.shrink_steps = j.at("shrink_steps").get<std::uint32_t>();
  f.evaluations = j.at("evaluations").get<std::uint32_t>();
  f.shrink_cut = j.at("shrink_cut").get<bool>();
  f.probes = ProbeSet(j.at("probes").get<std::string>());
  if (j.contains("trace")) {
    f.trace = [lines = j.at("trace").get<std::vector<std::string>>()] {
      return Result<std::vector<std::string>>(lines);
    };
  } else if (j.contains("trace_error")) {
    f.trace = [message = j.at("trace_error").get<std::string>()] {
      return Result<std::vector<std::string>>(make_error(message));
    };
  }
  return f;
}

using ByName = std::map<std::string, const Property*, std::less<>>;

void outcome_from_json(const Json& j, const ByName& by_name, CasesOutcome& o) {
  o.property = by_name.at(j.at("property").get<std::string>());
  o.cases_run = j.at("cases_run").get<std::uint64_t>();
  o.failed = j.at("failed").get<bool>();
  o.case_index = j.at("case_index").get<std::uint64_t>();
  o.case_seed = j.at("case_seed").get<std::uint64_t>();
  o.size = j.at("size").get<int>();
  o.evaluations = j.at("evaluations").get<std::uint64_t>();
  o.seconds = j.at("seconds").get<double>();
  o.probes.cases = j.at("probes").get<decltype(o.probes.cases)>();
  if (o.failed) o.failure = failure_from_json(j.at("failure"));
}

// --- Workers ------------------------------------------------------------------

// A property name as an fnmatch pattern that matches only itself.
std::string exact_pattern(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The child's whole life: its share of the check, its report on `fd`, and
// _exit (no destructors, no atexit handlers, no stdio of the parent's).
[[noreturn]] void worker(int fd, std::span<const Property> catalogue, CheckOptions options,
                         const std::vector<std::string>& names, const JobsOptions& jobs) {
  options.patterns.clear();
  for (const std::string& n : names) options.patterns.push_back(exact_pattern(n));
  CheckHooks hooks;
  hooks.should_stop = jobs.should_stop;
  hooks.clock = jobs.clock;
  Json out;
  try {
    Result<CheckReport> report = run_check(catalogue, options, hooks);
    out = report ? report_to_json(*report, jobs.ship_traces)
                 : Json{{"error", report.error().message}};
  } catch (const std::exception& e) {
    out = Json{{"error", fmt::format("exception: {}", e.what())}};
  }
  const bool ok = write_all(fd, out.dump());
  ::close(fd);
  ::_exit(ok ? 0 : 3);
}

// A worker's whole output. A signal that interrupts the read and asks the run
// to stop (SIGINT sent to this process alone, not to its group as a
// terminal's Ctrl-C is) is passed on by `on_stop`, once.
std::string read_all(int fd, const std::function<void()>& on_stop) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      on_stop();
      continue;
    }
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  std::string output;
};

// Forks one worker per share; `shares[w]` are the names worker w runs.
Result<std::vector<Worker>> start_workers(std::span<const Property> catalogue,
                                          const CheckOptions& options,
                                          const std::vector<std::vector<std::string>>& shares,
                                          const JobsOptions& jobs) {
  std::vector<Worker> workers;
  // Those started before a failure to start one are stopped and reaped.
  const auto give_up = [&workers](const char* what) -> Error {
    const int err = errno;
    for (const Worker& w : workers) {
      ::kill(w.pid, SIGTERM);
      ::close(w.fd);
      while (::waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    return make_error(fmt::format("--jobs: {}: {}", what, std::strerror(err)));
  };
  std::fflush(stdout);  // a child must not write the parent's buffered output again
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  for (const std::vector<std::string>& share : shares) {
    int fds[2];
    if (::pipe(fds) != 0) return give_up("pipe");
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return give_up("fork");
    }
    if (pid == 0) {
      // Workers die with a killed parent (as render's layout does).
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(1);
      ::close(fds[0]);
      for (const Worker& w : workers) ::close(w.fd);
      worker(fds[1], catalogue, options, share, jobs);
    }
    ::close(fds[1]);
    workers.push_back({pid, fds[0], {}});
  }
  return workers;
}

// Reads every worker's report and waits for it; the first that died or
// failed is the error.
Status collect(std::vector<Worker>& workers, const JobsOptions& jobs) {
  bool passed_on = false;
  const auto on_stop = [&] {
    if (passed_on || !jobs.should_stop || !jobs.should_stop()) return;
    passed_on = true;
    for (const Worker& w : workers) ::kill(w.pid, SIGINT);
  };
  for (Worker& w : workers) w.output = read_all(w.fd, on_stop);
  std::optional<std::string> problem;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    int status = 0;
    while (::waitpid(workers[i].pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (problem) continue;
    if (WIFSIGNALED(status)) {
      problem = fmt::format("--jobs: worker {} died of signal {}", i, WTERMSIG(status));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      problem = fmt::format("--jobs: worker {} exited with {}", i, WEXITSTATUS(status));
    }
  }
  if (problem) return make_error(*problem);
  return {};
}

// The workers' reports in the order one process gives them.
Result<CheckReport> merge(const CheckOptions& options, std::span<const Property> catalogue,
                          const std::vector<const Property*>& selected,
                          const std::vector<Worker>& workers) {
  ByName by_name;
  for (const Property& p : catalogue) by_name.emplace(std::string(p.name), &p);
  CheckReport merged;
  merged.options = options;
  std::map<std::string, PropertyOutcome, std::less<>> properties;
  std::map<std::string, ControlOutcome, std::less<>> controls;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    try {
      const Json j = Json::parse(workers[i].output);
      if (j.contains("error")) return make_error(j.at("error").get<std::string>());
      merged.interrupted |= j.at("interrupted").get<bool>();
      for (const Json& r : j.at("regressions")) {
        merged.regressions.push_back({by_name.at(r.at("property").get<std::string>()),
                                      r.at("file").get<std::string>(), r.at("failed").get<bool>(),
                                      r.at("message").get<std::string>()});
      }
      for (const Json& p : j.at("properties")) {
        PropertyOutcome o;
        outcome_from_json(p, by_name, o);
        properties.emplace(std::string(o.property->name), std::move(o));
      }
      for (const Json& c : j.at("controls")) {
        ControlOutcome o;
        outcome_from_json(c, by_name, o);
        o.not_applicable = c.at("not_applicable").get<bool>();
        controls.emplace(std::string(o.property->name), std::move(o));
      }
    } catch (const std::exception& e) {
      return make_error(
          fmt::format("--jobs: worker {} sent a report that does not read: {}", i, e.what()));
    }
  }
  // load_regressions reads the folder by file name.
  std::stable_sort(merged.regressions.begin(), merged.regressions.end(),
                   [](const auto& a, const auto& b) { return a.file < b.file; });
  for (const Property* p : selected) {
    if (auto it = properties.find(p->name); it != properties.end()) {
      merged.properties.push_back(std::move(it->second));
    }
  }
  for (const Property* p : selected) {
    if (auto it = controls.find(p->name); it != controls.end()) {
      merged.controls.push_back(std::move(it->second));
    }
  }
  return merged;
}

}  // namespace

Result<CheckReport> run_check_in_workers(std::span<const Property> catalogue,
                                         const CheckOptions& options, const JobsOptions& jobs) {
  CAPSIM_CHECK(jobs.jobs >= 2 && jobs.jobs <= kMaxJobs, "--jobs was checked where it entered");
  CAPSIM_TRY_ASSIGN(const std::vector<const Property*> selected,
                    select_properties(catalogue, options.patterns));
  // Round robin over the selected properties; no worker without one.
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(jobs.jobs), selected.size());
  std::vector<std::vector<std::string>> shares(std::max<std::size_t>(n, 1));
  for (std::size_t i = 0; i < selected.size(); ++i) {
    shares[i % shares.size()].emplace_back(selected[i]->name);
  }
  if (selected.empty()) return run_check(catalogue, options, CheckHooks{});
  CAPSIM_TRY_ASSIGN(std::vector<Worker> workers, start_workers(catalogue, options, shares, jobs));
  CAPSIM_TRY(collect(workers, jobs));
  return merge(options, catalogue, selected, workers);
}

}  // namespace capsim::cli
