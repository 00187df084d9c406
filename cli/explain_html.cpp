// The page of `capsim explain --html` (see explain_html.hpp): the drawing as inline SVG, the
// timeline, the explanations and the what-ifs, each an HTML fragment of its own.
#include "cli/explain_html.hpp"

#include <fmt/format.h>

#include <memory>
#include <set>

#include "cli/check_report.hpp"
#include "cli/explain_charts.hpp"
#include "render/dot_writer.hpp"
#include "render/fold.hpp"
#include "render/graphviz_output.hpp"
#include "render/trace_graphs.hpp"
#include "traces/analyses/call_series.hpp"
#include "traces/format/trace_text_stream.hpp"

namespace capsim::cli {

namespace {

// The drawing's node limit, as `capsim render` lays out.
constexpr std::size_t kMaxDrawnNodes = 2000;

std::string escaped(std::string_view text) {
  return xml_escape(text);
}

// The run's graphs, from capsim's trace of the run as read: a trace's own
// lines, or a simulated program's predicted ones, made a line at a time
// (TraceTextStream). The file is not read a second time: it may have been a
// pipe or standard input.
Result<TraceGraphs> graphs_of(const std::string& path, const ObservedRun& run) {
  TraceHeader header = run.header;
  if (run.simulated) {
    header.producer = std::string(kModelProducer);
    header.observes.reset();
  }
  const Program program{run.functions, run.actions};
  auto text = std::make_unique<TraceTextStream>(std::move(header), program, run.events);
  TraceTextStream& lines = *text;
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, TraceReader::open(std::move(text), path));
  Result<TraceGraphs> graphs = collect_trace_graphs(*reader, std::nullopt);
  CAPSIM_TRY(lines.status());
  return graphs;
}

// The drawing as inline SVG, or a note saying why there is none.
std::string drawing_html(const std::string& path, const ObservedRun& run) {
  Result<TraceGraphs> graphs = graphs_of(path, run);
  if (!graphs) return fmt::format("<p class=note>{}</p>", escaped(graphs.error().message));
  const GraphSpec spec = default_graph(*graphs);
  Result<DrawGraph> drawing = pick_graph(*graphs, spec);
  if (!drawing) return fmt::format("<p class=note>{}</p>", escaped(drawing.error().message));
  std::string folded;
  const std::string dot = to_dot(fit_for_layout(*drawing, kMaxDrawnNodes, &folded));
  Result<std::string> svg = render_in_memory(dot, OutputFormat::kSvg, LayoutOptions{});
  if (!svg) return fmt::format("<p class=note>{}</p>", escaped(svg.error().message));
  // Inline SVG: without the XML prolog and doctype Graphviz writes first.
  const std::size_t start = svg->find("<svg");
  std::string out = fmt::format("<h2>{}</h2>\n", escaped(spec.text()));
  if (!folded.empty()) out += fmt::format("<p class=note>{}</p>\n", escaped(folded));
  return out + (start == std::string::npos ? std::string() : svg->substr(start));
}

// `text` cut to `max` bytes on a character's boundary, saying so.
std::string cut(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t at = max;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  const std::size_t all = text.size();
  text.resize(at);
  return text + fmt::format(" ... ({} bytes in all)", all);
}

// The actions the timeline shows: the first kTimelineHead, and the action
// of every explanation (each links to its row).
std::vector<std::size_t> timeline_actions(const ObservedRun& run,
                                          const std::vector<FoldedExplanation>& all) {
  std::set<std::size_t> shown;
  for (std::size_t i = 0; i < std::min(run.actions.size(), kTimelineHead); ++i) shown.insert(i);
  for (const FoldedExplanation& f : all) {
    if (f.first.action < run.actions.size()) shown.insert(f.first.action);
  }
  return {shown.begin(), shown.end()};
}

std::string timeline_html(const ObservedRun& run, const std::vector<FoldedExplanation>& all) {
  std::string out = "<h2>timeline</h2>\n<table>\n";
  // Each action's first event: the events are in action order.
  std::size_t next = 0, last = 0;
  bool first_row = true;
  for (const std::size_t i : timeline_actions(run, all)) {
    if (!first_row && i > last + 1) {
      out += fmt::format("<tr><td></td><td class=note>actions {} to {} not shown</td></tr>\n",
                         last + 1, i - 1);
    }
    first_row = false;
    last = i;
    out += fmt::format("<tr id=a{}><td>{}</td><td><code>{}</code>", i, i,
                       escaped(cut(action_summary(i, run.actions[i]), kTimelineRowBytes)));
    while (next < run.events.size() && run.events[next].action < i) ++next;
    std::size_t shown = 0;
    for (; next < run.events.size() && run.events[next].action == i; ++next, ++shown) {
      if (shown == kTimelineEvents) continue;
      out += fmt::format("<div class=ev>{}</div>",
                         escaped(cut(format_event(run.events[next]), kTimelineRowBytes)));
    }
    if (shown > kTimelineEvents) {
      out += fmt::format("<div class=note>and {} more events</div>", shown - kTimelineEvents);
    }
    out += "</td></tr>\n";
  }
  if (!run.actions.empty() && last + 1 < run.actions.size()) {
    out += fmt::format("<tr><td></td><td class=note>actions {} to {} not shown</td></tr>\n",
                       last + 1, run.actions.size() - 1);
  }
  return out + "</table>\n";
}

std::string explanations_html(const std::vector<FoldedExplanation>& all) {
  std::size_t count = 0;
  for (const FoldedExplanation& f : all) count += 1 + f.again.size();
  std::string out = fmt::format("<h2>{} decisions</h2>\n", count);
  for (const FoldedExplanation& f : all) {
    const Explanation& e = f.first;
    out +=
        fmt::format("<section><h3><a href=#a{}>action {}</a>: {}{}</h3>\n", e.action, e.action,
                    escaped(e.title),
                    e.function.empty() ? "" : fmt::format(" <code>{}</code>", escaped(e.function)));
    const auto row = [&](std::string_view label, const std::string& text) {
      if (!text.empty()) out += fmt::format("<p><b>{}</b> {}</p>\n", label, escaped(text));
    };
    row("what", e.what);
    row("rule", e.rule);
    std::string inputs;
    for (const std::string& n : e.inputs) inputs += (inputs.empty() ? "" : ", ") + n;
    row("inputs", inputs);
    row("fix", e.fix);
    if (!f.again.empty()) out += fmt::format("<p class=again>{}</p>\n", escaped(again_text(f)));
    out += "</section>\n";
  }
  return out;
}

// One row per what-if: the edit, then each figure as before -> after.
std::string what_ifs_html(const std::vector<WhatIf>& all) {
  if (all.empty()) return "";
  std::string out =
      "<h2>what if</h2>\n<table>\n<tr><td><b>edit</b></td><td>outcome</td><td>recorded</td>"
      "<td>re-recorded</td><td>replays</td><td>bytes copied</td><td>recompiles</td><td>errors</td>"
      "<td>warnings</td></tr>\n";
  for (const WhatIf& w : all) {
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td>", escaped(w.edit),
                       escaped(what_if_outcome_name(w.outcome)));
    if (w.refused) {
      out += fmt::format("<td colspan=7 class=note>{}</td></tr>\n", escaped(*w.refused));
      continue;
    }
    const RunSummary &a = w.before, &b = w.after;
    const auto cell = [&out](const auto& x, const auto& y) {
      out += fmt::format("<td>{} &rarr; {}</td>", x, y);
    };
    cell(a.recorded, b.recorded);
    cell(a.rerecorded, b.rerecorded);
    cell(a.replays, b.replays);
    cell(a.copy_bytes.text(), b.copy_bytes.text());
    cell(a.recompiles, b.recompiles);
    cell(a.errors, b.errors);
    cell(a.warnings, b.warnings);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

constexpr std::string_view kStyle =
    "body{font-family:sans-serif;margin:1em}main{display:flex;gap:2em;align-items:flex-start}"
    ".left{flex:1 1 50%;overflow:auto}.right{flex:1 1 50%}table{border-collapse:collapse}"
    "td{border-top:1px solid #ddd;padding:2px 6px;vertical-align:top;font-size:90%}"
    ".ev{font-family:monospace;font-size:85%;color:#333}section{border:1px solid #ccc;"
    "padding:0 .8em;margin-bottom:.8em}.note{color:#a00}svg{max-width:100%;height:auto}"
    ".chart text{font-size:11px;fill:#333}.chart .ct{font-weight:bold}.chart .ax{stroke:#999}"
    ".chart .pool{fill:none;stroke:#36c;stroke-width:1.5}"
    ".chart .reserved{fill:#69c}.chart .copy{fill:#999}"
    ".chart .mark{stroke-width:1.5;opacity:.7}";

}  // namespace

Result<std::string> explanation_page(const std::string& path, const ObservedRun& run,
                                     const std::vector<FoldedExplanation>& explanations,
                                     const std::vector<WhatIf>& what_ifs,
                                     const ProgramRunOptions& how) {
  std::string page = "<!DOCTYPE html>\n<html lang=en>\n<head><meta charset=utf-8>\n";
  page += fmt::format("<title>capsim explain {}</title>\n<style>{}</style></head>\n<body>\n",
                      escaped(path), kStyle);
  page += fmt::format("<h1>capsim explain {}</h1>\n<p>{} actions, {} events{}</p>\n", escaped(path),
                      run.actions.size(), run.events.size(),
                      run.simulated ? " (a program: simulated first)" : "");
  const Result<std::vector<PoolBytes>> pool = modelled_pool_bytes(run, how);
  const CallSeries calls = calls_by_function(
      run, pool ? std::span<const PoolBytes>(*pool) : std::span<const PoolBytes>());
  page += "<main><div class=left>\n" + drawing_html(path, run) +
          charts_html(calls, pool, !run.simulated) + timeline_html(run, explanations);
  page += "</div><div class=right>\n" + what_ifs_html(what_ifs) + explanations_html(explanations) +
          "</div></main>\n";
  return page + "</body>\n</html>\n";
}

}  // namespace capsim::cli
