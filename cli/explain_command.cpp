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

// The what-ifs `edit` asks for: one, or auto's ranked list.
Result<std::vector<WhatIf>> what_ifs(const ObservedRun& run, const std::string& edit) {
  if (edit == "auto") return what_if_auto(run);
  CAPSIM_TRY_ASSIGN(WhatIf one, what_if(run, edit));
  return std::vector<WhatIf>{std::move(one)};
}

void print_what_ifs(const std::string& path, const std::vector<WhatIf>& all, bool json) {
  if (json) {
    Json j = Json::object();
    j["file"] = path;
    j["what_if"] = Json::array();
    for (const WhatIf& w : all) j["what_if"].push_back(what_if_json(w));
    fmt::print("{}\n", j.dump(2));
    return;
  }
  for (const WhatIf& w : all) fmt::print("{}\n", what_if_text(w));
  if (all.empty())
    fmt::print(
        "{}: no edit capsim knows improves it (tried: marks on the copied inputs, step marks "
        "before errors and warnings, clones of what they read, set-to-none=false)\n",
        path);
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
  std::vector<WhatIf> edits;
  if (what_if_edit) {
    Result<std::vector<WhatIf>> w = what_ifs(*run, *what_if_edit);
    if (!w) return fail(fmt::format("{}: {}", path, w.error().message));
    edits = std::move(*w);
  }
  if (what_if_edit && html.empty()) {
    print_what_ifs(path, edits, json);
    return 0;
  }
  const std::vector<Explanation> all = explain(*run, action);
  if (!html.empty()) {
    const std::string inputs[] = {path};
    if (Status s = refuse_output_onto_inputs(html, inputs); !s) return fail(s.error().message);
    Result<std::string> page = explanation_page(path, *run, all, edits);
    if (!page) return fail(page.error().message);
    if (Status w = write_output_file(html, *page); !w) return fail(w.error().message);
  }
  if (json) {
    Json j = Json::object();
    j["file"] = path;
    j["simulated"] = run->simulated;
    j["explanations"] = Json::array();
    for (const Explanation& e : all) j["explanations"].push_back(explanation_json(e));
    if (what_if_edit) {
      j["what_if"] = Json::array();
      for (const WhatIf& w : edits) j["what_if"].push_back(what_if_json(w));
    }
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  for (const Explanation& e : all) fmt::print("{}\n", explanation_text(e));
  fmt::print("{}: {} decisions explained{}\n", path, all.size(),
             run->simulated ? " (a program: simulated first)" : "");
  if (what_if_edit) print_what_ifs(path, edits, false);
  return 0;
}

}  // namespace capsim::cli
