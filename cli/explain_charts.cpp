// The charts of `capsim explain --html` (see explain_charts.hpp): each function's calls folded
// into at most kMaxChartColumns columns, then drawn as two panels sharing the calls' axis.
#include "cli/explain_charts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cli/check_report.hpp"

namespace capsim::cli {

namespace {

// The SVG's geometry, in its own units (the page scales it to its column).
constexpr double kWidth = 640, kHeight = 192, kLeft = 84, kRight = 10;
constexpr double kPoolTop = 24, kPoolBottom = 94, kCopyTop = 118, kCopyBottom = 168;
constexpr double kPlotWidth = kWidth - kLeft - kRight;

// One column of a chart: consecutive calls, their largest figures and
// every mark among them.
struct Column {
  std::size_t first_call = 0, last_call = 0;
  std::size_t first_action = 0, last_action = 0;
  std::optional<PoolBytes> pool;
  SaturatingSum copy;
  bool recorded = false, rerecorded = false, eager = false, error = false;
  bool marked() const { return recorded || rerecorded || eager || error; }
};

std::vector<Column> columns_of(const std::vector<CallPoint>& calls) {
  const std::size_t n = calls.size();
  const std::size_t per = (n + kMaxChartColumns - 1) / kMaxChartColumns;
  std::vector<Column> out;
  for (std::size_t first = 0; first < n; first += per) {
    Column c;
    c.first_call = first;
    c.last_call = std::min(n, first + per) - 1;
    c.first_action = calls[first].action;
    c.last_action = calls[c.last_call].action;
    for (std::size_t i = first; i <= c.last_call; ++i) {
      const CallPoint& p = calls[i];
      if (p.pool) {
        const PoolBytes was = c.pool.value_or(PoolBytes{});
        c.pool =
            PoolBytes{std::max(was.live, p.pool->live), std::max(was.reserved, p.pool->reserved)};
      }
      c.copy.take_max(p.copy_bytes);
      c.recorded |= p.recorded;
      c.rerecorded |= p.rerecorded;
      c.eager |= p.eager;
      c.error |= p.error;
    }
    out.push_back(c);
  }
  CAPSIM_CHECK(out.size() <= kMaxChartColumns, "columns are bounded");
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024;
  for (const char* unit : {"KiB", "MiB", "GiB"}) {
    if (value < 1024) return fmt::format("{:.1f} {}", value, unit);
    value /= 1024;
  }
  return fmt::format("{:.1f} TiB", value);
}

// A sum's bytes; past 2^64, "more than 16.0 EiB" (human_bytes's TiB).
std::string human_bytes(const SaturatingSum& bytes) {
  return bytes.saturated ? "more than " + human_bytes(bytes.value) : human_bytes(bytes.value);
}

std::string calls_text(const Column& c) {
  if (c.first_call == c.last_call) {
    return fmt::format("call {} (action {})", c.first_call + 1, c.first_action);
  }
  return fmt::format("calls {}-{} (actions {}-{})", c.first_call + 1, c.last_call + 1,
                     c.first_action, c.last_action);
}

// The marks of a column, most serious first: the first names its colour.
std::vector<std::pair<std::string_view, std::string_view>> marks_of(const Column& c) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  if (c.error) out.emplace_back("error", "#c00");
  if (c.rerecorded) out.emplace_back("re-recorded", "#e07000");
  if (c.eager) out.emplace_back("ran eagerly", "#777");
  if (c.recorded) out.emplace_back("recorded", "#2a8a3a");
  return out;
}

double x_of(std::size_t column, std::size_t columns) {
  return kLeft + (static_cast<double>(column) + 0.5) * kPlotWidth / static_cast<double>(columns);
}

double y_of(std::uint64_t value, std::uint64_t top, double y_top, double y_bottom) {
  if (top == 0) return y_bottom;
  return y_bottom - (y_bottom - y_top) * static_cast<double>(value) / static_cast<double>(top);
}

// A panel's frame: its title, its largest value on the left, and 0.
std::string panel_frame(std::string_view title, const SaturatingSum& top, double y_top,
                        double y_bottom) {
  return fmt::format(
      "<text x={:.1f} y={:.1f} class=ct>{}</text>"
      "<text x={:.1f} y={:.1f} class=ca text-anchor=end>{}</text>"
      "<text x={:.1f} y={:.1f} class=ca text-anchor=end>0</text>"
      "<line x1={:.1f} y1={:.1f} x2={:.1f} y2={:.1f} class=ax />\n",
      kLeft, y_top - 8, xml_escape(title), kLeft - 4, y_top + 4, human_bytes(top), kLeft - 4,
      y_bottom, kLeft, y_bottom, kWidth - kRight, y_bottom);
}

// One of the pool's figures as a polyline over the columns that have it.
std::string pool_line(const std::vector<Column>& cols, std::uint64_t PoolBytes::*figure,
                      std::uint64_t top, std::string_view css_class) {
  std::string points;
  for (std::size_t k = 0; k < cols.size(); ++k) {
    if (!cols[k].pool) continue;  // past the end of the model's run
    points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x_of(k, cols.size()),
                          y_of((*cols[k].pool).*figure, top, kPoolTop, kPoolBottom));
  }
  if (points.empty()) return "";
  if (points.find(' ') == std::string::npos) points += " " + points;  // one call: a dot
  return fmt::format("<polyline points=\"{}\" class={} />\n", points, css_class);
}

// A tick under the pool's axis at each column where the pool mapped a new
// segment: its reserved bytes, which only grow, so a storm of recordings
// shows as a row of ticks while its live bytes may stay flat.
std::string reserved_ticks(const std::vector<Column>& cols) {
  std::string out;
  std::uint64_t before = 0;
  for (std::size_t k = 0; k < cols.size(); ++k) {
    if (!cols[k].pool || cols[k].pool->reserved <= before) continue;
    before = cols[k].pool->reserved;
    const double x = x_of(k, cols.size());
    out += fmt::format(
        "<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" class=reserved><title>{}: "
        "the pool's segments grew to {}</title></polygon>\n",
        x, kPoolBottom + 1, x - 3.5, kPoolBottom + 7, x + 3.5, kPoolBottom + 7, calls_text(cols[k]),
        human_bytes(before));
  }
  return out;
}

std::string pool_panel(const std::vector<Column>& cols, bool modelled) {
  std::uint64_t top = 0;
  for (const Column& c : cols) top = std::max(top, c.pool.value_or(PoolBytes{}).live);
  std::string out = panel_frame(modelled ? "pool live bytes after the call (capsim's model)"
                                         : "pool live bytes after the call",
                                saturating(top), kPoolTop, kPoolBottom);
  return out + pool_line(cols, &PoolBytes::live, top, "pool") + reserved_ticks(cols);
}

std::string copy_panel(const std::vector<Column>& cols) {
  SaturatingSum top;
  for (const Column& c : cols) top.take_max(c.copy);
  std::string out = panel_frame("bytes copied in by the call", top, kCopyTop, kCopyBottom);
  const double width = kPlotWidth / static_cast<double>(cols.size());
  for (std::size_t k = 0; k < cols.size(); ++k) {
    if (cols[k].copy == 0) continue;
    const double y = y_of(cols[k].copy.value, top.value, kCopyTop, kCopyBottom);
    out += fmt::format(
        "<rect x={:.1f} y={:.1f} width={:.2f} height={:.1f} class=copy><title>{}: {} copied "
        "in</title></rect>\n",
        x_of(k, cols.size()) - width * 0.4, y, width * 0.8, kCopyBottom - y, calls_text(cols[k]),
        human_bytes(cols[k].copy));
  }
  return out;
}

std::string marks_layer(const std::vector<Column>& cols) {
  std::string out;
  for (std::size_t k = 0; k < cols.size(); ++k) {
    const auto marks = marks_of(cols[k]);
    if (marks.empty()) continue;
    std::string what;
    for (const auto& [name, colour] : marks)
      what += fmt::format("{}{}", what.empty() ? "" : ", ", name);
    const double x = x_of(k, cols.size());
    out += fmt::format(
        "<g><title>{}: {}</title><line x1={:.1f} y1={:.1f} x2={:.1f} y2={:.1f} stroke=\"{}\" "
        "class=mark /><circle cx={:.1f} cy={:.1f} r=3.5 fill=\"{}\" /></g>\n",
        calls_text(cols[k]), what, x, kPoolTop - 2, x, kCopyBottom, marks.front().second, x,
        kPoolTop - 2, marks.front().second);
  }
  return out;
}

}  // namespace

namespace {

// "12 calls: 1 recording, 2 re-recordings, ...; at most 4.0 KiB copied in by
// one call; the pool at most 1.0 MiB".
std::string summary_line(const std::vector<CallPoint>& calls) {
  std::size_t recorded = 0, rerecorded = 0, eager = 0, errors = 0;
  SaturatingSum copy;
  PoolBytes pool;
  for (const CallPoint& p : calls) {
    recorded += p.recorded;
    rerecorded += p.rerecorded;
    eager += p.eager;
    errors += p.error;
    copy.take_max(p.copy_bytes);
    pool.live = std::max(pool.live, p.pool.value_or(PoolBytes{}).live);
    pool.reserved = std::max(pool.reserved, p.pool.value_or(PoolBytes{}).reserved);
  }
  return fmt::format(
      "{} call{}: {} recorded, {} re-recorded, {} eager, {} raised; at most {} copied in by one "
      "call; the pool at most {} live, {} reserved",
      calls.size(), calls.size() == 1 ? "" : "s", recorded, rerecorded, eager, errors,
      human_bytes(copy), human_bytes(pool.live), human_bytes(pool.reserved));
}

std::string chart_svg(const FunctionCalls& f, bool modelled) {
  const std::vector<Column> cols = columns_of(f.calls);
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=chart viewBox=\"0 0 {} {}\" width={} "
      "height={} role=img aria-label=\"{}\">\n",
      kWidth, kHeight, kWidth, kHeight, xml_escape(f.function));
  out += pool_panel(cols, modelled) + copy_panel(cols) + marks_layer(cols);
  out += fmt::format(
      "<text x={:.1f} y={:.1f} class=ca>call 1</text>"
      "<text x={:.1f} y={:.1f} class=ca text-anchor=end>call {}</text>\n",
      kLeft, kCopyBottom + 16, kWidth - kRight, kCopyBottom + 16, f.calls.size());
  if (cols.size() < f.calls.size()) {
    out += fmt::format(
        "<text x={:.1f} y={:.1f} class=ca text-anchor=middle>{} calls per column</text>\n",
        kLeft + kPlotWidth / 2, kCopyBottom + 16,
        (f.calls.size() + kMaxChartColumns - 1) / kMaxChartColumns);
  }
  return out + "</svg>\n";
}

constexpr std::string_view kLegend =
    "<p class=legend><span style=\"color:#2a8a3a\">&#9679; recorded</span> "
    "<span style=\"color:#e07000\">&#9679; re-recorded</span> "
    "<span style=\"color:#777\">&#9679; ran eagerly</span> "
    "<span style=\"color:#c00\">&#9679; raised</span> "
    "<span style=\"color:#36c\">&#9644; pool live bytes</span> "
    "<span style=\"color:#69c\">&#9650; the pool mapped a segment</span> "
    "<span style=\"color:#999\">&#9646; bytes copied in</span></p>\n";

}  // namespace

std::string charts_html(const CallSeries& series, const Result<std::vector<PoolBytes>>& pool,
                        bool modelled) {
  const std::vector<FunctionCalls>& functions = series.functions;
  std::string out = "<h2>calls</h2>\n";
  for (std::size_t action : series.errors_outside_calls) {
    out += fmt::format("<p class=note><a href=#a{}>action {}</a> raised outside a call</p>\n",
                       action, action);
  }
  if (functions.empty()) return out + "<p class=note>no compiled function was called</p>\n";
  out += kLegend;
  if (!pool) {
    out += fmt::format("<p class=note>the pool's bytes are not charted: {}</p>\n",
                       xml_escape(pool.error().message));
  }
  const std::size_t charted = std::min(functions.size(), kMaxChartedFunctions);
  for (std::size_t i = 0; i < charted; ++i) {
    const FunctionCalls& f = functions[i];
    CAPSIM_CHECK(!f.calls.empty(), "a charted function was called");
    out += fmt::format("<h3><code>{}</code></h3>\n<p>{}</p>\n", xml_escape(f.function),
                       xml_escape(summary_line(f.calls)));
    out += chart_svg(f, modelled);
  }
  if (charted < functions.size()) {
    out += fmt::format("<p class=note>{} more functions are not charted (at most {})</p>\n",
                       functions.size() - charted, kMaxChartedFunctions);
  }
  return out;
}

}  // namespace capsim::cli
