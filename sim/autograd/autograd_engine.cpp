// AutogradEngine: tensors, kernels and the forward ops that record the graph.
// The graph a backward runs is built in autograd_backward_graph.cpp, and the
// backward run lives in autograd_backward.cpp.
#include "sim/autograd/autograd_engine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "model/kernel_launch.hpp"
#include "sim/autograd/autograd_errors.hpp"

namespace capsim {

namespace {

TensorGeometry geometry_of(const TensorMeta& meta) {
  return TensorGeometry{meta.sizes, meta.strides, meta.storage_offset};
}

AutogradNode functional_node(std::string name) {
  AutogradNode node;
  node.kind = AutogradNodeKind::kFunctional;
  node.name = std::move(name);
  return node;
}

}  // namespace

AutogradEngine::~AutogradEngine() {
  for (TensorId id : owned_) {
    consume_error(device_.store.release(id), "a destructor has no caller to tell");
  }
}

// --- Tensors and kernels -------------------------------------------------------

Result<TensorId> AutogradEngine::fresh(const Dims& sizes, DType dtype) {
  CAPSIM_TRY_ASSIGN(const Tensor t, device_.store.empty(sizes, dtype, device_.pool));
  owned_.push_back(t.id);
  meta_[t.id];
  return t.id;
}

Result<TensorId> AutogradEngine::view_of(TensorId base, const TensorMeta& meta) {
  CAPSIM_TRY_ASSIGN(const Tensor t, device_.store.view(base, meta));
  owned_.push_back(t.id);
  meta_[t.id];
  return t.id;
}

Result<Tensor> AutogradEngine::tensor(TensorId id) const {
  return device_.store.tensor(id);
}

namespace {
Result<TensorArg> arg_of(const TensorStore& store, TensorId id) {
  CAPSIM_TRY_ASSIGN(const Tensor t, store.tensor(id));
  CAPSIM_TRY_ASSIGN(const Address address, store.data_address(id));
  return TensorArg{address, t.meta};
}
}  // namespace

Status AutogradEngine::launch(Result<KernelLaunch> launch) {
  if (!launch) return launch.error();
  if (grid_size(*launch) == 0) return {};
  if (recording_ != nullptr) {
    if (recording_->steps.size() >= kMaxSteps) return make_error("lowering: too many steps");
    recording_->add(*launch);
  }
  return device_.backend.run_step(Step{*launch, {}});
}

Status AutogradEngine::fill(TensorId out, float value) {
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  return launch(launch_fill(o, value));
}

Status AutogradEngine::copy_into(TensorId out, TensorId in) {
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  CAPSIM_TRY_ASSIGN(TensorArg i, arg_of(device_.store, in));
  CAPSIM_TRY_ASSIGN(i.meta, capsim::expand(i.meta, o.meta.sizes));
  return launch(launch_copy(o, i));
}

Result<TensorId> AutogradEngine::binary(KernelKind kind, TensorId a, TensorId b) {
  CAPSIM_TRY_ASSIGN(TensorArg ta, arg_of(device_.store, a));
  CAPSIM_TRY_ASSIGN(TensorArg tb, arg_of(device_.store, b));
  CAPSIM_TRY_ASSIGN(const Dims sizes, broadcast_shape(ta.meta.sizes, tb.meta.sizes));
  CAPSIM_TRY_ASSIGN(ta.meta, capsim::expand(ta.meta, sizes));
  CAPSIM_TRY_ASSIGN(tb.meta, capsim::expand(tb.meta, sizes));
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh(sizes, ta.meta.dtype));
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  CAPSIM_TRY(launch(launch_binary(kind, o, ta, tb)));
  return out;
}

Result<TensorId> AutogradEngine::sum_to(TensorId in, const Dims& sizes) {
  CAPSIM_TRY_ASSIGN(const TensorArg i, arg_of(device_.store, in));
  if (i.meta.sizes == sizes) return in;
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh(sizes, i.meta.dtype));
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  CAPSIM_TRY(launch(launch_sum_to_size(o, i)));
  return out;
}

Result<TensorId> AutogradEngine::transposed(TensorId t) {
  CAPSIM_TRY_ASSIGN(const Tensor x, tensor(t));
  CAPSIM_CHECK(x.meta.sizes.size() == 2, "transpose of a tensor that is not 2-d");
  TensorMeta meta = x.meta;
  std::swap(meta.sizes[0], meta.sizes[1]);
  std::swap(meta.strides[0], meta.strides[1]);
  return view_of(t, meta);
}

Result<TensorId> AutogradEngine::matmul(TensorId a, TensorId b) {
  CAPSIM_TRY_ASSIGN(const TensorArg ta, arg_of(device_.store, a));
  CAPSIM_TRY_ASSIGN(const TensorArg tb, arg_of(device_.store, b));
  if (ta.meta.sizes.size() != 2 || tb.meta.sizes.size() != 2) {
    return make_error(
        fmt::format("mm: both operands must be 2-d, got {} and {}", ta.meta.sizes, tb.meta.sizes));
  }
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh({ta.meta.sizes[0], tb.meta.sizes[1]}));
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  CAPSIM_TRY(launch(launch_mm(o, ta, tb)));
  return out;
}

Result<TensorId> AutogradEngine::scaled(TensorId in, float factor) {
  CAPSIM_TRY_ASSIGN(const TensorId s, fresh({}));
  CAPSIM_TRY(fill(s, factor));
  return binary(KernelKind::kMul, in, s);
}

Result<std::vector<float>> AutogradEngine::read(TensorId id) const {
  CAPSIM_TRY_ASSIGN(const Tensor t, tensor(id));
  CAPSIM_TRY_ASSIGN(const Address address, device_.store.data_address(id));
  const std::int64_t n = numel(t.meta);
  std::vector<float> out;
  if (n == 0) return out;
  const std::int64_t extent = needed_size(t.meta.sizes, t.meta.strides);
  std::vector<std::byte> bytes(static_cast<std::size_t>(extent) * kElementBytes);
  CAPSIM_TRY(device_.memory.read(address, bytes));
  out.reserve(static_cast<std::size_t>(n));
  const std::size_t rank = t.meta.sizes.size();
  Dims index(rank, 0);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += index[d] * t.meta.strides[d];
    float value = 0;
    std::memcpy(&value, bytes.data() + offset * kElementBytes, sizeof(float));
    out.push_back(value);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < t.meta.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// --- Leaves and metadata ----------------------------------------------------------

Result<Variable> AutogradEngine::leaf(const Dims& sizes, std::span<const float> values,
                                      bool requires_grad) {
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, contiguous_meta(sizes));
  if (static_cast<std::int64_t>(values.size()) != numel(meta)) {
    return make_error(
        fmt::format("leaf of sizes {} needs {} values, got {}", sizes, numel(meta), values.size()));
  }
  CAPSIM_TRY_ASSIGN(const TensorId id, fresh(sizes));
  CAPSIM_TRY_ASSIGN(const Address address, device_.store.data_address(id));
  CAPSIM_TRY(device_.memory.write(address, std::as_bytes(values)));
  if (requires_grad) CAPSIM_TRY(add_accumulate_grad(id));
  return variable(id);
}

Status AutogradEngine::add_accumulate_grad(TensorId leaf) {
  AutogradNode node;
  node.kind = AutogradNodeKind::kAccumulateGrad;
  node.name = "AccumulateGrad";
  node.inputs = {metadata_of(leaf)};
  node.variable = leaf;
  CAPSIM_TRY_ASSIGN(const AutogradNodeId acc, add_record(std::move(node), {}));
  meta_[leaf].requires_grad = true;
  meta_[leaf].accumulate = acc;
  return {};
}

Result<Variable> AutogradEngine::zeros(const Dims& sizes, DType dtype) {
  CAPSIM_TRY_ASSIGN(const TensorId id, fresh(sizes, dtype));
  CAPSIM_TRY(fill(id, 0.0f));
  return variable(id);
}

Result<Variable> AutogradEngine::variable(TensorId id) const {
  const auto it = meta_.find(id);
  if (it == meta_.end()) {
    return make_error(fmt::format("tensor {} was not made by this autograd engine", id.value));
  }
  return Variable{id, it->second.grad_fn, it->second.requires_grad};
}

std::optional<TensorId> AutogradEngine::grad_of(TensorId leaf) const {
  const auto it = grads_.find(leaf);
  if (it == grads_.end()) return std::nullopt;
  return it->second;
}

std::vector<TensorId> AutogradEngine::leaves_with_grad() const {
  std::vector<TensorId> out;
  for (const auto& [leaf, grad] : grads_) out.push_back(leaf);
  return out;
}

std::optional<GradFn> AutogradEngine::gradient_edge(TensorId id) const {
  const auto it = meta_.find(id);
  if (it == meta_.end()) return std::nullopt;
  if (it->second.grad_fn) return it->second.grad_fn;
  if (it->second.accumulate) return GradFn{*it->second.accumulate, 0};
  return std::nullopt;
}

InputMetadata AutogradEngine::metadata_of(TensorId id) const {
  const Tensor t = tensor(id).value();
  TensorMeta meta = contiguous_meta(t.meta.sizes, t.meta.dtype).value();
  meta.device = t.meta.device;
  meta.layout = t.meta.layout;
  meta.is_subclass = t.meta.is_subclass;
  return InputMetadata{meta};
}

const AutogradNode& AutogradEngine::node(AutogradNodeId id) const {
  CAPSIM_CHECK(id < records_.size(), "no such autograd node");
  return records_[id].node;
}

// --- Graph recording ------------------------------------------------------------

Result<AutogradNodeId> AutogradEngine::add_record(AutogradNode node,
                                                  std::span<const std::optional<GradFn>> next) {
  if (records_.size() >= kMaxAutogradNodes) {
    return make_error(fmt::format("autograd graph: more than {} nodes", kMaxAutogradNodes));
  }
  Record record;
  node.num_outputs = static_cast<std::uint32_t>(next.size());
  for (const auto& edge : next) {
    if (edge) {
      record.next.push_back(NextEdge{edge->node, edge->output_nr});
    } else {
      record.next.push_back(std::nullopt);
    }
  }
  record.node = std::move(node);
  records_.push_back(std::move(record));
  return static_cast<AutogradNodeId>(records_.size() - 1);
}

std::vector<std::optional<GradFn>> AutogradEngine::gradient_edges(
    std::span<const Variable> inputs) const {
  std::vector<std::optional<GradFn>> next;
  for (const Variable& v : inputs) next.push_back(gradient_edge(v.tensor));
  return next;
}

Result<Variable> AutogradEngine::finish(TensorId out, AutogradNode node,
                                        std::span<const Variable> inputs) {
  const std::vector<std::optional<GradFn>> next = gradient_edges(inputs);
  const bool requires_grad =
      std::any_of(next.begin(), next.end(), [](const auto& e) { return e.has_value(); });
  if (!requires_grad) return variable(out);
  node.inputs = {metadata_of(out)};
  CAPSIM_TRY_ASSIGN(const AutogradNodeId id, add_record(std::move(node), next));
  meta_[out].grad_fn = GradFn{id, 0};
  meta_[out].requires_grad = true;
  return variable(out);
}

// --- Differentiable ops ------------------------------------------------------------

Result<Variable> AutogradEngine::mul(const Variable& a, const Variable& b) {
  CAPSIM_TRY_ASSIGN(const TensorId out, binary(KernelKind::kMul, a.tensor, b.tensor));
  AutogradNode node = functional_node("MulBackward0");
  node.saved_tensors = {a.tensor, b.tensor};  // self, other
  const Variable in[] = {a, b};
  return finish(out, std::move(node), in);
}

Result<Variable> AutogradEngine::add(const Variable& a, const Variable& b) {
  CAPSIM_TRY_ASSIGN(const TensorId out, binary(KernelKind::kAdd, a.tensor, b.tensor));
  const Variable in[] = {a, b};
  return finish(out, functional_node("AddBackward0"), in);
}

Result<Variable> AutogradEngine::sum(const Variable& a) {
  CAPSIM_TRY_ASSIGN(const TensorArg ta, arg_of(device_.store, a.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh({}, ta.meta.dtype));
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < ta.meta.sizes.size(); ++d) dims.push_back(static_cast<int64_t>(d));
  CAPSIM_TRY(launch(launch_sum(o, ta, dims)));
  AutogradNode node = functional_node("SumBackward0");
  node.saved_sizes = ta.meta.sizes;  // self_sym_sizes
  const Variable in[] = {a};
  return finish(out, std::move(node), in);
}

Result<Variable> AutogradEngine::mm(const Variable& a, const Variable& b) {
  CAPSIM_TRY_ASSIGN(const TensorId out, matmul(a.tensor, b.tensor));
  CAPSIM_TRY_ASSIGN(const Tensor ta, tensor(a.tensor));
  CAPSIM_TRY_ASSIGN(const Tensor tb, tensor(b.tensor));
  AutogradNode node = functional_node("MmBackward0");
  node.saved_tensors = {a.tensor, b.tensor};  // self, mat2
  node.saved_sizes = {ta.meta.sizes[0], ta.meta.sizes[1], tb.meta.sizes[0], tb.meta.sizes[1]};
  const Variable in[] = {a, b};
  return finish(out, std::move(node), in);
}

Result<Variable> AutogradEngine::relu(const Variable& a) {
  CAPSIM_TRY_ASSIGN(const TensorArg ta, arg_of(device_.store, a.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh(ta.meta.sizes, ta.meta.dtype));
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg_of(device_.store, out));
  CAPSIM_TRY(launch(launch_unary(KernelKind::kRelu, o, ta)));
  AutogradNode node = functional_node("ReluBackward0");
  node.saved_tensors = {out};  // result
  const Variable in[] = {a};
  return finish(out, std::move(node), in);
}

Result<Variable> AutogradEngine::clone(const Variable& a) {
  CAPSIM_TRY_ASSIGN(const Tensor ta, tensor(a.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh(ta.meta.sizes, ta.meta.dtype));
  CAPSIM_TRY(copy_into(out, a.tensor));
  const Variable in[] = {a};
  return finish(out, functional_node("CloneBackward0"), in);
}

Result<Variable> AutogradEngine::to(const Variable& a, DType dtype) {
  CAPSIM_TRY_ASSIGN(const Tensor ta, tensor(a.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId out, fresh(ta.meta.sizes, dtype));
  CAPSIM_TRY(copy_into(out, a.tensor));
  const Variable in[] = {a};
  return finish(out, functional_node("ToCopyBackward0"), in);
}

Result<Variable> AutogradEngine::expand(const Variable& a, const Dims& sizes) {
  CAPSIM_TRY_ASSIGN(const Tensor ta, tensor(a.tensor));
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, capsim::expand(ta.meta, sizes));
  CAPSIM_TRY_ASSIGN(const TensorId out, view_of(a.tensor, meta));
  const Meta& in = meta_.at(a.tensor);
  meta_[out].view_base = in.view_base ? *in.view_base : a.tensor;
  meta_[out].expanded = true;
  AutogradNode node = functional_node("ExpandBackward0");
  node.saved_sizes = ta.meta.sizes;  // self_sym_sizes
  const Variable inputs[] = {a};
  return finish(out, std::move(node), inputs);
}

Result<Variable> AutogradEngine::slice(const Variable& a, std::int64_t start, std::int64_t end) {
  CAPSIM_TRY_ASSIGN(const Tensor ta, tensor(a.tensor));
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, capsim::slice(ta.meta, 0, start, end));
  const std::int64_t size = ta.meta.sizes[0];
  auto clamp = [size](std::int64_t i) {
    return std::clamp<std::int64_t>(i < 0 ? i + size : i, 0, size);
  };
  start = clamp(start);
  end = std::max(clamp(end), start);
  CAPSIM_TRY_ASSIGN(const TensorId out, view_of(a.tensor, meta));
  const Meta& in = meta_.at(a.tensor);
  meta_[out].view_base = in.view_base ? *in.view_base : a.tensor;
  meta_[out].expanded = in.expanded;
  AutogradNode node = functional_node("SliceBackward0");
  node.saved_sizes = ta.meta.sizes;  // self_sym_sizes, then dim, start, end, step
  node.saved_sizes.insert(node.saved_sizes.end(), {0, start, end, 1});
  const Variable inputs[] = {a};
  return finish(out, std::move(node), inputs);
}

// --- In-place ops ---------------------------------------------------------------

namespace {
Status check_inplace(const char* op, bool leaf_requires_grad, bool view_of_such_leaf,
                     bool expanded) {
  if (leaf_requires_grad) {
    return make_error(fmt::format(
        "{}: a leaf Variable that requires grad is being used in an in-place operation.", op));
  }
  if (view_of_such_leaf) {
    return make_error(
        fmt::format("{}: a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation.",
                    op));
  }
  if (expanded) {
    return make_error(fmt::format(
        "{}: unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location. Please clone() the tensor before performing the operation.",
        op));
  }
  return {};
}
}  // namespace

Result<Variable> AutogradEngine::rebase(const Variable& self, AutogradNode node,
                                        std::span<const Variable> inputs) {
  std::vector<std::optional<GradFn>> next = gradient_edges(inputs);
  const bool requires_grad =
      std::any_of(next.begin(), next.end(), [](const auto& e) { return e.has_value(); });
  if (!requires_grad) return variable(self.tensor);
  const std::optional<TensorId> base = meta_.at(self.tensor).view_base;
  if (!base) {
    node.inputs = {metadata_of(self.tensor)};
    CAPSIM_TRY_ASSIGN(const AutogradNodeId id, add_record(std::move(node), next));
    meta_[self.tensor].grad_fn = GradFn{id, 0};
    meta_[self.tensor].requires_grad = true;
    return variable(self.tensor);
  }
  // CopySlices(base, view, fn): edge 0 goes to the base's history, the others
  // are fn's; the view's own grad_fn becomes AsStridedBackward0 of the base.
  CAPSIM_TRY_ASSIGN(const Tensor tb, tensor(*base));
  CAPSIM_TRY_ASSIGN(const Tensor tv, tensor(self.tensor));
  AutogradNode copy_slices;
  copy_slices.kind = AutogradNodeKind::kCopySlices;
  copy_slices.name = "CopySlices";
  copy_slices.inner_name = node.name;
  copy_slices.saved_tensors = std::move(node.saved_tensors);
  copy_slices.saved_sizes = std::move(node.saved_sizes);
  copy_slices.saved_scalars = std::move(node.saved_scalars);
  copy_slices.base = geometry_of(tb.meta);
  copy_slices.view = geometry_of(tv.meta);
  copy_slices.inputs = {metadata_of(*base)};
  next[0] = gradient_edge(*base);
  CAPSIM_TRY_ASSIGN(const AutogradNodeId cs, add_record(std::move(copy_slices), next));
  meta_[*base].grad_fn = GradFn{cs, 0};
  meta_[*base].requires_grad = true;

  AutogradNode as_strided = functional_node("AsStridedBackward0");
  as_strided.base = geometry_of(tb.meta);  // self_geometry
  as_strided.view = geometry_of(tv.meta);  // size, stride, storage_offset
  as_strided.inputs = {metadata_of(self.tensor)};
  const std::optional<GradFn> to_base[] = {GradFn{cs, 0}};
  CAPSIM_TRY_ASSIGN(const AutogradNodeId view_fn, add_record(std::move(as_strided), to_base));
  meta_[self.tensor].grad_fn = GradFn{view_fn, 0};
  meta_[self.tensor].requires_grad = true;
  return variable(self.tensor);
}

Result<Variable> AutogradEngine::copy_(const Variable& self, const Variable& src) {
  CAPSIM_TRY_ASSIGN(const Variable s, variable(self.tensor));
  const Meta& m = meta_.at(self.tensor);
  const bool base_leaf = m.view_base && meta_.at(*m.view_base).accumulate.has_value() &&
                         !meta_.at(*m.view_base).grad_fn;
  CAPSIM_TRY(check_inplace("copy_", m.accumulate && !m.grad_fn, base_leaf, m.expanded));
  CAPSIM_TRY(copy_into(self.tensor, src.tensor));
  AutogradNode node;
  node.kind = AutogradNodeKind::kCopyBackwards;
  node.name = "CopyBackwards";
  const Variable in[] = {s, src};
  return rebase(s, std::move(node), in);
}

Result<Variable> AutogradEngine::mul_(const Variable& self, const Variable& other) {
  CAPSIM_TRY_ASSIGN(const Variable s, variable(self.tensor));
  const Meta& m = meta_.at(self.tensor);
  const bool base_leaf = m.view_base && meta_.at(*m.view_base).accumulate.has_value() &&
                         !meta_.at(*m.view_base).grad_fn;
  CAPSIM_TRY(check_inplace("mul_", m.accumulate && !m.grad_fn, base_leaf, m.expanded));
  // The original self is saved (cloned) for other's grad, as PyTorch's codegen does.
  CAPSIM_TRY_ASSIGN(const Tensor ts, tensor(self.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId original, fresh(ts.meta.sizes, ts.meta.dtype));
  CAPSIM_TRY(copy_into(original, self.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId product, binary(KernelKind::kMul, self.tensor, other.tensor));
  CAPSIM_TRY_ASSIGN(const Tensor tp, tensor(product));
  if (tp.meta.sizes != ts.meta.sizes) {
    return make_error(fmt::format("mul_: output with shape {} doesn't match the broadcast shape {}",
                                  ts.meta.sizes, tp.meta.sizes));
  }
  CAPSIM_TRY(copy_into(self.tensor, product));
  AutogradNode node = functional_node("MulBackward0");
  node.saved_tensors = {original, other.tensor};
  const Variable in[] = {s, other};
  return rebase(s, std::move(node), in);
}

// --- Custom functions and hooks ----------------------------------------------------

Result<Variable> AutogradEngine::apply(const CustomFunction& fn, std::span<const Variable> inputs) {
  if (inputs.empty()) return make_error(fmt::format("custom function {}: no inputs", fn.name));
  CAPSIM_TRY_ASSIGN(const Tensor first, tensor(inputs[0].tensor));
  TensorId acc = inputs[0].tensor;
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    CAPSIM_TRY_ASSIGN(const Tensor t, tensor(inputs[k].tensor));
    if (t.meta.sizes != first.meta.sizes) {
      return make_error(fmt::format("custom function {}: input {} has sizes {}, but input 0 has {}",
                                    fn.name, k, t.meta.sizes, first.meta.sizes));
    }
    CAPSIM_TRY_ASSIGN(acc, binary(KernelKind::kAdd, acc, inputs[k].tensor));
  }
  CAPSIM_TRY_ASSIGN(const TensorId out, scaled(acc, fn.factor));
  AutogradNode node;
  if (fn.kind == CustomFunctionKind::kPython) {
    node.kind = AutogradNodeKind::kPyNode;
    node.name = fn.name + "Backward";
  } else {
    node.kind = AutogradNodeKind::kCppNode;
    node.name = "CppNode<" + fn.name + ">";
    node.traceable = fn.traceable;
  }
  node.saved_scalars = {fn.factor};
  CAPSIM_TRY_ASSIGN(const Variable v, finish(out, std::move(node), inputs));
  if (v.grad_fn) functions_[v.grad_fn->node] = fn;
  return v;
}

Status AutogradEngine::register_tensor_hook(const Variable& t, float scale) {
  const std::optional<GradFn> edge = gradient_edge(t.tensor);
  if (!edge) return make_error("cannot register a hook on a tensor that doesn't require gradient");
  records_[edge->node].node.hooks.push_back(AutogradHookKind::kTensorPre);
  records_[edge->node].node.hook_inputs.resize(records_[edge->node].node.hooks.size() - 1);
  records_[edge->node].node.hook_inputs.push_back(edge->output_nr);
  hooks_[edge->node].push_back(Hook{AutogradHookKind::kTensorPre, edge->output_nr, scale});
  return {};
}

Status AutogradEngine::register_prehook(AutogradNodeId id, float scale) {
  if (id >= records_.size()) return make_error(fmt::format("no autograd node {}", id));
  records_[id].node.hooks.push_back(AutogradHookKind::kPre);
  hooks_[id].push_back(Hook{AutogradHookKind::kPre, 0, scale});
  return {};
}

Status AutogradEngine::register_posthook(AutogradNodeId id, float scale) {
  if (id >= records_.size()) return make_error(fmt::format("no autograd node {}", id));
  records_[id].node.hooks.push_back(AutogradHookKind::kPost);
  hooks_[id].push_back(Hook{AutogradHookKind::kPost, 0, scale});
  return {};
}

Status AutogradEngine::register_post_accumulate_grad_hook(const Variable& t, float scale) {
  const auto it = meta_.find(t.tensor);
  if (it == meta_.end() || !it->second.accumulate || it->second.grad_fn) {
    return make_error("post accumulate grad hooks cannot be registered on non-leaf tensors");
  }
  const AutogradNodeId id = *it->second.accumulate;
  records_[id].node.hooks.push_back(AutogradHookKind::kPostAccGrad);
  hooks_[id].push_back(Hook{AutogradHookKind::kPostAccGrad, 0, scale});
  return {};
}

const CustomFunction* AutogradEngine::custom_function(AutogradNodeId id) const {
  const auto it = functions_.find(id);
  return it == functions_.end() ? nullptr : &it->second;
}

std::optional<float> AutogradEngine::hook_scale(AutogradNodeId id, std::size_t index) const {
  const auto it = hooks_.find(id);
  if (it == hooks_.end() || index >= it->second.size()) return std::nullopt;
  return it->second[index].scale;
}

}  // namespace capsim
