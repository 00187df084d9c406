#include "cli/explain_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/explain_html.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/explain.hpp"
#include "traces/what_if.hpp"

namespace capsim::cli {

namespace {

int print_what_if(const std::string& path, const ObservedRun& run, const std::string& edit,
                  bool json) {
  std::vector<WhatIf> all;
  if (edit == "auto") {
    Result<std::vector<WhatIf>> ranked = what_if_auto(run);
    if (!ranked) return fail(fmt::format("{}: {}", path, ranked.error().message));
    all = std::move(*ranked);
  } else {
    Result<WhatIf> one = what_if(run, edit);
    if (!one) return fail(fmt::format("{}: {}", path, one.error().message));
    all.push_back(std::move(*one));
  }
  if (json) {
    Json j = Json::object();
    j["file"] = path;
    j["what_if"] = Json::array();
    for (const WhatIf& w : all) j["what_if"].push_back(what_if_json(w));
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  for (const WhatIf& w : all) fmt::print("{}\n", what_if_text(w));
  if (all.empty())
    fmt::print(
        "{}: no edit capsim knows improves it (tried: marks on the copied inputs, step marks "
        "before errors and warnings, set-to-none=false)\n",
        path);
  return 0;
}

}  // namespace

int explain_command(const std::string& path, std::optional<std::size_t> action, bool json,
                    const std::optional<std::string>& what_if_edit, const std::string& html) {
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
  if (what_if_edit) return print_what_if(path, *run, *what_if_edit, json);
  const std::vector<Explanation> all = explain(*run, action);
  if (!html.empty()) {
    const std::string inputs[] = {path};
    if (Status s = refuse_output_onto_inputs(html, inputs); !s) return fail(s.error().message);
    Result<std::string> page = explanation_page(path, *run, all);
    if (!page) return fail(page.error().message);
    if (Status w = write_output_file(html, *page); !w) return fail(w.error().message);
  }
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
