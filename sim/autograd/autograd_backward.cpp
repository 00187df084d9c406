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

#include "sim/autograd/autograd_backward_ops.hpp"
#include "sim/autograd/autograd_errors.hpp"
#include "sim/core/decisions.hpp"

namespace capsim {

namespace {

std::string torch_size(const Dims& sizes) {
  return fmt::format("torch.Size({})", sizes);
}

// A node whose release_variables() frees something a later run needs: saved
// tensors, or CopySlices' wrapped function.
bool holds_saved_state(const AutogradNode& node) {
  return !node.saved_tensors.empty() || node.kind == AutogradNodeKind::kCopySlices;
}

}  // namespace

std::set<AutogradNodeId> reachable_nodes(const AutogradGraph& graph, AutogradNodeId root) {
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

std::string mismatch_in_shape(const Dims& grad, const Dims& root) {
  return fmt::format(
      "Mismatch in shape: grad_output[0] has a shape of {} and output[0] has a shape of {}.",
      torch_size(grad), torch_size(root));
}

Result<std::optional<BackwardRaise>> backward_raise(const AutogradEngine& engine,
                                                    const Variable& root,
                                                    const AutogradEngine::BackwardOptions& options,
                                                    bool compiled) {
  CAPSIM_TRY_ASSIGN(const Variable now, engine.variable(root.tensor));
  CAPSIM_TRY_ASSIGN(const Tensor out, engine.store().tensor(root.tensor));
  if (!engine.gradient_edge(root.tensor)) {
    return std::optional<BackwardRaise>(BackwardRaise{Decision::kErrorNoGradFn, kErrNoGradFn});
  }
  if (options.grad_output) {
    CAPSIM_TRY_ASSIGN(const Tensor g, engine.store().tensor(options.grad_output->tensor));
    if (g.meta.sizes != out.meta.sizes) {
      return std::optional<BackwardRaise>(BackwardRaise{
          Decision::kErrorGradShape, mismatch_in_shape(g.meta.sizes, out.meta.sizes)});
    }
  } else if (now.requires_grad && numel(out.meta.sizes) != 1) {
    return std::optional<BackwardRaise>(
        BackwardRaise{Decision::kErrorImplicitGradNonScalar, kErrImplicitGrad});
  }
  if (!compiled) return std::optional<BackwardRaise>();
  CAPSIM_TRY_ASSIGN(const AutogradEngine::BackwardGraph bg, engine.backward_graph(root));
  for (AutogradNodeId id : reachable_nodes(bg.graph, bg.root)) {
    if (id != bg.root && holds_saved_state(bg.graph.node(id)) &&
        engine.released(bg.engine_id(id))) {
      return std::optional<BackwardRaise>(
          BackwardRaise{Decision::kErrorBackwardTwice, kErrBackwardTwice});
    }
  }
  return std::optional<BackwardRaise>();
}

class BackwardRun : public BackwardOps {
 public:
  explicit BackwardRun(AutogradEngine& engine, bool retain_graph = true)
      : BackwardOps(engine), retain_graph_(retain_graph) {}

  Result<BackwardResult> run(const Variable& root, const Variable& grad_output) {
    CAPSIM_TRY_ASSIGN(const Tensor out, e_.tensor(root.tensor));
    CAPSIM_TRY_ASSIGN(const Tensor g, e_.tensor(grad_output.tensor));
    if (g.meta.sizes != out.meta.sizes) {
      return make_error(mismatch_in_shape(g.meta.sizes, out.meta.sizes));
    }
    CAPSIM_TRY_ASSIGN(AutogradEngine::BackwardGraph bg, e_.backward_graph(root));
    CAPSIM_TRY_ASSIGN(const std::vector<AutogradNodeId> order, bg.graph.topological_order());
    const std::set<AutogradNodeId> reachable = reachable_nodes(bg.graph, bg.root);
    user_grad_ = grad_output.tensor;
    bg_ = &bg;
    BackwardResult result;
    for (AutogradNodeId id : order) {
      if (reachable.count(id) == 0) continue;
      ++result.node_calls;
      if (id == bg.root) {
        CAPSIM_TRY(deliver(bg.graph, id, Grads{grad_output.tensor}));
        continue;
      }
      const AutogradNodeId engine_id = bg.engine_id(id);
      result.executed.push_back(engine_id);
      const AutogradNode& node = bg.graph.node(id);
      if (holds_saved_state(node) && e_.released(engine_id)) return make_error(kErrBackwardTwice);
      CAPSIM_TRY(run_node(bg.graph, id));
      // As engine.cpp's call_function: the node gives up its saved state
      // once it has run, unless the graph is retained.
      if (!retain_graph_ && holds_saved_state(node)) e_.released_.insert(engine_id);
    }
    bg_ = nullptr;
    return result;
  }

 private:
  // The backward being run: its ids are its own, the engine's hooks and
  // custom functions are keyed by the engine's.
  const AutogradEngine::BackwardGraph* bg_ = nullptr;

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
    const auto hooks = e_.hooks_.find(bg_->engine_id(id));
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
    const std::string who = "Function " + node.name;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (!next[i] || !grads[i]) continue;
      const TensorMeta& want = graph.node(next[i]->target).inputs.at(next[i]->input_nr).meta;
      CAPSIM_TRY_ASSIGN(grads[i], validate_one(who, i, *grads[i], want, true));
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
    bool stealable = false;
    if (e_.grads_.count(leaf) == 0) {
      CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
      stealable = made_here(g) && !is_view(g) && is_contiguous(t.meta) && held_.count(g) == 0 &&
                  g != user_grad_;
    }
    CAPSIM_TRY(BackwardOps::accumulate(leaf, g, stealable));
    for (const auto& h : hooks) {
      if (h.kind == AutogradHookKind::kPostAccGrad) CAPSIM_TRY(scale_grad(leaf, h.scale));
    }
    return {};
  }

  // --- Formulas --------------------------------------------------------------------

  // The dtype each output's grad must have: its target's InputMetadata.
  static std::vector<std::optional<DType>> want_dtypes(const AutogradGraph& graph,
                                                       AutogradNodeId id) {
    std::vector<std::optional<DType>> out;
    for (const auto& e : graph.next_edges(id)) {
      if (e) {
        out.push_back(graph.node(e->target).inputs.at(e->input_nr).meta.dtype);
      } else {
        out.push_back(std::nullopt);
      }
    }
    return out;
  }

  Result<Grads> formula_of(const AutogradGraph& graph, AutogradNodeId id, std::string_view name,
                           const AutogradNode& node, TensorId g, const std::vector<bool>& needed) {
    const std::vector<std::optional<DType>> dtypes = want_dtypes(graph, id);
    FormulaInputs in;
    in.name = name;
    in.saved = node.saved_tensors;
    in.sizes = node.saved_sizes;
    in.base = &node.base;
    in.view = &node.view;
    in.dtypes = dtypes;
    return formula(in, g, needed);
  }

  Result<Grads> apply(const AutogradGraph& graph, AutogradNodeId id, const Grads& inputs) {
    const AutogradNode& node = graph.node(id);
    const auto next = graph.next_edges(id);
    std::vector<bool> needed;
    for (const auto& edge : next) needed.push_back(edge.has_value());
    switch (node.kind) {
      case AutogradNodeKind::kFunctional:
      case AutogradNodeKind::kCopyBackwards:
        return formula_of(graph, id, node.name, node, *inputs[0], needed);
      case AutogradNodeKind::kCopySlices: {
        // CopySlices::apply_impl: the base-shaped grad, with the view's slice
        // replaced by the inner node's grad for self.
        CAPSIM_TRY_ASSIGN(const CopySlicesPrologue p,
                          copy_slices_prologue(*inputs[0], node.base, node.view));
        std::vector<bool> inner_needed = needed;
        inner_needed[0] = true;
        CAPSIM_TRY_ASSIGN(const Grads res, formula_of(graph, id, node.inner_name, node,
                                                      p.grad_slice_clone, inner_needed));
        return copy_slices_epilogue(needed, p, res);
      }
      case AutogradNodeKind::kPyNode:
      case AutogradNodeKind::kCppNode: {
        const auto it = e_.functions_.find(bg_->engine_id(id));
        if (it == e_.functions_.end()) {
          return make_error(fmt::format("autograd engine: {} has no backward", node.name));
        }
        return custom(it->second, *inputs[0], needed);
      }
      case AutogradNodeKind::kAotBackward:
        // The copied AOT graph of compiled_mul: mul's backward on the saved inputs.
        return formula_of(graph, id, "MulBackward0", node, *inputs[0], needed);
      case AutogradNodeKind::kGraphRoot:
      case AutogradNodeKind::kAccumulateGrad: break;
    }
    return make_error(fmt::format("autograd engine: no backward for {}", describe_node(graph, id)));
  }

  std::map<AutogradNodeId, Grads> buffers_;
  std::map<TensorId, std::uint32_t> held_;  // buffer slots holding each grad
  TensorId user_grad_;
  bool retain_graph_ = true;
};

Result<BackwardResult> AutogradEngine::backward(const Variable& root, const Variable& grad_output) {
  BackwardRun run(*this);
  return run.run(root, grad_output);
}

Result<BackwardResult> AutogradEngine::autograd_backward(const Variable& root,
                                                         const BackwardOptions& options) {
  // The run is made first, so that an implicit ones grad is one of its
  // temporaries: released when the run ends, as PyTorch drops it.
  BackwardRun run(*this, options.retain_graph);
  std::optional<Variable> grad = options.grad_output;
  if (!grad) {
    // _make_grads: a root that requires grad gets ones, if it is a scalar; one
    // that does not falls through to the engine's own error.
    CAPSIM_TRY_ASSIGN(const Variable now, variable(root.tensor));
    CAPSIM_TRY_ASSIGN(const Tensor out, tensor(root.tensor));
    if (now.requires_grad && numel(out.meta.sizes) != 1) {
      return make_error(kErrImplicitGrad);
    }
    const std::vector<float> ones(static_cast<std::size_t>(numel(out.meta.sizes)), 1.0f);
    CAPSIM_TRY_ASSIGN(grad, constant(out.meta.sizes, ones));
  }
  return run.run(root, *grad);
}

}  // namespace capsim
