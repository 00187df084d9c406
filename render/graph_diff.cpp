// The graph diff (see graph_diff.hpp): the three matching passes, the edges matched after them,
// the merged drawing, changes_only and the summary line.
#include "render/graph_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <span>
#include <tuple>

#include "model/check.hpp"
#include "model/digest.hpp"

namespace capsim {

namespace {

std::uint64_t hash_text(std::string_view text, std::uint64_t h) {
  h = fnv1a64(std::as_bytes(std::span(text.data(), text.size())), h);
  const std::byte sep{0};
  return fnv1a64(std::span(&sep, 1), h);
}

std::uint64_t hash_u64(std::uint64_t v, std::uint64_t h) {
  return fnv1a64(std::as_bytes(std::span(&v, 1)), h);
}

// Kind, target and the ordered (label, source hash) pairs of a node's
// in-edges, for every node that is not on a cycle; a node on a cycle (no
// graph capsim draws has one, but a DrawGraph may) hashes without inputs.
std::vector<std::uint64_t> structural_hashes(const DrawGraph& g) {
  const std::size_t n = g.nodes.size();
  std::vector<std::uint64_t> base(n);
  for (std::size_t i = 0; i < n; ++i) {
    base[i] = hash_text(g.nodes[i].target, hash_text(g.nodes[i].kind, 0xcbf29ce484222325ull));
  }
  const auto in = g.in_edges();
  std::vector<std::size_t> pending(n);
  std::vector<std::vector<std::uint32_t>> out(n);
  for (std::size_t i = 0; i < n; ++i) pending[i] = in[i].size();
  for (const DrawEdge& e : g.edges) out[e.from].push_back(e.to);
  std::vector<std::uint64_t> hash = base;
  std::vector<bool> done(n, false);
  std::deque<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const std::uint32_t v = ready.front();
    ready.pop_front();
    std::vector<std::pair<std::string_view, std::uint64_t>> inputs;
    for (std::uint32_t e : in[v]) inputs.emplace_back(g.edges[e].label, hash[g.edges[e].from]);
    std::sort(inputs.begin(), inputs.end());
    std::uint64_t h = base[v];
    for (const auto& [label, src] : inputs) h = hash_u64(src, hash_text(label, h));
    hash[v] = h;
    done[v] = true;
    for (std::uint32_t w : out[v]) {
      if (--pending[w] == 0) ready.push_back(w);
    }
  }
  return hash;
}

// Pairs the k-th unmatched node of each key in `a` with the k-th of the same
// key in `b`.
template <typename Key, typename KeyOfA, typename KeyOfB>
void match_by_key(std::size_t na, std::size_t nb, std::vector<std::optional<std::uint32_t>>& a_to_b,
                  std::vector<std::optional<std::uint32_t>>& b_to_a,
                  std::vector<MatchPass>& pass_of_b, MatchPass pass, const KeyOfA& key_a,
                  const KeyOfB& key_b, bool last = false) {
  std::map<Key, std::deque<std::uint32_t>> waiting;
  for (std::uint32_t i = 0; i < na; ++i) {
    if (!a_to_b[i]) waiting[key_a(i)].push_back(i);
  }
  for (std::uint32_t j = 0; j < nb; ++j) {
    if (b_to_a[j]) continue;
    auto it = waiting.find(key_b(j));
    if (it == waiting.end() || it->second.empty()) continue;
    const std::uint32_t i = last ? it->second.back() : it->second.front();
    if (last) {
      it->second.pop_back();
    } else {
      it->second.pop_front();
    }
    a_to_b[i] = j;
    b_to_a[j] = i;
    pass_of_b[j] = pass;
  }
}

std::map<std::string_view, std::string_view> attr_map(const DrawNode& n) {
  std::map<std::string_view, std::string_view> m;
  for (const DrawAttr& a : n.attrs) m.emplace(a.key, a.value);
  return m;
}

// Which node of `b` each node of `a` is paired with, and by which pass.
struct NodePairing {
  std::vector<std::optional<std::uint32_t>> a_to_b, b_to_a;
  std::vector<MatchPass> pass_of_b;
};

NodePairing pair_nodes(const DrawGraph& a, const DrawGraph& b, Fault fault) {
  const bool last = fault == Fault::kLastCandidate;
  const std::size_t na = a.nodes.size();
  const std::size_t nb = b.nodes.size();
  NodePairing p{std::vector<std::optional<std::uint32_t>>(na),
                std::vector<std::optional<std::uint32_t>>(nb),
                std::vector<MatchPass>(nb, MatchPass::kUnmatched)};
  // 1. Stable ids.
  for (std::uint32_t j = 0; j < nb; ++j) {
    if (std::optional<std::uint32_t> i = a.find(b.nodes[j].id)) {
      p.a_to_b[*i] = j;
      p.b_to_a[j] = *i;
      p.pass_of_b[j] = MatchPass::kById;
    }
  }
  // 2. Structure.
  const std::vector<std::uint64_t> ha = structural_hashes(a);
  const std::vector<std::uint64_t> hb = structural_hashes(b);
  match_by_key<std::uint64_t>(
      na, nb, p.a_to_b, p.b_to_a, p.pass_of_b, MatchPass::kByHash,
      [&](std::uint32_t i) { return ha[i]; }, [&](std::uint32_t j) { return hb[j]; }, last);
  // 3. Kind and target.
  using KindKey = std::pair<std::string_view, std::string_view>;
  match_by_key<KindKey>(
      na, nb, p.a_to_b, p.b_to_a, p.pass_of_b, MatchPass::kByKind,
      [&](std::uint32_t i) { return KindKey(a.nodes[i].kind, a.nodes[i].target); },
      [&](std::uint32_t j) { return KindKey(b.nodes[j].kind, b.nodes[j].target); }, last);
  return p;
}

// The (source entry, label) pairs of a node's in-edges, sorted: what
// "inputs" compares, in the diff's entry numbering shared by both graphs.
std::vector<std::pair<std::uint32_t, std::string_view>> inputs_of(
    const DrawGraph& g, const std::vector<std::uint32_t>& in,
    const std::vector<std::uint32_t>& entry_of) {
  std::vector<std::pair<std::uint32_t, std::string_view>> inputs;
  for (std::uint32_t e : in) inputs.emplace_back(entry_of[g.edges[e].from], g.edges[e].label);
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

// What differs between the two nodes of a pair, sorted and unique.
std::vector<std::string> changed_rows(const DrawNode& x, const DrawNode& y, bool inputs_differ) {
  std::vector<std::string> changed;
  if (x.kind != y.kind) changed.push_back("kind");
  if (x.target != y.target) changed.push_back("target");
  if (x.title != y.title) changed.push_back("title");
  if (inputs_differ) changed.push_back("inputs");
  const auto ax = attr_map(x);
  const auto ay = attr_map(y);
  for (const auto& [key, value] : ax) {
    auto it = ay.find(key);
    if (it == ay.end() || it->second != value) changed.emplace_back(key);
  }
  for (const auto& [key, value] : ay) {
    if (!ax.contains(key)) changed.emplace_back(key);
  }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  return changed;
}

// Edges as a multiset of (source entry, target entry, label): b's edges in
// order, same or added; then a's that found no partner, removed.
std::vector<EdgeMatch> match_edges(const DrawGraph& a, const DrawGraph& b,
                                   const std::vector<std::uint32_t>& entry_of_a,
                                   const std::vector<std::uint32_t>& entry_of_b) {
  using EdgeKey = std::tuple<std::uint32_t, std::uint32_t, std::string_view>;
  std::map<EdgeKey, std::deque<std::uint32_t>> a_edges;
  for (std::uint32_t e = 0; e < a.edges.size(); ++e) {
    const DrawEdge& edge = a.edges[e];
    a_edges[{entry_of_a[edge.from], entry_of_a[edge.to], edge.label}].push_back(e);
  }
  std::vector<EdgeMatch> matches;
  std::vector<bool> a_edge_used(a.edges.size(), false);
  for (std::uint32_t e = 0; e < b.edges.size(); ++e) {
    const DrawEdge& edge = b.edges[e];
    EdgeMatch m;
    m.b = e;
    m.cls = DiffClass::kAdded;
    auto it = a_edges.find({entry_of_b[edge.from], entry_of_b[edge.to], edge.label});
    if (it != a_edges.end() && !it->second.empty()) {
      m.a = it->second.front();
      a_edge_used[*m.a] = true;
      it->second.pop_front();
      m.cls = DiffClass::kSame;
    }
    matches.push_back(m);
  }
  for (std::uint32_t e = 0; e < a.edges.size(); ++e) {
    if (!a_edge_used[e]) matches.push_back({e, std::nullopt, DiffClass::kRemoved});
  }
  return matches;
}

DiffCounts count_classes(const GraphDiff& diff) {
  DiffCounts c;
  for (const NodeMatch& m : diff.nodes) {
    switch (m.cls) {
      case DiffClass::kSame: ++c.same; break;
      case DiffClass::kChanged: ++c.changed; break;
      case DiffClass::kAdded: ++c.added; break;
      case DiffClass::kRemoved: ++c.removed; break;
      case DiffClass::kNone: CAPSIM_CHECK(false, "a diff classifies every node");
    }
  }
  for (const EdgeMatch& m : diff.edges) {
    switch (m.cls) {
      case DiffClass::kSame: ++c.edges_same; break;
      case DiffClass::kAdded: ++c.edges_added; break;
      case DiffClass::kRemoved: ++c.edges_removed; break;
      default: CAPSIM_CHECK(false, "an edge is same, added or removed");
    }
  }
  return c;
}

}  // namespace

GraphDiff diff_graphs(const DrawGraph& a, const DrawGraph& b, Fault fault) {
  CAPSIM_CHECK_FAULT_SITE(fault, FaultSite::kDiff);
  const std::size_t na = a.nodes.size();
  const std::size_t nb = b.nodes.size();
  const NodePairing pairing = pair_nodes(a, b, fault);

  // One entry per pair (in b's order), then per removed node (in a's): the
  // numbering under which inputs and edges of both graphs compare.
  GraphDiff diff;
  std::vector<std::uint32_t> entry_of_a(na), entry_of_b(nb);
  for (std::uint32_t j = 0; j < nb; ++j) {
    NodeMatch m;
    m.b = j;
    m.a = pairing.b_to_a[j];
    m.pass = pairing.pass_of_b[j];
    m.cls = m.a ? DiffClass::kSame : DiffClass::kAdded;
    entry_of_b[j] = static_cast<std::uint32_t>(diff.nodes.size());
    if (m.a) entry_of_a[*m.a] = entry_of_b[j];
    diff.nodes.push_back(std::move(m));
  }
  for (std::uint32_t i = 0; i < na; ++i) {
    if (pairing.a_to_b[i]) continue;
    NodeMatch m;
    m.a = i;
    m.cls = DiffClass::kRemoved;
    entry_of_a[i] = static_cast<std::uint32_t>(diff.nodes.size());
    diff.nodes.push_back(std::move(m));
  }

  const auto in_a = a.in_edges();
  const auto in_b = b.in_edges();
  for (NodeMatch& m : diff.nodes) {
    if (!m.a || !m.b) continue;
    const bool inputs_differ =
        fault != Fault::kIgnoreInputs &&
        inputs_of(a, in_a[*m.a], entry_of_a) != inputs_of(b, in_b[*m.b], entry_of_b);
    m.changed = changed_rows(a.nodes[*m.a], b.nodes[*m.b], inputs_differ);
    if (!m.changed.empty()) m.cls = DiffClass::kChanged;
  }
  diff.edges = match_edges(a, b, entry_of_a, entry_of_b);
  diff.counts = count_classes(diff);
  CAPSIM_CHECK(diff.counts.same + diff.counts.changed + diff.counts.added == nb);
  CAPSIM_CHECK(diff.counts.same + diff.counts.changed + diff.counts.removed == na);
  return diff;
}

DrawGraph merge_diff(const DrawGraph& a, const DrawGraph& b, const GraphDiff& diff) {
  DrawGraph merged;
  // "file: X vs Y" when both come from one file, else "A vs B".
  const std::size_t colon = a.name.find(": ");
  if (a.name == b.name) {
    merged.name = a.name;
  } else if (colon != std::string::npos && b.name.starts_with(a.name.substr(0, colon + 2))) {
    merged.name = fmt::format("{} vs {}", a.name, b.name.substr(colon + 2));
  } else {
    merged.name = fmt::format("{} vs {}", a.name, b.name);
  }
  merged.kind = b.kind;
  merged.is_diff = true;
  merged.left_to_right = b.left_to_right;
  merged.notes = b.notes;
  std::vector<std::uint32_t> merged_of_a(a.nodes.size()), merged_of_b(b.nodes.size());
  for (const NodeMatch& m : diff.nodes) {
    DrawNode node;
    if (m.b) {
      node = b.nodes[*m.b];
    } else {
      node = a.nodes[*m.a];
      node.id = "-" + node.id;
      while (merged.find(node.id) || b.find(node.id)) node.id += "'";
    }
    node.diff = m.cls;
    node.changed = m.changed;
    if (m.cls == DiffClass::kChanged) {
      const DrawNode& old = a.nodes[*m.a];
      if (old.title != node.title) node.title = fmt::format("{} (was {})", node.title, old.title);
      const auto old_rows = attr_map(old);
      for (DrawAttr& row : node.attrs) {
        auto it = old_rows.find(row.key);
        if (it == old_rows.end()) continue;
        if (it->second != row.value) row.before = std::string(it->second);
      }
      const auto new_rows = attr_map(b.nodes[*m.b]);
      for (const DrawAttr& row : old.attrs) {
        if (!new_rows.contains(row.key)) node.attrs.push_back({row.key, "", row.value, true});
      }
    }
    const std::uint32_t index = merged.add_node(std::move(node));
    if (m.b) merged_of_b[*m.b] = index;
    if (m.a) merged_of_a[*m.a] = index;
  }
  for (const EdgeMatch& m : diff.edges) {
    DrawEdge edge = m.b ? b.edges[*m.b] : a.edges[*m.a];
    if (m.b) {
      edge.from = merged_of_b[edge.from];
      edge.to = merged_of_b[edge.to];
    } else {
      edge.from = merged_of_a[edge.from];
      edge.to = merged_of_a[edge.to];
    }
    edge.diff = m.cls;
    merged.edges.push_back(std::move(edge));
  }
  merged.notes.push_back(diff_summary(diff.counts));
  return merged;
}

DrawGraph changes_only(const DrawGraph& merged) {
  std::vector<bool> keep(merged.nodes.size(), false);
  for (std::size_t i = 0; i < merged.nodes.size(); ++i) {
    keep[i] = merged.nodes[i].diff != DiffClass::kSame && merged.nodes[i].diff != DiffClass::kNone;
  }
  std::vector<bool> near = keep;
  for (const DrawEdge& e : merged.edges) {
    const bool edge_changed = e.diff == DiffClass::kAdded || e.diff == DiffClass::kRemoved;
    if (keep[e.from] || edge_changed) near[e.to] = true;
    if (keep[e.to] || edge_changed) near[e.from] = true;
  }
  DrawGraph out = empty_like(merged);
  std::vector<std::optional<std::uint32_t>> index(merged.nodes.size());
  std::size_t hidden = 0;
  for (std::size_t i = 0; i < merged.nodes.size(); ++i) {
    if (!near[i]) {
      ++hidden;
      continue;
    }
    index[i] = out.add_node(merged.nodes[i]);
  }
  for (const DrawEdge& e : merged.edges) {
    if (!index[e.from] || !index[e.to]) continue;
    DrawEdge copy = e;
    copy.from = *index[e.from];
    copy.to = *index[e.to];
    out.edges.push_back(std::move(copy));
  }
  out.notes.push_back(fmt::format("--changes-only: {} unchanged nodes hidden", hidden));
  return out;
}

std::string diff_summary(const DiffCounts& c) {
  return fmt::format(
      "nodes: {} changed, {} added, {} removed, {} same; edges: {} added, {} removed, {} same",
      c.changed, c.added, c.removed, c.same, c.edges_added, c.edges_removed, c.edges_same);
}

}  // namespace capsim
