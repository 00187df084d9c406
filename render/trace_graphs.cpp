// Every graph of a trace (see trace_graphs.hpp): the Collector that re-simulates the trace once
// and keeps each drawing as it goes, the graph names and their parsing, and the pick of one.
#include "render/trace_graphs.hpp"

#include <fmt/format.h>

#include "render/capture_drawings.hpp"
#include "render/memory_drawings.hpp"
#include "render/tree_drawing.hpp"
#include "sim/compiled_autograd/runner.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/simulation/run_program.hpp"

namespace capsim {

namespace {

constexpr std::string_view kKinds = "tree, program, autograd, fx, pool";

AddressRange block_or_bytes(const CachingAllocator& allocator, Address a, std::uint64_t bytes) {
  if (Result<Block> b = allocator.block_at(a)) return b->range();
  return {a, bytes == 0 ? 4 : bytes};
}

// The buffers a recording's pointers may land in, most specific first.
std::vector<BufferName> recording_buffers(const TreeManager& manager, const GraphNode& node,
                                          const CachingAllocator& allocator) {
  std::vector<BufferName> buffers;
  const FunctionDef& def = *manager.function(node.fid).def;
  auto input_name = [&](std::size_t i) {
    return i < def.input_names.size() ? def.input_names[i] : fmt::format("input {}", i);
  };
  for (std::size_t i = 0; i < node.placeholders.size(); ++i) {
    if (!node.placeholders[i]) continue;
    const TensorArg& p = *node.placeholders[i];
    buffers.push_back({{p.address, std::max<std::uint64_t>(extent_bytes(p.meta), 4)},
                       input_name(i),
                       "placeholder"});
  }
  for (std::size_t i = 0; i < node.static_input_data_ptrs.size(); ++i) {
    if (!node.static_input_data_ptrs[i]) continue;
    buffers.push_back(
        {block_or_bytes(allocator, *node.static_input_data_ptrs[i], 0), input_name(i), "static"});
  }
  for (std::size_t j = 0; j < node.outputs.size(); ++j) {
    const OutputInfo& o = node.outputs[j];
    if (o.cls == OutputClass::kFresh || o.cls == OutputClass::kAliasNew) {
      buffers.push_back(
          {{o.storage_base, o.storage_nbytes}, fmt::format("output {}", j), "output"});
    }
  }
  for (const SegmentInfo& s : allocator.segments()) {
    if (s.pool == manager.pool()) buffers.push_back({s.range, "intermediate", "pool"});
  }
  return buffers;
}

class Collector : public RunObserver {
 public:
  Collector(TraceReader& reader, std::optional<std::size_t> pool_at,
            std::uint64_t memory_budget_bytes)
      : path_(reader.name()),
        pool_at_(pool_at.value_or(0)),
        memory_budget_bytes_(memory_budget_bytes),
        reader_(&reader) {}

  Result<TraceGraphs> run() {
    TraceReader* reader = reader_;
    out_.file = reader->name();
    WorldOptions wo;
    wo.memory_budget_bytes = memory_budget_bytes_;
    wo.on_backward = [this](std::size_t action, const BackwardView& view) {
      on_backward(action, view);
    };
    CAPSIM_TRY_ASSIGN(wo, replay_world_options(reader->header(), std::move(wo)));
    TraceSource source(*reader);
    CAPSIM_TRY(run_program(source, std::move(wo), OnRaise::kKeepGoing, *this));
    out_.warnings = reader->warnings();
    out_.graphs.emplace("tree",
                        draw_tree(out_.recorded, fmt::format("{}: tree (recorded)", short_name())));
    out_.graphs.emplace(
        "tree:predicted",
        draw_tree(out_.predicted, fmt::format("{}: tree (predicted by capsim)", short_name())));
    return std::move(out_);
  }

  Status before_action(const TraceItem& item, const World& world) override {
    if (pool_at_ != 0 && item.line > pool_at_) snapshot_pool(world);
    return {};
  }

  Status on_refused(const TraceItem* action, const std::string&, const Error& why) override {
    return make_error(fmt::format("{}:{}:1: {}", reader_->name(),
                                  action != nullptr ? action->line : reader_->lines_read(),
                                  printable_message(why.message)));
  }

  Status after_action(const TraceItem& item, World& world, std::vector<Event>& events) override {
    for (Event& e : events) {
      if (reader_->header().observed(e.kind)) out_.predicted.push_back(std::move(e));
    }
    draw_new_recordings(world, item.action_index);
    return {};
  }

  Status on_event(const TraceItem& item) override {
    out_.recorded.push_back(item.event);
    return {};
  }

  Status on_end(const World& world, const RunEnd&) override {
    snapshot_pool(world);
    return {};
  }

 private:
  std::string short_name() const {
    const std::size_t slash = path_.rfind('/');
    return slash == std::string::npos ? path_ : path_.substr(slash + 1);
  }

  void draw_new_recordings(const World& world, std::size_t action) {
    const TreeManager* manager = world.manager();
    if (manager == nullptr) return;
    if (world.managers_created() != manager_seen_) {
      manager_seen_ = world.managers_created();
      graphs_seen_ = 0;
    }
    const std::uint64_t tree = manager_seen_ - 1;
    for (; graphs_seen_ < manager->graphs().size(); ++graphs_seen_) {
      const GraphNode& node = manager->graphs()[graphs_seen_];
      Result<const StepProgram*> program = manager->graph_program(node.id);
      if (!program) continue;
      const std::string id =
          tree == 0 ? std::to_string(node.id) : fmt::format("{}.{}", tree, node.id);
      const std::vector<BufferName> buffers = recording_buffers(*manager, node, world.allocator());
      out_.graphs.emplace(
          "program:" + id,
          draw_step_program(**program, buffers,
                            fmt::format("{}: graph {} ({}, recorded by action {})", short_name(),
                                        id, manager->function(node.fid).def->name, action)));
    }
  }

  void on_backward(std::size_t action, const BackwardView& view) {
    const std::size_t b = backwards_++;
    const std::string where =
        fmt::format("backward {} (action {}, {} mode)", b, action, capture_mode_name(view.mode));
    out_.graphs.emplace(
        fmt::format("autograd:{}", b),
        draw_autograd_graph(*view.graph, view.store,
                            fmt::format("{}: autograd graph of {}", short_name(), where)));
    if (view.captured != nullptr) {
      out_.graphs.emplace(fmt::format("fx:{}", b),
                          draw_fx_graph(*view.captured, fmt::format("{}: FX graph captured in {}",
                                                                    short_name(), where)));
    }
  }

  void snapshot_pool(const World& world) {
    if (pool_taken_) return;
    pool_taken_ = true;
    const std::string key = pool_at_ != 0 ? fmt::format("pool:{}", pool_at_) : "pool";
    const TreeManager* manager = world.manager();
    if (manager == nullptr) return;  // pick_graph says there is no pool
    Result<PoolCheckpoint> pool = world.allocator().checkpoint(manager->pool());
    if (!pool) return;
    std::map<std::uint64_t, std::vector<std::string>> names_of_storage;
    for (const auto& [name, tensor] : world.bound_names()) {
      if (Result<Tensor> t = world.store().tensor(tensor)) {
        names_of_storage[t->storage.value].push_back(name);
      }
    }
    std::vector<StorageOwner> owners;
    for (const Storage& s : world.store().storages()) {
      if (s.pool != manager->pool()) continue;
      owners.push_back({s.id, {s.base, s.nbytes}, s.alive, names_of_storage[s.id.value]});
    }
    const std::string at = pool_at_ != 0 ? fmt::format("after the actions up to line {}", pool_at_)
                                         : std::string("at the end");
    out_.graphs.emplace(
        key, draw_pool(*pool, owners, fmt::format("{}: cudagraph pool {}", short_name(), at)));
  }

  std::string path_;
  std::size_t pool_at_ = 0;  // 0: the end
  std::uint64_t memory_budget_bytes_;
  TraceGraphs out_;
  TraceReader* reader_ = nullptr;
  bool pool_taken_ = false;
  std::uint64_t manager_seen_ = 0;
  std::size_t graphs_seen_ = 0;
  std::size_t backwards_ = 0;
};

}  // namespace

Result<TraceGraphs> collect_trace_graphs(const std::string& path,
                                         std::optional<std::size_t> pool_at,
                                         std::uint64_t memory_budget_bytes) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, TraceReader::open(path));
  return collect_trace_graphs(*reader, pool_at, memory_budget_bytes);
}

Result<TraceGraphs> collect_trace_graphs(TraceReader& reader, std::optional<std::size_t> pool_at,
                                         std::uint64_t memory_budget_bytes) {
  return Collector(reader, pool_at, memory_budget_bytes).run();
}

Result<GraphSpec> parse_graph_spec(std::string_view text) {
  GraphSpec spec;
  const std::size_t colon = text.find(':');
  spec.kind = std::string(text.substr(0, colon));
  if (colon != std::string_view::npos) spec.id = std::string(text.substr(colon + 1));
  if (spec.kind != "tree" && spec.kind != "program" && spec.kind != "autograd" &&
      spec.kind != "fx" && spec.kind != "pool") {
    return make_error(
        fmt::format("--graph '{}': unknown kind '{}' (known: {})", text, spec.kind, kKinds));
  }
  if (colon != std::string_view::npos && spec.id.empty()) {
    return make_error(fmt::format("--graph '{}': the id after ':' is empty", text));
  }
  if ((spec.kind == "program" || spec.kind == "autograd" || spec.kind == "fx") && spec.id.empty()) {
    return make_error(
        fmt::format("--graph '{}': {} needs an id ({}:0)", text, spec.kind, spec.kind));
  }
  if (spec.kind == "tree" && !spec.id.empty() && spec.id != "predicted") {
    return make_error(fmt::format("--graph '{}': the tree is 'tree' or 'tree:predicted'", text));
  }
  if (spec.kind == "pool" && !spec.id.empty()) {
    for (char c : spec.id) {
      if (c < '0' || c > '9' || spec.id.size() > 12) {
        return make_error(fmt::format("--graph '{}': pool takes a trace line number", text));
      }
    }
  }
  return spec;
}

std::vector<std::string> TraceGraphs::names() const {
  std::vector<std::string> out = {"tree", "tree:predicted"};
  for (const auto& [name, graph] : graphs) {
    if (name != "tree" && name != "tree:predicted") out.push_back(name);
  }
  return out;
}

Result<DrawGraph> pick_graph(const TraceGraphs& graphs, const GraphSpec& spec) {
  auto it = graphs.graphs.find(spec.text());
  if (it != graphs.graphs.end()) return it->second;
  std::string known;
  bool pool = false;
  for (const std::string& n : graphs.names()) {
    if (n.starts_with("pool")) {
      pool = true;
    } else {
      known += (known.empty() ? "" : ", ") + n;
    }
  }
  if (spec.kind == "pool") {
    return make_error(fmt::format("{}: --graph {}: no cudagraph pool exists at that point",
                                  graphs.file, spec.text()));
  }
  return make_error(fmt::format("{}: --graph {}: not in this trace (it has: {}{})", graphs.file,
                                spec.text(), known, pool ? ", pool[:LINE]" : ""));
}

GraphSpec default_graph(const TraceGraphs& graphs) {
  for (const Event& e : graphs.recorded) {
    if (e.kind == EventKind::kWarmup || e.kind == EventKind::kRecord) return {"tree", ""};
  }
  for (const auto& [name, g] : graphs.graphs) {
    if (name.starts_with("fx:")) return {"fx", name.substr(3)};
  }
  return {"tree", ""};
}

Result<TreeAgainstPrediction> tree_against_prediction(const TraceGraphs& graphs) {
  TreeAgainstPrediction t;
  CAPSIM_TRY_ASSIGN(t.recorded, pick_graph(graphs, {"tree", ""}));
  CAPSIM_TRY_ASSIGN(t.predicted, pick_graph(graphs, {"tree", "predicted"}));
  t.diff = diff_graphs(t.recorded, t.predicted);
  return t;
}

DrawGraph TreeAgainstPrediction::drawing() const {
  return diff.counts.identical() ? recorded : merge_diff(recorded, predicted, diff);
}

}  // namespace capsim
