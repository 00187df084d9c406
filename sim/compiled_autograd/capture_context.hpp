// The state of one compiled-autograd capture (Phase B) that its parts
// share: the values bound to proxies, the FX graph builder, and the
// CaptureContext (PyTorch's AutogradCompilerInstance) through which every
// metadata read is recorded. Internal to sim/compiled_autograd/: capture.cpp
// drives the capture, capture_nodes.cpp emits each node kind's calls.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/compiled_autograd/capture.hpp"

namespace capsim::capture_detail {

// A value bound to a proxy. Its metadata is reachable only through
// CaptureContext::read, which records the read.
struct CaptureValue {
  FxNodeId proxy = 0;
  TensorMeta meta;
  std::uint32_t use_count = 1;
};
using Slots = std::vector<std::optional<CaptureValue>>;

inline FxArg ref(FxNodeId n) {
  return FxArg::ref(n);
}

// A vector of these arguments, moved in: a braced list would copy each one,
// and a list argument's copy is a deep copy of its payload.
template <typename... A>
inline std::vector<FxArg> arg_vector(A&&... args) {
  std::vector<FxArg> out;
  out.reserve(sizeof...(A) + 4);  // room for the saved values that usually follow
  (out.push_back(std::forward<A>(args)), ...);
  return out;
}

// The FX graph builder of a capture: every call the capture emits goes
// through it into `graph`.
struct FxEmitter {
  FxGraph& graph;

  FxNodeId call(std::string_view target, std::vector<FxArg> args) {
    return call_moving(target, args);
  }
  // A call with its arguments listed: they are moved from an array on the
  // stack into the graph, where a braced vector would allocate and copy each
  // (a list argument's payload included).
  template <typename... A>
  requires(sizeof...(A) > 0 && (std::is_same_v<std::remove_cvref_t<A>, FxArg> && ...)) FxNodeId
      call(std::string_view target, A&&... args) {
    std::array<FxArg, sizeof...(A)> moved{FxArg(std::forward<A>(args))...};
    return call_moving(target, moved);
  }
  FxNodeId call_moving(std::string_view target, std::span<FxArg> args) {
    auto id = graph.call_function_moving(target, args);
    CAPSIM_CHECK(id.ok(), "capture emitted a dangling reference");
    return *id;
  }
  FxNodeId getitem(FxNodeId from, std::int64_t index) {
    return call("operator.getitem", ref(from), FxArg::integer(index));
  }
};

// The state every part of a capture emits through or reads (PyTorch's
// AutogradCompilerInstance): the placeholders and the items Phase A lifted,
// the values bound to proxies, the output metadata and the read log.
struct CaptureContext {
  CaptureContext(const AutogradGraph& g, const CollectedBackward& b, const CaptureOptions& o,
                 CaptureResult& r)
      : g(g),
        b(b),
        o(o),
        rng(o.perturb.seed),
        reads(r.reads),
        fx{r.graph},
        hook_positions(b.hooks) {}

  // The four placeholders, then the size slots and the lifted inputs' index.
  void open() {
    inputs_ph = fx.graph.placeholder("inputs");
    sizes_ph = fx.graph.placeholder("sizes");
    scalars_ph = fx.graph.placeholder("scalars");
    hooks_ph = fx.graph.placeholder("hooks");
    // Dynamic size slots become sizes[j]; static ones stay literals.
    std::uint32_t dyn = 0;
    for (const SizeInput& s : b.sizes) {
      slot_arg.push_back(s.dynamic ? FxArg::ref(fx.getitem(sizes_ph, dyn++))
                                   : FxArg::integer(s.value));
    }
    for (std::size_t i = 0; i < b.inputs.size(); ++i) input_index.emplace(b.inputs[i], i);
  }
  // A value for `proxy`. Outputs of proxied ops are dummies in the functional
  // capture; in the legacy capture they are fakes with the metadata the eager
  // formula would give (`correct`). A perturbation replaces either.
  CaptureValue value(FxNodeId proxy, const TensorMeta& correct, bool dummy,
                     const Dims& dummy_sizes) {
    // One copy of the metadata the value keeps (its Dims are on the heap).
    const bool dummied = dummy && o.mode == CaptureMode::kFunctional;
    CaptureValue v{proxy, dummied ? dummy_meta(dummy_sizes) : correct, 1};
    if (o.perturb.enabled) {
      Dims sizes;
      const auto rank = 1 + rng.next() % 3;
      for (std::uint64_t d = 0; d < rank; ++d)
        sizes.push_back(static_cast<std::int64_t>(1 + rng.next() % 5));
      v.meta.sizes = sizes;
      v.meta.strides = contiguous_strides(sizes);
      if (rng.next() % 2 == 0) std::reverse(v.meta.strides.begin(), v.meta.strides.end());
      static constexpr DType kTypes[] = {DType::kFloat32, DType::kFloat16, DType::kComplex64};
      v.meta.dtype = kTypes[rng.next() % 3];
      v.use_count = static_cast<std::uint32_t>(1 + rng.next() % 3);
    }
    return v;
  }
  // The metadata of a dummy of `sizes`; the two dummy shapes are built once.
  const TensorMeta& dummy_meta(const Dims& sizes) {
    if (sizes == kDummySizes) return dummy;
    if (sizes == kAotDummySizes) return aot_dummy;
    other_dummy = contiguous_meta(sizes).value();
    return other_dummy;
  }
  // The one accessor of a proxy's metadata: every call is a MetadataRead.
  const CaptureValue& read(const CaptureValue& v, const char* field) {
    reads.push_back({call_id, std::string(node_name), field, o.mode});
    return v;
  }
  FxArg lifted(TensorId t) {
    auto it = input_index.find(t);
    CAPSIM_CHECK(it != input_index.end(), "a saved tensor that Phase A did not lift");
    const auto index = static_cast<std::int64_t>(it->second);
    auto [pos, fresh] = lifted_items.emplace(index, 0);
    if (fresh) pos->second = fx.getitem(inputs_ph, index);
    return ref(pos->second);
  }
  FxArg next_size() {
    CAPSIM_CHECK(size_cursor < slot_arg.size() && b.sizes[size_cursor].call == call_index,
                 "capture and Phase A disagree on size slots");
    return slot_arg[size_cursor++];
  }
  FxArg size_list(const Dims& dims) {
    std::vector<FxArg> out;
    for (std::size_t i = 0; i < dims.size(); ++i) out.push_back(next_size());
    return FxArg::of(std::move(out));
  }
  // hooks[k] for hook `index` of node `v` (or its backward), at the position
  // Phase A lifted it to.
  FxNodeId next_hook(AutogradNodeId v, std::size_t index, bool backward) {
    const std::size_t k =
        hook_positions.at(v, backward ? 0 : static_cast<std::uint32_t>(index), backward, false);
    return fx.getitem(hooks_ph, static_cast<std::int64_t>(k));
  }
  // The metadata the eager formula gives output `i`: that of the input it feeds.
  // By reference: most callers hand it to value(), which keeps a dummy instead.
  const TensorMeta& output_meta(AutogradNodeId v, std::size_t i) {
    if (edges_of != v || edges.empty()) {
      edges_of = v;
      edges = g.next_edges(v);
    }
    if (i < edges.size() && edges[i]) {
      return g.node(edges[i]->target).inputs[edges[i]->input_nr].meta;
    }
    return scalar_meta;
  }
  // One getitem per output of `op`, bound to fresh values.
  Slots unpack(FxNodeId op, AutogradNodeId v, std::size_t n, bool dummy, const Dims& dummy_sizes) {
    Slots out(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = value(fx.getitem(op, static_cast<std::int64_t>(i)), output_meta(v, i), dummy,
                     dummy_sizes);
    }
    return out;
  }

  const AutogradGraph& g;
  const CollectedBackward& b;
  CaptureOptions o;
  Rng rng;
  std::vector<MetadataRead>& reads;
  FxEmitter fx;
  const TensorMeta dummy = contiguous_meta(kDummySizes).value();
  const TensorMeta aot_dummy = contiguous_meta(kAotDummySizes).value();
  const TensorMeta scalar_meta = contiguous_meta({}).value();
  TensorMeta other_dummy;
  FxNodeId inputs_ph = 0, sizes_ph = 0, scalars_ph = 0, hooks_ph = 0;
  std::vector<FxArg> slot_arg;
  std::size_t size_cursor = 0;
  LiftedHookPositions hook_positions;
  std::map<std::int64_t, FxNodeId> lifted_items;
  std::map<TensorId, std::size_t> input_index;
  // next_edges of the node being captured, fetched once per node (a node with
  // k outputs must not copy its k edges k times).
  AutogradNodeId edges_of = 0;
  std::vector<std::optional<NextEdge>> edges;
  std::map<std::string, std::uint32_t> cpp_counts;
  std::uint32_t call_index = 0, call_id = 0;  // the NodeCall being captured, and its id
  std::string_view node_name;
};

// The dtype each output's grad must have, for the formulas that cast
// (ToCopyBackward0 and CopyBackwards: their saved TensorOptions). It comes
// from the graph's InputMetadata, not from a proxy.
inline FxArg dtypes_of(const AutogradGraph& g, AutogradNodeId v) {
  std::vector<FxArg> out;
  for (const auto& e : g.next_edges(v)) {
    out.push_back(
        e ? FxArg::string(std::string(dtype_name(g.node(e->target).inputs[e->input_nr].meta.dtype)))
          : FxArg::none());
  }
  return FxArg::of(std::move(out));
}
inline bool casts(std::string_view name) {
  return name == "ToCopyBackward0" || name == "CopyBackwards";
}
inline FxArg grads_list(const Slots& slots) {
  std::vector<FxArg> out;
  for (const auto& s : slots) out.push_back(s ? ref(s->proxy) : FxArg::none());
  return FxArg::of(std::move(out));
}
inline FxArg needs_input_grad(const AutogradGraph& g, AutogradNodeId v) {
  std::vector<FxArg> out;
  for (const auto& e : g.next_edges(v)) out.push_back(FxArg::boolean(e.has_value()));
  return FxArg::of(std::move(out));
}

// A node's op, emitted as its kind and the capture mode call for
// (capture_nodes.cpp): the grads of its outputs, or an error.
Result<Slots> apply(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                    const Slots& grads);

}  // namespace capsim::capture_detail
