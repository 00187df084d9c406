// The DOT writer (see dot_writer.hpp): escaped HTML-like labels, hub proxies, the palette and
// the diff's styles with their legend.
#include "render/dot_writer.hpp"

#include <fmt/format.h>

#include <array>
#include <span>

#include "model/digest.hpp"

namespace capsim {

namespace {

// Sixteen light colours, readable under black text.
constexpr std::array<std::string_view, 16> kPalette = {
    "#dbe9f6", "#fde2c8", "#d9f0d3", "#f6d8e8", "#e8e0f3", "#fff3c4", "#d7eef0", "#f3e1d6",
    "#e3e3e3", "#cfe3d8", "#f9d9d6", "#dfe7c9", "#d6dcf0", "#f2e6c9", "#e6d6e8", "#d4ece6"};

struct DiffStyle {
  std::string_view border;
  std::string_view fill;
  std::string_view style;  // added to "filled"
  int peripheries;
  std::string_view penwidth;
};

DiffStyle diff_style(DiffClass c) {
  switch (c) {
    case DiffClass::kAdded: return {"#0072b2", "#cfe6f5", "bold", 1, "2.5"};
    case DiffClass::kRemoved: return {"#e69f00", "#fce8c3", "dashed", 1, "2"};
    case DiffClass::kChanged: return {"#cc79a7", "#f6e1ee", "solid", 2, "1.5"};
    case DiffClass::kSame: return {"#999999", "#ffffff", "solid", 1, "1"};
    case DiffClass::kNone: break;
  }
  return {"#444444", "", "solid", 1, "1"};
}

// HTML-escaped, cut after `limit` characters (UTF-8 code points, so a cut
// never splits one: Graphviz drops a label that is not well-formed).
std::string escape_html(std::string_view text, std::size_t limit = kMaxLabelChars) {
  std::string out;
  std::size_t chars = 0;
  for (char c : text) {
    const bool starts_char = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_char && chars == limit) {
      out += "...";
      break;
    }
    if (starts_char) ++chars;
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\n':
      case '\t': out += ' '; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string quote_id(std::string_view id) {
  std::string out = "\"";
  for (char c : id) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  }
  return out + "\"";
}

std::string row(std::string_view cell) {
  return fmt::format("<TR><TD ALIGN=\"LEFT\">{}</TD></TR>", cell);
}

std::string label_of(const DrawNode& n) {
  std::string rows = row(fmt::format("<B>{}</B>", escape_html(n.title)));
  for (const DrawAttr& a : n.attrs) {
    if (a.gone) {
      rows += row(fmt::format("<FONT COLOR=\"#e69f00\">{}: <S>{}</S> (gone)</FONT>",
                              escape_html(a.key, 24), escape_html(*a.before)));
    } else if (a.before) {
      rows += row(fmt::format("<FONT COLOR=\"#7a3a63\">{}: <S>{}</S> &#8594; {}</FONT>",
                              escape_html(a.key, 24), escape_html(*a.before, 40),
                              escape_html(a.value, 40)));
    } else if (a.key.empty()) {
      rows += row(escape_html(a.value));
    } else {
      rows += row(fmt::format("{}: {}", escape_html(a.key, 24), escape_html(a.value)));
    }
  }
  if (n.diff == DiffClass::kChanged && !n.changed.empty()) {
    std::string keys;
    for (const std::string& k : n.changed) keys += (keys.empty() ? "" : ", ") + k;
    rows += row(fmt::format("<I>changed: {}</I>", escape_html(keys)));
  }
  return "<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">" + rows +
         "</TABLE>>";
}

std::string node_line(const std::string& id, const DrawNode& n, bool in_diff) {
  std::string fill = n.fill.empty() ? std::string(palette_colour(n.target)) : n.fill;
  std::string cls = fmt::format("kind-{}", n.kind);
  std::string extra;
  if (in_diff) {
    const DiffStyle s = diff_style(n.diff);
    fill = std::string(s.fill);
    cls = fmt::format("diff-{}", diff_class_name(n.diff));
    extra = fmt::format(", color=\"{}\", style=\"rounded,filled,{}\", penwidth={}, peripheries={}",
                        s.border, s.style, s.penwidth, s.peripheries);
    if (n.diff == DiffClass::kSame) extra += ", fontcolor=\"#555555\"";
  }
  if (n.proxy) {
    return fmt::format(
        "  {} [label={}, shape=box, style=\"rounded,dashed\", fontsize=8, class=\"proxy {}\"{}];\n",
        quote_id(id), label_of(n), cls,
        in_diff ? fmt::format(", color=\"{}\"", diff_style(n.diff).border) : "");
  }
  return fmt::format("  {} [label={}, fillcolor=\"{}\", class=\"{}\"{}];\n", quote_id(id),
                     label_of(n), fill, cls, extra);
}

std::string edge_line(const std::string& from, const std::string& to, const DrawEdge& e,
                      bool in_diff) {
  std::vector<std::string> attrs;
  if (!e.label.empty()) attrs.push_back(fmt::format("label=<{}>", escape_html(e.label, 24)));
  std::string style = e.dotted ? "dotted" : "solid";
  if (in_diff) {
    const DiffStyle s = diff_style(e.diff);
    attrs.push_back(fmt::format("color=\"{}\"", s.border));
    attrs.push_back(fmt::format("penwidth={}", s.penwidth));
    if (e.diff == DiffClass::kRemoved) style = "dashed";
    if (e.diff == DiffClass::kAdded) style = e.dotted ? "dotted,bold" : "bold";
    attrs.push_back(fmt::format("class=\"diff-{}\"", diff_class_name(e.diff)));
  }
  if (style != "solid") attrs.push_back(fmt::format("style=\"{}\"", style));
  std::string joined;
  for (const std::string& a : attrs) joined += (joined.empty() ? "" : ", ") + a;
  return fmt::format("  {} -> {}{};\n", quote_id(from), quote_id(to),
                     joined.empty() ? "" : " [" + joined + "]");
}

void legend(std::string& out) {
  out += "  subgraph cluster_legend {\n";
  out += "    label=<<B>legend</B>>; fontsize=10; style=\"rounded\"; color=\"#bbbbbb\";\n";
  for (DiffClass c :
       {DiffClass::kSame, DiffClass::kChanged, DiffClass::kAdded, DiffClass::kRemoved}) {
    DrawNode n;
    n.title = std::string(diff_class_name(c));
    n.diff = c;
    n.kind = "legend";
    std::string line = node_line(fmt::format("legend.{}", diff_class_name(c)), n, true);
    const std::string cls = fmt::format("class=\"diff-{}\"", diff_class_name(c));
    line.replace(line.find(cls), cls.size(), "class=\"legend\"");
    out += "  " + line;
  }
  out += "  }\n";
}

}  // namespace

std::string_view palette_colour(std::string_view target) {
  const std::uint64_t h = fnv1a64(std::as_bytes(std::span(target.data(), target.size())));
  return kPalette[h % kPalette.size()];
}

std::string to_dot(const DrawGraph& g) {
  bool in_diff = g.is_diff;
  for (const DrawNode& n : g.nodes) in_diff = in_diff || n.diff != DiffClass::kNone;
  std::string out = fmt::format("digraph {} {{\n", quote_id(g.name.empty() ? g.kind : g.name));
  std::string title = fmt::format("<B>{}</B>", escape_html(g.name, 160));
  for (const std::string& note : g.notes) title += "<BR/>" + escape_html(note, 160);
  out += fmt::format(
      "  graph [label=<{}>, labelloc=t, fontname=\"Helvetica\", fontsize=12, rankdir={}, "
      "nodesep=0.25, ranksep=0.35];\n",
      title, g.left_to_right ? "LR" : "TB");
  out +=
      "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, "
      "margin=\"0.08,0.04\", color=\"#444444\"];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\", arrowsize=0.6];\n";

  std::vector<std::size_t> fanout(g.nodes.size(), 0);
  for (const DrawEdge& e : g.edges) ++fanout[e.from];
  for (const DrawNode& n : g.nodes) out += node_line(n.id, n, in_diff);
  std::vector<std::size_t> uses(g.nodes.size(), 0);
  for (const DrawEdge& e : g.edges) {
    const DrawNode& from = g.nodes[e.from];
    if (fanout[e.from] <= kHubFanout) {
      out += edge_line(from.id, g.nodes[e.to].id, e, in_diff);
      continue;
    }
    // A hub: this use gets its own proxy, named after the hub.
    DrawNode proxy;
    proxy.id = fmt::format("{}@use{}", from.id, uses[e.from]++);
    while (g.find(proxy.id)) proxy.id += "'";  // a drawn node's id is never reused
    proxy.title = from.title;
    proxy.kind = from.kind;
    proxy.target = from.target;
    proxy.proxy = true;
    proxy.diff = in_diff ? e.diff : DiffClass::kNone;
    out += node_line(proxy.id, proxy, in_diff);
    out += edge_line(proxy.id, g.nodes[e.to].id, e, in_diff);
  }
  if (in_diff) legend(out);
  out += "}\n";
  return out;
}

}  // namespace capsim
