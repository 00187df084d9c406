// The compiled-autograd runner (runner.hpp).
#include "sim/compiled_autograd/runner.hpp"

#include <fmt/format.h>

#include <bit>
#include <span>

#include "model/digest.hpp"
#include "sim/compiled_autograd/compiled_backward.hpp"

namespace capsim {

Result<BackwardCapture> capture_one_backward(const AutogradGraph& graph, AutogradNodeId root,
                                             const TensorStore& store, CompiledAutogradCache& cache,
                                             CaptureMode mode, bool dynamic, CaptureRunLog& log) {
  CollectOptions options;
  options.dynamic = dynamic;
  BackwardCapture out;
  CAPSIM_TRY_ASSIGN(out.collected, collect_backward(graph, root, store, options));
  out.decision = cache.lookup(graph, out.collected);
  const CacheDecision& d = out.decision;
  mark_dynamic(out.collected, d.dynamic);
  out.backward = log.backwards++;
  const std::size_t backward = out.backward;
  const std::size_t node_calls = out.collected.ordered_calls.size();
  if (d.hit) {
    ++log.hits;
    log.lines.push_back(
        fmt::format("cache hit ({} node calls)", out.collected.ordered_calls.size()));
    log.emit(EventKind::kCaCacheHit, {{F::backward, backward}, {F::node_calls, node_calls}});
    return out;
  }
  ++log.captures;
  CAPSIM_CHECK(d.miss_kind.has_value(), "a cache miss names its kind");
  log.lines.push_back(fmt::format("cache miss: {}", d.reason));
  log.emit(EventKind::kCaCacheMiss, {{F::backward, backward},
                                     {F::node_calls, node_calls},
                                     {F::reason, decision_key(*d.miss_kind)},
                                     {F::autograd_node, d.miss_node},
                                     {F::call, d.miss_call},
                                     {F::message, d.reason}});
  CaptureOptions capture_options;
  capture_options.mode = mode;
  CAPSIM_TRY_ASSIGN(CaptureResult r, capture_backward(graph, out.collected, capture_options));
  for (const MetadataRead& read : r.reads) {
    log.lines.push_back(fmt::format("MetadataRead node={} call={} field={} mode={}", read.node,
                                    read.call, read.field, capture_mode_name(read.mode)));
    log.emit(EventKind::kMetadataRead, {{F::backward, backward},
                                        {F::call, read.call},
                                        {F::autograd_node, read.node},
                                        {F::metadata, read.field},
                                        {F::mode, std::string(capture_mode_name(read.mode))}});
  }
  log.metadata_reads += r.reads.size();
  std::string text = r.graph.to_text();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  log.emit(EventKind::kCaCapture,
           {{F::backward, backward},
            {F::mode, std::string(capture_mode_name(mode))},
            {F::graph_nodes, r.graph.nodes().size()},
            {F::graph_digest, Digest{fnv1a64(std::as_bytes(std::span(text)))}}});
  log.lines.push_back(std::move(text));
  if (log.release_form) {
    CAPSIM_TRY_ASSIGN(const FxGraph release,
                      capture_release_form(graph, out.collected, *log.release_form));
    log.lines.emplace_back("in the release's form:");
    for (const std::string& line : fx_node_lines(release)) log.lines.push_back("    " + line);
  }
  out.captured = std::move(r.graph);
  return out;
}

Status CompiledAutogradRunner::backward(AutogradEngine& engine, const Variable& root,
                                        const TensorStore& store, CaptureRunLog& log) {
  CAPSIM_TRY_ASSIGN(const auto bg, engine.backward_graph(root));
  CAPSIM_TRY_ASSIGN(BackwardCapture b,
                    capture_one_backward(bg.graph, bg.root, store, cache_, mode_, dynamic_, log));
  const CacheDecision& d = b.decision;
  const CollectedBackward& c = b.collected;
  const std::uint64_t backward_index = b.backward;
  if (b.captured) graphs_.insert_or_assign(d.entry, std::move(*b.captured));
  if (log.observer) {
    log.observer(
        {backward_index, mode_, &bg.graph, &store, d.hit ? nullptr : &graphs_.at(d.entry)});
  }
  if (mode_ != CaptureMode::kFunctional) return {};
  // compiled_fn(inputs, sizes, scalars, hooks): the root grad is ones.
  CAPSIM_TRY_ASSIGN(const Tensor out, store.tensor(root.tensor));
  std::vector<float> ones(static_cast<std::size_t>(numel(out.meta.sizes)), 1.0f);
  CAPSIM_TRY_ASSIGN(const Variable grad, engine.constant(out.meta.sizes, ones));
  const TensorId root_grads[] = {grad.tensor};
  CAPSIM_TRY(
      run_compiled_backward(engine, bg.graph, graphs_.at(d.entry), make_call(bg, c, root_grads)));
  ++log.executed;
  return {};
}

Digest digest_of(const LeafGrads& grads) {
  std::uint64_t hash = fnv1a64({});  // the empty input: FNV-1a's offset basis
  for (const std::vector<float>& g : grads) hash = fnv1a64(std::as_bytes(std::span(g)), hash);
  return Digest{hash};
}

bool bitwise_equal(const LeafGrads& a, const LeafGrads& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].size() != b[k].size()) return false;
    for (std::size_t i = 0; i < a[k].size(); ++i) {
      if (std::bit_cast<std::uint32_t>(a[k][i]) != std::bit_cast<std::uint32_t>(b[k][i])) {
        return false;
      }
    }
  }
  return true;
}

namespace {

Result<LeafGrads> grads_of(const AutogradEngine& engine) {
  LeafGrads out;
  for (TensorId leaf : engine.leaves_with_grad()) {
    CAPSIM_TRY_ASSIGN(std::vector<float> g, engine.read(*engine.grad_of(leaf)));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

Result<LeafGrads> AutogradScenario::eager_grads(int i) const {
  OwnedAutogradDevice dev;
  AutogradEngine eager(dev.device());
  CAPSIM_TRY_ASSIGN(const Variable loss, forward(eager, i));
  CAPSIM_TRY_ASSIGN(const Tensor out, dev.store.tensor(loss.tensor));
  std::vector<float> ones(static_cast<std::size_t>(numel(out.meta.sizes)), 1.0f);
  CAPSIM_TRY_ASSIGN(const Variable grad, eager.constant(out.meta.sizes, ones));
  CAPSIM_TRY(eager.backward(loss, grad));
  return grads_of(eager);
}

Status AutogradScenario::run(CaptureMode mode, CaptureRunLog& log) const {
  CAPSIM_CHECK(backwards >= 1 && forward, "a scenario runs a forward at least once");
  CompiledAutogradRunner runner(mode, dynamic);
  for (int i = 0; i < backwards; ++i) {
    OwnedAutogradDevice dev;
    AutogradEngine engine(dev.device());
    CAPSIM_TRY_ASSIGN(const Variable loss, forward(engine, i));
    CAPSIM_TRY(runner.backward(engine, loss, dev.store, log));
    if (mode != CaptureMode::kFunctional) continue;
    CAPSIM_TRY_ASSIGN(const LeafGrads got, grads_of(engine));
    CAPSIM_TRY_ASSIGN(const LeafGrads want, eager_grads(i));
    const bool same = bitwise_equal(got, want);
    if (!same) ++log.mismatches;
    log.emit(
        EventKind::kCaRun,
        {{F::backward, log.backwards - 1}, {F::leaves, got.size()}, {F::digest, digest_of(got)}});
    log.lines.push_back(fmt::format("ran the compiled backward: grads of {} leaves {} eager",
                                    got.size(), same ? "bitwise equal to" : "DIFFER from"));
  }
  return {};
}

}  // namespace capsim
