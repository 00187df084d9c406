// AutogradEngine::backward: the eager engine's run over the recorded graph.
//
// Order: the graph's topological order (ties by node id), restricted to the
// nodes reachable from the GraphRoot. Per node, as engine.cpp's call_function:
// tensor pre-hooks, pre-hooks, the formula, validate_outputs (not for the AOT
// backward), post-hooks, then each grad is added to its target's InputBuffer
// (the first grad is kept, later ones are summed onto it: earlier producer
// first). AccumulateGrad steals a contiguous grad that nobody else holds when
// .grad is None, clones otherwise, and adds in place when .grad exists.
// Temporaries are released at the end; stolen grads stay.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "model/kernel_launch.hpp"
#include "sim/autograd_engine.hpp"

namespace capsim {

namespace {

using Grads = std::vector<std::optional<TensorId>>;

// X(enumerator, name): the functional formulas the engine knows.
#define CAPSIM_AUTOGRAD_FORMULAS(X)   \
  X(kMul, "MulBackward0")             \
  X(kAdd, "AddBackward0")             \
  X(kSum, "SumBackward0")             \
  X(kMm, "MmBackward0")               \
  X(kRelu, "ReluBackward0")           \
  X(kClone, "CloneBackward0")         \
  X(kToCopy, "ToCopyBackward0")       \
  X(kExpand, "ExpandBackward0")       \
  X(kSlice, "SliceBackward0")         \
  X(kAsStrided, "AsStridedBackward0") \
  X(kCopyBackwards, "CopyBackwards")

enum class Formula : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_AUTOGRAD_FORMULAS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

std::optional<Formula> formula_named(std::string_view name) {
#define CAPSIM_MATCH_(e, n) \
  if (name == n) return Formula::e;
  CAPSIM_AUTOGRAD_FORMULAS(CAPSIM_MATCH_)
#undef CAPSIM_MATCH_
  return std::nullopt;
}

// at::is_expandable_to(shape, desired).
bool is_expandable_to(const Dims& shape, const Dims& desired) {
  if (shape.size() > desired.size()) return false;
  const std::size_t lead = desired.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != desired[lead + d] && shape[d] != 1) return false;
  }
  return true;
}

std::string device_text(const Device& d) {
  return d.type == DeviceType::kCpu ? "cpu" : fmt::format("cuda:{}", d.index);
}

std::string torch_size(const Dims& sizes) {
  return fmt::format("torch.Size({})", sizes);
}

}  // namespace

class BackwardRun {
 public:
  explicit BackwardRun(AutogradEngine& engine) : e_(engine), first_owned_(engine.owned_.size()) {}
  ~BackwardRun() { release_temporaries(); }

  Result<BackwardResult> run(const Variable& root, const Variable& grad_output) {
    CAPSIM_TRY_ASSIGN(const Tensor out, e_.tensor(root.tensor));
    CAPSIM_TRY_ASSIGN(const Tensor g, e_.tensor(grad_output.tensor));
    if (g.meta.sizes != out.meta.sizes) {
      return make_error(fmt::format(
          "Mismatch in shape: grad_output[0] has a shape of {} and output[0] has a shape of {}.",
          torch_size(g.meta.sizes), torch_size(out.meta.sizes)));
    }
    CAPSIM_TRY_ASSIGN(AutogradEngine::BackwardGraph bg, e_.backward_graph(root));
    CAPSIM_TRY_ASSIGN(const std::vector<AutogradNodeId> order, bg.graph.topological_order());
    const std::set<AutogradNodeId> reachable = reach(bg.graph, bg.root);
    user_grad_ = grad_output.tensor;
    BackwardResult result;
    for (AutogradNodeId id : order) {
      if (reachable.count(id) == 0) continue;
      result.executed.push_back(id);
      if (id == bg.root) {
        CAPSIM_TRY(deliver(bg.graph, id, Grads{grad_output.tensor}));
        continue;
      }
      CAPSIM_TRY(run_node(bg.graph, id));
    }
    return result;
  }

 private:
  static std::set<AutogradNodeId> reach(const AutogradGraph& graph, AutogradNodeId root) {
    std::set<AutogradNodeId> seen{root};
    std::vector<AutogradNodeId> stack{root};
    while (!stack.empty()) {
      const AutogradNodeId id = stack.back();
      stack.pop_back();
      for (const auto& edge : graph.next_edges(id)) {
        if (edge && seen.insert(edge->target).second) stack.push_back(edge->target);
      }
    }
    return seen;
  }

  // --- Buffers -------------------------------------------------------------------

  void hold(TensorId id) { ++held_[id]; }
  void unhold(TensorId id) {
    auto it = held_.find(id);
    CAPSIM_CHECK(it != held_.end() && it->second > 0, "input buffer count underflow");
    if (--it->second == 0) held_.erase(it);
  }

  Status deliver(const AutogradGraph& graph, AutogradNodeId id, const Grads& outputs) {
    const auto next = graph.next_edges(id);
    for (std::size_t k = 0; k < next.size(); ++k) {
      if (!next[k] || !outputs[k]) continue;
      Grads& buffer = buffers_[next[k]->target];
      buffer.resize(graph.node(next[k]->target).inputs.size());
      std::optional<TensorId>& slot = buffer[next[k]->input_nr];
      if (!slot) {
        slot = *outputs[k];
        hold(*slot);
        continue;
      }
      // InputBuffer::accumulate: torch.add(old, new), earlier producer first.
      CAPSIM_TRY_ASSIGN(const TensorId sum, e_.binary(KernelKind::kAdd, *slot, *outputs[k]));
      unhold(*slot);
      slot = sum;
      hold(sum);
    }
    return {};
  }

  // --- One node ------------------------------------------------------------------

  Status run_node(const AutogradGraph& graph, AutogradNodeId id) {
    const AutogradNode& node = graph.node(id);
    Grads inputs = std::move(buffers_[id]);
    buffers_.erase(id);
    inputs.resize(node.inputs.size());
    for (const auto& g : inputs) {
      if (g) unhold(*g);
    }
    const auto hooks = e_.hooks_.find(id);
    const std::vector<AutogradEngine::Hook> no_hooks;
    const auto& node_hooks = hooks == e_.hooks_.end() ? no_hooks : hooks->second;
    for (const auto& h : node_hooks) {
      if (h.kind == AutogradHookKind::kTensorPre && h.input_nr < inputs.size() &&
          inputs[h.input_nr]) {
        CAPSIM_TRY_ASSIGN(inputs[h.input_nr], e_.scaled(*inputs[h.input_nr], h.scale));
      }
    }
    for (const auto& h : node_hooks) {
      if (h.kind != AutogradHookKind::kPre) continue;
      for (auto& g : inputs) {
        if (g) {
          CAPSIM_TRY_ASSIGN(g, e_.scaled(*g, h.scale));
        }
      }
    }
    if (node.kind == AutogradNodeKind::kAccumulateGrad) {
      return accumulate(node, inputs, node_hooks);
    }
    const auto next = graph.next_edges(id);
    Grads outputs(next.size());
    if (std::any_of(inputs.begin(), inputs.end(), [](const auto& g) { return g.has_value(); })) {
      CAPSIM_TRY_ASSIGN(outputs, apply(graph, id, inputs));
    }
    if (node.kind != AutogradNodeKind::kAotBackward) {
      CAPSIM_TRY(validate_outputs(graph, id, outputs));
    }
    for (const auto& h : node_hooks) {
      if (h.kind != AutogradHookKind::kPost) continue;
      for (auto& g : outputs) {
        if (g) {
          CAPSIM_TRY_ASSIGN(g, e_.scaled(*g, h.scale));
        }
      }
    }
    return deliver(graph, id, outputs);
  }

  // engine.cpp's validate_outputs, with the eager prefix "Function {name} returned an ".
  Status validate_outputs(const AutogradGraph& graph, AutogradNodeId id, Grads& grads) {
    const AutogradNode& node = graph.node(id);
    const auto next = graph.next_edges(id);
    if (grads.size() != next.size()) {
      return make_error(fmt::format(
          "Function {} returned an invalid number of gradients - expected {}, but got {}",
          node.name, next.size(), grads.size()));
    }
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (!next[i] || !grads[i]) continue;
      const TensorMeta& want = graph.node(next[i]->target).inputs.at(next[i]->input_nr).meta;
      CAPSIM_TRY_ASSIGN(Tensor g, e_.tensor(*grads[i]));
      if (g.meta.sizes != want.sizes) {
        if (!is_expandable_to(want.sizes, g.meta.sizes)) {
          return make_error(fmt::format(
              "Function {} returned an invalid gradient at index {} - got {} but expected shape "
              "compatible with {}",
              node.name, i, g.meta.sizes, want.sizes));
        }
        CAPSIM_TRY_ASSIGN(grads[i], e_.sum_to(*grads[i], want.sizes));
        CAPSIM_TRY_ASSIGN(g, e_.tensor(*grads[i]));
      }
      if (g.meta.dtype != want.dtype) {
        CAPSIM_TRY_ASSIGN(grads[i], cast(*grads[i], want.dtype));
      }
      if (g.meta.layout != want.layout) {
        return make_error(fmt::format(
            "Function {} returned an invalid gradient at index {} - expected layout strided but "
            "got another",
            node.name, i));
      }
      if (g.meta.device != want.device) {
        return make_error(fmt::format(
            "Function {} returned an invalid gradient at index {} - expected device {} but got {}",
            node.name, i, device_text(want.device), device_text(g.meta.device)));
      }
    }
    return {};
  }

  // AccumulateGrad::apply, then the post-accumulate-grad hooks.
  Status accumulate(const AutogradNode& node, const Grads& inputs,
                    const std::vector<AutogradEngine::Hook>& hooks) {
    CAPSIM_CHECK(node.variable.has_value(), "AccumulateGrad without a variable");
    if (inputs.empty() || !inputs[0]) return {};
    const TensorId leaf = *node.variable;
    const TensorId g = *inputs[0];
    auto it = e_.grads_.find(leaf);
    if (it == e_.grads_.end()) {
      CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
      const bool stealable = made_here(g) && !is_view_.count(g) && is_contiguous(t.meta) &&
                             held_.count(g) == 0 && g != user_grad_;
      TensorId stored = g;
      if (!stealable) {
        CAPSIM_TRY_ASSIGN(stored, clone(g));
      }
      kept_.insert(stored);
      it = e_.grads_.emplace(leaf, stored).first;
    } else {
      CAPSIM_TRY_ASSIGN(const TensorArg acc, arg(it->second));
      CAPSIM_TRY_ASSIGN(const TensorArg add, arg(g));
      CAPSIM_TRY(e_.launch(launch_binary(KernelKind::kAdd, acc, acc, add)));
    }
    for (const auto& h : hooks) {
      if (h.kind != AutogradHookKind::kPostAccGrad) continue;
      CAPSIM_TRY_ASSIGN(const TensorId s, e_.fresh({}));
      CAPSIM_TRY(e_.fill(s, h.scale));
      CAPSIM_TRY_ASSIGN(const TensorArg acc, arg(it->second));
      CAPSIM_TRY_ASSIGN(TensorArg scale, arg(s));
      CAPSIM_TRY_ASSIGN(scale.meta, expand(scale.meta, acc.meta.sizes));
      CAPSIM_TRY(e_.launch(launch_binary(KernelKind::kMul, acc, acc, scale)));
    }
    return {};
  }

  // --- Formulas --------------------------------------------------------------------

  Result<TensorArg> arg(TensorId id) const {
    CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(id));
    CAPSIM_TRY_ASSIGN(const Address address, e_.device_.store.data_address(id));
    return TensorArg{address, t.meta};
  }
  bool made_here(TensorId id) const {
    for (std::size_t k = first_owned_; k < e_.owned_.size(); ++k) {
      if (e_.owned_[k] == id) return true;
    }
    return false;
  }
  Result<TensorId> clone(TensorId in) {
    CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(in));
    CAPSIM_TRY_ASSIGN(const TensorId out, e_.fresh(t.meta.sizes, t.meta.dtype));
    CAPSIM_TRY(e_.copy_into(out, in));
    return out;
  }
  Result<TensorId> cast(TensorId in, DType dtype) {
    CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(in));
    if (t.meta.dtype == dtype) return in;
    CAPSIM_TRY_ASSIGN(const TensorId out, e_.fresh(t.meta.sizes, dtype));
    CAPSIM_TRY(e_.copy_into(out, in));
    return out;
  }
  Result<TensorId> zeros(const Dims& sizes, DType dtype) {
    CAPSIM_TRY_ASSIGN(const TensorId out, e_.fresh(sizes, dtype));
    CAPSIM_TRY(e_.fill(out, 0.0f));
    return out;
  }
  Result<TensorId> view(TensorId base, const TensorMeta& meta) {
    CAPSIM_TRY_ASSIGN(const TensorId v, e_.view_of(base, meta));
    is_view_.insert(v);
    return v;
  }
  // A fresh zero tensor of `base`'s sizes, and the view of `view`'s geometry
  // into it (as_strided at view.offset - base.offset). The base must be laid
  // out contiguously, as every tensor the engine makes is.
  Result<std::pair<TensorId, TensorId>> strided_into(const TensorGeometry& base,
                                                     const TensorGeometry& v, DType dtype,
                                                     const char* who) {
    if (base.strides != contiguous_strides(base.sizes)) {
      return make_error(fmt::format("{}: a base with strides {} is not modelled (sizes {})", who,
                                    base.strides, base.sizes));
    }
    CAPSIM_TRY_ASSIGN(const TensorId result, zeros(base.sizes, dtype));
    CAPSIM_TRY_ASSIGN(const Tensor r, e_.tensor(result));
    CAPSIM_TRY_ASSIGN(const Storage s, e_.device_.store.storage(r.storage));
    CAPSIM_TRY_ASSIGN(
        const TensorMeta meta,
        as_strided(r.meta, v.sizes, v.strides, v.storage_offset - base.storage_offset, s.nbytes));
    CAPSIM_TRY_ASSIGN(const TensorId slice, view(result, meta));
    return std::pair{result, slice};
  }
  // The dtype the grad for output `k` must have: its target's InputMetadata.
  static DType want_dtype(const AutogradGraph& graph, AutogradNodeId id, std::size_t k) {
    const auto next = graph.next_edges(id);
    CAPSIM_CHECK(k < next.size() && next[k].has_value(), "dtype of an unused output");
    return graph.node(next[k]->target).inputs.at(next[k]->input_nr).meta.dtype;
  }

  Result<Grads> apply(const AutogradGraph& graph, AutogradNodeId id, const Grads& inputs) {
    const AutogradNode& node = graph.node(id);
    const auto next = graph.next_edges(id);
    std::vector<bool> needed;
    for (const auto& edge : next) needed.push_back(edge.has_value());
    switch (node.kind) {
      case AutogradNodeKind::kFunctional:
      case AutogradNodeKind::kCopyBackwards:
        return formula(graph, id, node.name, node, *inputs[0], needed);
      case AutogradNodeKind::kCopySlices: return copy_slices(graph, id, node, *inputs[0], needed);
      case AutogradNodeKind::kPyNode:
      case AutogradNodeKind::kCppNode: return custom(id, node, *inputs[0], needed);
      case AutogradNodeKind::kAotBackward:
        // The copied AOT graph of compiled_mul: mul's backward on the saved inputs.
        return formula(graph, id, "MulBackward0", node, *inputs[0], needed);
      case AutogradNodeKind::kGraphRoot:
      case AutogradNodeKind::kAccumulateGrad: break;
    }
    return make_error(fmt::format("autograd engine: no backward for {}", describe_node(graph, id)));
  }

  Result<Grads> formula(const AutogradGraph& graph, AutogradNodeId id, const std::string& name,
                        const AutogradNode& node, TensorId g, const std::vector<bool>& needed) {
    const std::optional<Formula> f = formula_named(name);
    if (!f) return make_error(fmt::format("autograd engine: no formula for {}", name));
    Grads out(needed.size());
    auto need = [&](std::size_t k) { return k < needed.size() && needed[k]; };
    const auto& saved = node.saved_tensors;
    switch (*f) {
      case Formula::kMul:
        if (need(0)) {
          CAPSIM_TRY_ASSIGN(out[0], e_.binary(KernelKind::kMul, g, saved.at(1)));
        }
        if (need(1)) {
          CAPSIM_TRY_ASSIGN(out[1], e_.binary(KernelKind::kMul, g, saved.at(0)));
        }
        return out;
      case Formula::kAdd:
      case Formula::kClone:
        for (std::size_t k = 0; k < out.size(); ++k) {
          if (need(k)) out[k] = g;
        }
        return out;
      case Formula::kSum: {
        CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
        CAPSIM_TRY_ASSIGN(const TensorMeta meta, expand(t.meta, node.saved_sizes));
        if (need(0)) {
          CAPSIM_TRY_ASSIGN(out[0], view(g, meta));
        }
        return out;
      }
      case Formula::kMm:
        if (need(0)) {
          CAPSIM_TRY_ASSIGN(const TensorId mat2_t, e_.transposed(saved.at(1)));
          CAPSIM_TRY_ASSIGN(out[0], e_.matmul(g, mat2_t));
        }
        if (need(1)) {
          CAPSIM_TRY_ASSIGN(const TensorId self_t, e_.transposed(saved.at(0)));
          CAPSIM_TRY_ASSIGN(out[1], e_.matmul(self_t, g));
        }
        return out;
      case Formula::kRelu: {
        if (!need(0)) return out;
        CAPSIM_TRY_ASSIGN(const TensorArg tg, arg(g));
        CAPSIM_TRY_ASSIGN(const TensorArg tr, arg(saved.at(0)));
        CAPSIM_TRY_ASSIGN(out[0], e_.fresh(tg.meta.sizes, tg.meta.dtype));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(*out[0]));
        CAPSIM_TRY(e_.launch(launch_relu_backward(o, tg, tr)));
        return out;
      }
      case Formula::kToCopy:
        if (need(0)) {
          CAPSIM_TRY_ASSIGN(out[0], cast(g, want_dtype(graph, id, 0)));
        }
        return out;
      case Formula::kExpand:
        if (need(0)) {
          CAPSIM_TRY_ASSIGN(out[0], e_.sum_to(g, node.saved_sizes));
        }
        return out;
      case Formula::kSlice: {
        if (!need(0)) return out;
        CAPSIM_CHECK(node.saved_sizes.size() >= 5, "SliceBackward0 without its saved sizes");
        const Dims sizes(node.saved_sizes.begin(), node.saved_sizes.end() - 4);
        const std::int64_t start = node.saved_sizes[sizes.size() + 1];
        const std::int64_t end = node.saved_sizes[sizes.size() + 2];
        CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
        CAPSIM_TRY_ASSIGN(const TensorId result, zeros(sizes, t.meta.dtype));
        CAPSIM_TRY_ASSIGN(const Tensor r, e_.tensor(result));
        CAPSIM_TRY_ASSIGN(const TensorMeta meta, slice(r.meta, 0, start, end));
        CAPSIM_TRY_ASSIGN(const TensorId into, view(result, meta));
        CAPSIM_TRY(e_.copy_into(into, g));
        out[0] = result;
        return out;
      }
      case Formula::kAsStrided: {
        if (!need(0)) return out;
        CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
        CAPSIM_TRY_ASSIGN(const auto pair,
                          strided_into(node.base, node.view, t.meta.dtype, "AsStridedBackward0"));
        CAPSIM_TRY(e_.copy_into(pair.second, g));
        out[0] = pair.first;
        return out;
      }
      case Formula::kCopyBackwards: {
        CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
        if (need(0)) {
          CAPSIM_TRY_ASSIGN(out[0], zeros(t.meta.sizes, t.meta.dtype));
        }
        if (need(1)) {
          CAPSIM_TRY_ASSIGN(out[1], cast(g, want_dtype(graph, id, 1)));
        }
        return out;
      }
    }
    return make_error(fmt::format("autograd engine: no formula for {}", name));
  }

  // CopySlices::apply_impl: the base-shaped grad, with the view's slice
  // replaced by the inner node's grad for self.
  Result<Grads> copy_slices(const AutogradGraph& graph, AutogradNodeId id, const AutogradNode& node,
                            TensorId g, const std::vector<bool>& needed) {
    CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
    CAPSIM_TRY_ASSIGN(const auto pair,
                      strided_into(node.base, node.view, t.meta.dtype, "CopySlices"));
    const auto [result, grad_slice] = pair;
    CAPSIM_TRY(e_.copy_into(result, g));
    CAPSIM_TRY_ASSIGN(const TensorId grad_slice_clone, clone(grad_slice));
    std::vector<bool> inner_needed = needed;
    inner_needed[0] = true;
    CAPSIM_TRY_ASSIGN(Grads res,
                      formula(graph, id, node.inner_name, node, grad_slice_clone, inner_needed));
    Grads out(needed.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (i == 0) {
        if (res[0]) {
          CAPSIM_TRY(e_.copy_into(grad_slice, *res[0]));
        } else {
          CAPSIM_TRY(e_.fill(grad_slice, 0.0f));
        }
        out[0] = result;
      } else if (needed[i]) {
        out[i] = res[i];
      }
    }
    return out;
  }

  // PyNode / CppNode: the user's backward, grad * factor (or the buggy sizes).
  Result<Grads> custom(AutogradNodeId id, const AutogradNode& node, TensorId g,
                       const std::vector<bool>& needed) {
    const auto it = e_.functions_.find(id);
    if (it == e_.functions_.end()) {
      return make_error(fmt::format("autograd engine: {} has no backward", node.name));
    }
    const CustomFunction& fn = it->second;
    Grads out(needed.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (!needed[k]) continue;
      if (fn.bad_grad_sizes) {
        CAPSIM_TRY_ASSIGN(out[k], e_.fresh(*fn.bad_grad_sizes));
        CAPSIM_TRY(e_.fill(*out[k], fn.factor));
      } else {
        CAPSIM_TRY_ASSIGN(out[k], e_.scaled(g, fn.factor));
      }
    }
    return out;
  }

  // Releases what this run made, except the grads it stored.
  void release_temporaries() {
    std::vector<TensorId> keep;
    for (std::size_t k = first_owned_; k < e_.owned_.size(); ++k) {
      const TensorId id = e_.owned_[k];
      if (kept_.count(id) != 0) {
        keep.push_back(id);
        continue;
      }
      (void)e_.device_.store.release(id);
      e_.meta_.erase(id);
    }
    e_.owned_.resize(first_owned_);
    e_.owned_.insert(e_.owned_.end(), keep.begin(), keep.end());
  }

  AutogradEngine& e_;
  const std::size_t first_owned_;
  std::map<AutogradNodeId, Grads> buffers_;
  std::map<TensorId, std::uint32_t> held_;  // buffer slots holding each grad
  std::set<TensorId> is_view_;
  std::set<TensorId> kept_;
  TensorId user_grad_;
};

Result<BackwardResult> AutogradEngine::backward(const Variable& root, const Variable& grad_output) {
  BackwardRun run(*this);
  return run.run(root, grad_output);
}

}  // namespace capsim
