#include "cli/explain_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/trace_commands.hpp"
#include "traces/explain.hpp"

namespace capsim::cli {

int explain_command(const std::string& path, std::optional<std::size_t> action, bool json) {
  Result<ObservedRun> run = observe_file(path);
  if (!run) {
    std::fprintf(stderr, "capsim: error: %s\n", run.error().message.c_str());
    return kExitBadInput;
  }
  if (action && *action >= run->actions.size()) {
    std::fprintf(stderr, "capsim: error: %s: field '--action': %zu is past the last action (%zu)\n",
                 path.c_str(), *action, run->actions.size() == 0 ? 0 : run->actions.size() - 1);
    return kExitBadInput;
  }
  const std::vector<Explanation> all = explain(*run, action);
  if (json) {
    Json j = Json::object();
    j["file"] = path;
    j["simulated"] = run->simulated;
    j["explanations"] = Json::array();
    for (const Explanation& e : all) j["explanations"].push_back(explanation_json(e));
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  for (const Explanation& e : all) fmt::print("{}\n", explanation_text(e));
  fmt::print("{}: {} decisions explained{}\n", path, all.size(),
             run->simulated ? " (a program: simulated first)" : "");
  return 0;
}

}  // namespace capsim::cli
