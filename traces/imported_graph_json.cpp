#include "traces/imported_graph_json.hpp"

#include <fmt/format.h>

#include "sim/core/function_def.hpp"

namespace capsim {
namespace {

// Names are at most this long (the same limit as program_json's).
constexpr std::size_t kMaxNameBytes = 256;
// Per node: outputs, inputs, saved values and hooks.
constexpr std::size_t kMaxPerNode = 4096;

std::string at(std::string_view path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

Result<const Json*> array_of(ObjectReader& r, std::string_view key, std::size_t limit) {
  CAPSIM_TRY_ASSIGN(const Json* v, r.value(key));
  if (!v->is_array()) return field_error(r.path_of(key), "expected an array");
  if (v->size() > limit) {
    return field_error(r.path_of(key),
                       fmt::format("{} entries, the limit is {}", v->size(), limit));
  }
  return v;
}

Result<std::string> name_at(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY_ASSIGN(std::string s, r.string(key));
  if (s.empty()) return field_error(r.path_of(key), "empty name");
  if (s.size() > kMaxNameBytes) {
    return field_error(r.path_of(key),
                       fmt::format("name of {} bytes, the limit is {}", s.size(), kMaxNameBytes));
  }
  return s;
}

Result<Dims> sizes_at(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, key, kMaxRank));
  (void)v;
  CAPSIM_TRY_ASSIGN(Dims sizes, r.integer_list(key));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) return field_error(at(r.path_of(key), i), "negative size");
  }
  return sizes;
}

Result<DType> dtype_at(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY_ASSIGN(const std::string name, r.string(key));
  using Enum = DType;
  return from_name<Enum>(name, r.path_of(key), "dtype", {CAPSIM_DTYPES(CAPSIM_PAIR_)});
}

Json input_json(const ImportedInput& in) {
  return {{"sizes", in.sizes}, {"dtype", std::string(dtype_name(in.dtype))}};
}

Result<ImportedInput> read_input(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  ImportedInput in;
  CAPSIM_TRY_ASSIGN(in.sizes, sizes_at(r, "sizes"));
  CAPSIM_TRY_ASSIGN(in.dtype, dtype_at(r, "dtype"));
  CAPSIM_TRY(r.finish());
  return in;
}

Json tensor_json(const ImportedTensor& t) {
  Json j = {{"name", t.name}, {"sizes", t.sizes}, {"dtype", std::string(dtype_name(t.dtype))}};
  if (t.requires_grad) j["requires_grad"] = true;
  if (t.grad_defined) j["grad_defined"] = true;
  return j;
}

Result<ImportedTensor> read_tensor(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  ImportedTensor t;
  CAPSIM_TRY_ASSIGN(t.name, name_at(r, "name"));
  CAPSIM_TRY_ASSIGN(t.sizes, sizes_at(r, "sizes"));
  // The same bound as a new_tensor's, so that a recorded tensor could be
  // materialised one day (the World keeps only its metadata today).
  if (const Status s = check_value_sizes(t.sizes); !s.ok()) {
    return field_error(r.path_of("sizes"), s.error().message);
  }
  CAPSIM_TRY_ASSIGN(t.dtype, dtype_at(r, "dtype"));
  if (r.has("requires_grad")) {
    CAPSIM_TRY_ASSIGN(t.requires_grad, r.boolean("requires_grad"));
  }
  if (r.has("grad_defined")) {
    CAPSIM_TRY_ASSIGN(t.grad_defined, r.boolean("grad_defined"));
  }
  CAPSIM_TRY(r.finish());
  return t;
}

Json next_json(const std::optional<NextEdge>& e) {
  if (!e) return nullptr;
  return Json::array({e->target, e->input_nr});
}

Result<std::optional<NextEdge>> read_next(const Json& j, const std::string& path) {
  if (j.is_null()) return std::optional<NextEdge>{};
  if (!j.is_array() || j.size() != 2) {
    return field_error(path, "expected [node, input_nr] or null");
  }
  NextEdge e;
  for (std::size_t k = 0; k < 2; ++k) {
    CAPSIM_TRY_ASSIGN(const std::int64_t v, json_integer(j[k], at(path, k)));
    if (v < 0 || v >= static_cast<std::int64_t>(kMaxRecordedNodes)) {
      return field_error(at(path, k), fmt::format("{} is out of range", v));
    }
    (k == 0 ? e.target : e.input_nr) = static_cast<std::uint32_t>(v);
  }
  return std::optional<NextEdge>{e};
}

Json node_json(const ImportedNode& n) {
  Json j = Json::object();
  j["name"] = n.name;
  j["kind"] = std::string(autograd_node_kind_name(n.kind));
  Json inputs = Json::array();
  for (const ImportedInput& in : n.inputs) inputs.push_back(input_json(in));
  j["inputs"] = std::move(inputs);
  Json next = Json::array();
  for (const auto& e : n.next) next.push_back(next_json(e));
  j["next"] = std::move(next);
  if (!n.saved.empty()) j["saved"] = n.saved;
  if (!n.saved_sizes.empty()) j["saved_sizes"] = n.saved_sizes;
  if (!n.saved_scalars.empty()) {
    Json scalars = Json::array();
    for (float f : n.saved_scalars) scalars.push_back(float_json(f));
    j["saved_scalars"] = std::move(scalars);
  }
  if (!n.hooks.empty()) {
    Json hooks = Json::array();
    for (AutogradHookKind h : n.hooks) hooks.push_back(std::string(autograd_hook_kind_name(h)));
    j["hooks"] = std::move(hooks);
  }
  if (!n.inner.empty()) j["inner"] = n.inner;
  if (!n.variable.empty()) j["variable"] = n.variable;
  return j;
}

Result<ImportedNode> read_node(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  ImportedNode n;
  CAPSIM_TRY_ASSIGN(n.name, name_at(r, "name"));
  {
    CAPSIM_TRY_ASSIGN(const std::string kind, r.string("kind"));
    using Enum = AutogradNodeKind;
    CAPSIM_TRY_ASSIGN(n.kind, from_name<Enum>(kind, r.path_of("kind"), "autograd node kind",
                                              {CAPSIM_AUTOGRAD_NODE_KINDS(CAPSIM_PAIR_)}));
  }
  if (n.kind == AutogradNodeKind::kGraphRoot) {
    return field_error(r.path_of("kind"), "GraphRoot is added by the backward, not recorded");
  }
  CAPSIM_TRY_ASSIGN(const Json* inputs, array_of(r, "inputs", kMaxPerNode));
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    CAPSIM_TRY_ASSIGN(ImportedInput in, read_input((*inputs)[i], at(r.path_of("inputs"), i)));
    n.inputs.push_back(std::move(in));
  }
  CAPSIM_TRY_ASSIGN(const Json* next, array_of(r, "next", kMaxPerNode));
  for (std::size_t i = 0; i < next->size(); ++i) {
    CAPSIM_TRY_ASSIGN(auto e, read_next((*next)[i], at(r.path_of("next"), i)));
    n.next.push_back(e);
  }
  if (r.has("saved")) {
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "saved", kMaxPerNode));
    (void)v;
    CAPSIM_TRY_ASSIGN(n.saved, r.string_list("saved"));
  }
  if (r.has("saved_sizes")) {
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "saved_sizes", kMaxPerNode));
    (void)v;
    CAPSIM_TRY_ASSIGN(n.saved_sizes, r.integer_list("saved_sizes"));
  }
  if (r.has("saved_scalars")) {
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "saved_scalars", kMaxPerNode));
    for (std::size_t i = 0; i < v->size(); ++i) {
      CAPSIM_TRY_ASSIGN(const float f, json_float32((*v)[i], at(r.path_of("saved_scalars"), i)));
      n.saved_scalars.push_back(f);
    }
  }
  if (r.has("hooks")) {
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "hooks", kMaxPerNode));
    (void)v;
    CAPSIM_TRY_ASSIGN(const std::vector<std::string> hooks, r.string_list("hooks"));
    for (std::size_t i = 0; i < hooks.size(); ++i) {
      using Enum = AutogradHookKind;
      CAPSIM_TRY_ASSIGN(const AutogradHookKind h,
                        from_name<Enum>(hooks[i], at(r.path_of("hooks"), i), "hook kind",
                                        {CAPSIM_AUTOGRAD_HOOK_KINDS(CAPSIM_PAIR_)}));
      n.hooks.push_back(h);
    }
  }
  if (r.has("inner")) {
    CAPSIM_TRY_ASSIGN(n.inner, name_at(r, "inner"));
  }
  if (r.has("variable")) {
    CAPSIM_TRY_ASSIGN(n.variable, name_at(r, "variable"));
  }
  CAPSIM_TRY(r.finish());
  return n;
}

}  // namespace

void write_recorded_graph(Json& j, const DefineAutogradGraph& a) {
  j["name"] = a.name;
  j["root"] = a.root;
  Json tensors = Json::array();
  for (const ImportedTensor& t : a.tensors) tensors.push_back(tensor_json(t));
  j["tensors"] = std::move(tensors);
  Json nodes = Json::array();
  for (const ImportedNode& n : a.nodes) nodes.push_back(node_json(n));
  j["nodes"] = std::move(nodes);
}

Status read_imported_graph(ObjectReader& r, DefineAutogradGraph& a) {
  CAPSIM_TRY_ASSIGN(a.name, name_at(r, "name"));
  CAPSIM_TRY_ASSIGN(const std::int64_t root, r.integer("root"));
  if (root < 0 || root >= static_cast<std::int64_t>(kMaxRecordedNodes)) {
    return field_error(r.path_of("root"), fmt::format("{} is out of range", root));
  }
  a.root = static_cast<std::uint32_t>(root);
  CAPSIM_TRY_ASSIGN(const Json* tensors, array_of(r, "tensors", kMaxRecordedTensors));
  for (std::size_t i = 0; i < tensors->size(); ++i) {
    CAPSIM_TRY_ASSIGN(ImportedTensor t, read_tensor((*tensors)[i], at(r.path_of("tensors"), i)));
    a.tensors.push_back(std::move(t));
  }
  CAPSIM_TRY_ASSIGN(const Json* nodes, array_of(r, "nodes", kMaxRecordedNodes));
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    CAPSIM_TRY_ASSIGN(ImportedNode n, read_node((*nodes)[i], at(r.path_of("nodes"), i)));
    a.nodes.push_back(std::move(n));
  }
  return {};
}

void write_compiled_backward(Json& j, const CompiledBackward& a) {
  j["graph"] = a.graph;
  j["dynamic"] = a.dynamic;
}

Status read_compiled_backward(ObjectReader& r, CompiledBackward& a) {
  CAPSIM_TRY_ASSIGN(a.graph, name_at(r, "graph"));
  CAPSIM_TRY_ASSIGN(a.dynamic, r.boolean("dynamic"));
  return {};
}

}  // namespace capsim
