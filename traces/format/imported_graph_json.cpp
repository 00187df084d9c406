#include "traces/format/imported_graph_json.hpp"

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
  Json j = {{"sizes", in.sizes}, {"dtype", std::string(dtype_name(in.dtype))}};
  if (in.subclass) j["subclass"] = true;
  return j;
}

Result<ImportedInput> read_input(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  ImportedInput in;
  CAPSIM_TRY_ASSIGN(in.sizes, sizes_at(r, "sizes"));
  CAPSIM_TRY_ASSIGN(in.dtype, dtype_at(r, "dtype"));
  if (r.has("subclass")) {
    CAPSIM_TRY_ASSIGN(in.subclass, r.boolean("subclass"));
  }
  CAPSIM_TRY(r.finish());
  return in;
}

Json tensor_json(const ImportedTensor& t) {
  Json j = {{"name", t.name}, {"sizes", t.sizes}, {"dtype", std::string(dtype_name(t.dtype))}};
  if (t.requires_grad) j["requires_grad"] = true;
  if (t.grad_defined) j["grad_defined"] = true;
  if (t.subclass) j["subclass"] = true;
  return j;
}

Result<ImportedTensor> read_tensor(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  ImportedTensor t;
  CAPSIM_TRY_ASSIGN(t.name, name_at(r, "name"));
  CAPSIM_TRY_ASSIGN(t.sizes, sizes_at(r, "sizes"));
  // The same bound as a new_tensor's shape (the World keeps only its
  // metadata).
  if (const Status s = check_shape_sizes(t.sizes); !s.ok()) {
    return field_error(r.path_of("sizes"), s.error().message);
  }
  CAPSIM_TRY_ASSIGN(t.dtype, dtype_at(r, "dtype"));
  if (r.has("requires_grad")) {
    CAPSIM_TRY_ASSIGN(t.requires_grad, r.boolean("requires_grad"));
  }
  if (r.has("grad_defined")) {
    CAPSIM_TRY_ASSIGN(t.grad_defined, r.boolean("grad_defined"));
  }
  if (r.has("subclass")) {
    CAPSIM_TRY_ASSIGN(t.subclass, r.boolean("subclass"));
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

// A constant's text (node-line form): docs/trace-format.md §5.1 says why 64 KiB.
constexpr std::size_t kMaxConstantBytes = std::size_t{64} << 10;

Json field_json(const ImportedField& f) {
  using K = CollectedField::Kind;
  switch (f.kind) {
    case K::kNone: return nullptr;
    case K::kTensor:
      return f.packed ? Json{{"tensor", *f.tensors.at(0)}, {"packed", true}}
                      : Json{{"tensor", *f.tensors.at(0)}};
    case K::kTensorList: {
      Json names = Json::array();
      for (const auto& t : f.tensors) names.push_back(t ? Json(*t) : Json(nullptr));
      return {{"tensors", std::move(names)}};
    }
    case K::kSymInt: return {{"symint", f.sizes.at(0)}};
    case K::kSymInts: return {{"symints", f.sizes}};
    case K::kSymIntLists: {
      Json lists = Json::array();
      std::size_t at = 0;
      for (const std::uint32_t n : f.list_lengths) {
        lists.push_back(std::vector<std::int64_t>(f.sizes.begin() + at, f.sizes.begin() + at + n));
        at += n;
      }
      return {{"symint_lists", std::move(lists)}};
    }
    case K::kConstant: return {{"const", f.text}};
    case K::kUnknown: return {{"unknown", f.text}};
  }
  return nullptr;
}

// symint_lists: an array of integer arrays, at most kMaxPerNode sizes in all.
Status read_symint_lists(ObjectReader& r, ImportedField& f) {
  CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "symint_lists", kMaxPerNode));
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& list = (*v)[i];
    const std::string path = at(r.path_of("symint_lists"), i);
    if (!list.is_array()) return field_error(path, "expected an array of sizes");
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (!list[k].is_number_integer()) return field_error(at(path, k), "expected an integer");
      f.sizes.push_back(list[k].get<std::int64_t>());
    }
    f.list_lengths.push_back(static_cast<std::uint32_t>(list.size()));
    if (f.sizes.size() > kMaxPerNode) {
      return field_error(r.path_of("symint_lists"), fmt::format("more than {} sizes", kMaxPerNode));
    }
  }
  return {};
}

Result<std::string> constant_at(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY_ASSIGN(std::string s, r.string(key));
  if (s.empty() || s.size() > kMaxConstantBytes) {
    return field_error(r.path_of(key), fmt::format("{} bytes: a constant has 1 to {}", s.size(),
                                                   kMaxConstantBytes));
  }
  for (const char c : s) {
    if (c < 0x20 || c > 0x7e) return field_error(r.path_of(key), "not printable ASCII");
  }
  return s;
}

Result<ImportedField> read_field(const Json& j, std::string path) {
  using K = CollectedField::Kind;
  ImportedField f;
  if (j.is_null()) return f;
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, path));
  if (r.has("tensor")) {
    f.kind = K::kTensor;
    CAPSIM_TRY_ASSIGN(std::string name, name_at(r, "tensor"));
    f.tensors.emplace_back(std::move(name));
    if (r.has("packed")) {
      CAPSIM_TRY_ASSIGN(f.packed, r.boolean("packed"));
    }
  } else if (r.has("tensors")) {
    f.kind = K::kTensorList;
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "tensors", kMaxPerNode));
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Json& t = (*v)[i];
      if (t.is_null()) {
        f.tensors.emplace_back();
      } else if (t.is_string() && !t.get<std::string>().empty() &&
                 t.get<std::string>().size() <= kMaxNameBytes) {
        f.tensors.emplace_back(t.get<std::string>());
      } else {
        return field_error(at(r.path_of("tensors"), i), "expected a tensor name or null");
      }
    }
  } else if (r.has("symint")) {
    f.kind = K::kSymInt;
    CAPSIM_TRY_ASSIGN(const std::int64_t v, r.integer("symint"));
    f.sizes.push_back(v);
  } else if (r.has("symints")) {
    f.kind = K::kSymInts;
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "symints", kMaxPerNode));
    (void)v;
    CAPSIM_TRY_ASSIGN(f.sizes, r.integer_list("symints"));
  } else if (r.has("symint_lists")) {
    f.kind = K::kSymIntLists;
    CAPSIM_TRY(read_symint_lists(r, f));
  } else if (r.has("const")) {
    f.kind = K::kConstant;
    CAPSIM_TRY_ASSIGN(f.text, constant_at(r, "const"));
  } else if (r.has("unknown")) {
    f.kind = K::kUnknown;
    CAPSIM_TRY_ASSIGN(f.text, constant_at(r, "unknown"));
  } else {
    return field_error(path,
                       "expected null or one of tensor, tensors, symint, symints, symint_lists, "
                       "const, unknown");
  }
  CAPSIM_TRY(r.finish());
  return f;
}

Json geometry_json(const TensorGeometry& g) {
  return {{"sizes", g.sizes}, {"strides", g.strides}, {"storage_offset", g.storage_offset}};
}

Result<TensorGeometry> read_geometry(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  TensorGeometry g;
  CAPSIM_TRY_ASSIGN(g.sizes, sizes_at(r, "sizes"));
  CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "strides", kMaxRank));
  (void)v;
  CAPSIM_TRY_ASSIGN(g.strides, r.integer_list("strides"));
  if (g.strides.size() != g.sizes.size()) {
    return field_error(r.path_of("strides"),
                       fmt::format("{} strides for {} sizes", g.strides.size(), g.sizes.size()));
  }
  CAPSIM_TRY_ASSIGN(g.storage_offset, r.integer("storage_offset"));
  if (g.storage_offset < 0) return field_error(r.path_of("storage_offset"), "negative offset");
  CAPSIM_TRY(r.finish());
  return g;
}

// --- aot_backward: a region's backward graph ----------------------------------

// Limits on one region's backward graph.
constexpr std::size_t kMaxAotNodes = 4096;
constexpr std::size_t kMaxArgDepth = 8;

Json arg_json(const FxArg& a) {
  using K = FxArg::Kind;
  switch (a.kind) {
    case K::kNone: return nullptr;
    case K::kNode: return {{"node", a.node}};
    case K::kInt: return a.i;
    case K::kFloat: return a.f;
    case K::kBool: return a.b;
    case K::kString: return {{"str", a.text()}};
    case K::kVerbatim: return {{"verbatim", a.text()}};
    case K::kList:
    case K::kTuple: {
      Json items = Json::array();
      for (const FxArg& x : a.items()) items.push_back(arg_json(x));
      return a.kind == K::kList ? items : Json{{"tuple", std::move(items)}};
    }
    case K::kKeyword: return arg_json(a.items().at(0));
  }
  return nullptr;
}

// One argument; a reference must name a placeholder or an earlier node
// (`defined` of them).
Result<FxArg> read_arg(const Json& j, const std::string& path, std::size_t defined,
                       std::size_t depth) {
  if (depth > kMaxArgDepth) return field_error(path, "arguments nested too deep");
  if (j.is_null()) return FxArg::none();
  if (j.is_boolean()) return FxArg::boolean(j.get<bool>());
  if (j.is_number_integer()) return FxArg::integer(j.get<std::int64_t>());
  if (j.is_number_float()) return FxArg::real(j.get<double>());
  if (j.is_array()) {
    if (j.size() > kMaxPerNode) return field_error(path, "too many entries");
    std::vector<FxArg> items;
    for (std::size_t i = 0; i < j.size(); ++i) {
      CAPSIM_TRY_ASSIGN(FxArg x, read_arg(j[i], at(path, i), defined, depth + 1));
      items.push_back(std::move(x));
    }
    return FxArg::of(std::move(items));
  }
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, path));
  FxArg out;
  if (r.has("node")) {
    CAPSIM_TRY_ASSIGN(const std::int64_t k, r.integer("node"));
    if (k < 0 || static_cast<std::size_t>(k) >= defined) {
      return field_error(
          r.path_of("node"),
          fmt::format("{} refers to no value defined before it ({} are)", k, defined));
    }
    out = FxArg::ref(static_cast<FxNodeId>(k));
  } else if (r.has("tuple")) {
    CAPSIM_TRY_ASSIGN(const Json* v, r.value("tuple"));
    CAPSIM_TRY_ASSIGN(FxArg items, read_arg(*v, r.path_of("tuple"), defined, depth + 1));
    if (items.kind != FxArg::Kind::kList)
      return field_error(r.path_of("tuple"), "expected an array");
    out = FxArg::tuple(std::move(items.mutable_items()));
  } else if (r.has("str")) {
    CAPSIM_TRY_ASSIGN(std::string s, constant_at(r, "str"));
    out = FxArg::string(std::move(s));
  } else if (r.has("verbatim")) {
    CAPSIM_TRY_ASSIGN(std::string s, constant_at(r, "verbatim"));
    out = FxArg::verbatim(std::move(s));
  } else {
    return field_error(path,
                       "expected null, a number, a boolean, an array, or one of node, "
                       "tuple, str, verbatim");
  }
  CAPSIM_TRY(r.finish());
  return out;
}

Json aot_json(const AotBackwardBody& b) {
  Json nodes = Json::array();
  for (const FxNode& n : b.nodes) {
    Json args = Json::array();
    Json kwargs = Json::object();
    for (const FxArg& a : n.args) {
      if (a.kind == FxArg::Kind::kKeyword) {
        kwargs[a.text()] = arg_json(a);
      } else {
        args.push_back(arg_json(a));
      }
    }
    Json node = {{"target", n.target}, {"args", std::move(args)}};
    if (!kwargs.empty()) node["kwargs"] = std::move(kwargs);
    nodes.push_back(std::move(node));
  }
  Json outputs = Json::array();
  for (const FxArg& a : b.outputs) outputs.push_back(arg_json(a));
  Json epilogue = nullptr;
  if (b.epilogue) {
    epilogue = Json::array();
    for (const std::int64_t e : *b.epilogue) {
      epilogue.push_back(e < 0 ? Json{{"subclass", true}} : Json{{"plain", e}});
    }
  }
  return {{"placeholders", b.placeholders},
          {"symints", b.symints},
          {"nodes", std::move(nodes)},
          {"outputs", std::move(outputs)},
          {"epilogue", std::move(epilogue)}};
}

Result<FxNode> read_aot_node(const Json& j, const std::string& path, std::size_t defined) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, path));
  FxNode n;
  CAPSIM_TRY_ASSIGN(n.target, constant_at(r, "target"));
  CAPSIM_TRY_ASSIGN(const Json* args, array_of(r, "args", kMaxPerNode));
  for (std::size_t i = 0; i < args->size(); ++i) {
    CAPSIM_TRY_ASSIGN(FxArg a, read_arg((*args)[i], at(r.path_of("args"), i), defined, 0));
    n.args.push_back(std::move(a));
  }
  if (r.has("kwargs")) {
    CAPSIM_TRY_ASSIGN(const Json* kwargs, r.value("kwargs"));
    if (!kwargs->is_object()) return field_error(r.path_of("kwargs"), "expected an object");
    for (const auto& [key, value] : kwargs->items()) {
      const std::string where = r.path_of("kwargs") + "." + key;
      CAPSIM_TRY_ASSIGN(FxArg a, read_arg(value, where, defined, 0));
      n.args.push_back(FxArg::keyword(key, std::move(a)));
    }
  }
  CAPSIM_TRY(r.finish());
  return n;
}

Result<AotBackwardBody> read_aot_backward(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  AotBackwardBody b;
  CAPSIM_TRY_ASSIGN(const std::int64_t placeholders, r.integer("placeholders"));
  CAPSIM_TRY_ASSIGN(const std::int64_t symints, r.integer("symints"));
  if (placeholders < 0 || placeholders > static_cast<std::int64_t>(kMaxPerNode)) {
    return field_error(r.path_of("placeholders"), fmt::format("{} is out of range", placeholders));
  }
  if (symints < 0 || symints > placeholders) {
    return field_error(r.path_of("symints"),
                       fmt::format("{} symints for {} placeholders", symints, placeholders));
  }
  b.placeholders = static_cast<std::uint32_t>(placeholders);
  b.symints = static_cast<std::uint32_t>(symints);
  CAPSIM_TRY_ASSIGN(const Json* nodes, array_of(r, "nodes", kMaxAotNodes));
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    CAPSIM_TRY_ASSIGN(FxNode n,
                      read_aot_node((*nodes)[i], at(r.path_of("nodes"), i), b.placeholders + i));
    b.nodes.push_back(std::move(n));
  }
  const std::size_t defined = b.placeholders + b.nodes.size();
  CAPSIM_TRY_ASSIGN(const Json* outputs, array_of(r, "outputs", kMaxPerNode));
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    CAPSIM_TRY_ASSIGN(FxArg a, read_arg((*outputs)[i], at(r.path_of("outputs"), i), defined, 0));
    b.outputs.push_back(std::move(a));
  }
  CAPSIM_TRY_ASSIGN(const Json* epilogue, r.value("epilogue"));
  if (!epilogue->is_null()) {
    CAPSIM_TRY_ASSIGN(const Json* e, array_of(r, "epilogue", kMaxPerNode));
    b.epilogue.emplace();
    for (std::size_t i = 0; i < e->size(); ++i) {
      CAPSIM_TRY_ASSIGN(ObjectReader er, ObjectReader::of((*e)[i], at(r.path_of("epilogue"), i)));
      if (er.has("subclass")) {
        CAPSIM_TRY_ASSIGN(const bool sub, er.boolean("subclass"));
        if (!sub) return field_error(er.path_of("subclass"), "expected true");
        b.epilogue->push_back(-1);
      } else {
        CAPSIM_TRY_ASSIGN(const std::int64_t plain, er.integer("plain"));
        if (plain < 0 || static_cast<std::size_t>(plain) >= b.outputs.size()) {
          return field_error(er.path_of("plain"),
                             fmt::format("output {} of {}", plain, b.outputs.size()));
        }
        b.epilogue->push_back(plain);
      }
      CAPSIM_TRY(er.finish());
    }
  }
  CAPSIM_TRY(r.finish());
  return b;
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
  if (!n.input_ranges.empty()) j["input_ranges"] = n.input_ranges;
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
  if (n.function) j["function"] = *n.function;
  if (n.base) j["base"] = geometry_json(*n.base);
  if (n.view) j["view"] = geometry_json(*n.view);
  if (!n.variable.empty()) j["variable"] = n.variable;
  if (n.aot_backward) j["aot_backward"] = aot_json(*n.aot_backward);
  if (n.saved_values) {
    Json fields = Json::array();
    for (const ImportedField& f : *n.saved_values) fields.push_back(field_json(f));
    j["saved_values"] = std::move(fields);
  }
  return j;
}

// What the node saved for its backward (names, sizes, scalars) and its hooks.
Status read_node_saved(ObjectReader& r, ImportedNode& n) {
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
  return {};
}

// What the node points to beyond its edges: the inner function, a Python
// Function's class, CopySlices' base and view, the variable, an AOT backward
// and its saved values. Each may stand only on the kinds that have it.
Status read_node_links(ObjectReader& r, ImportedNode& n) {
  if (r.has("inner")) {
    CAPSIM_TRY_ASSIGN(n.inner, name_at(r, "inner"));
  }
  if (r.has("function")) {
    CAPSIM_TRY_ASSIGN(const std::int64_t f, r.integer("function"));
    if (f < 0 || f >= static_cast<std::int64_t>(kMaxRecordedNodes)) {
      return field_error(r.path_of("function"), fmt::format("{} is out of range", f));
    }
    if (n.kind != AutogradNodeKind::kPyNode && n.kind != AutogradNodeKind::kAotBackward) {
      return field_error(r.path_of("function"), "only a Python Function's node has a class");
    }
    n.function = static_cast<std::uint32_t>(f);
  }
  for (const char* key : {"base", "view"}) {
    if (!r.has(key)) continue;
    CAPSIM_TRY_ASSIGN(const Json* v, r.value(key));
    CAPSIM_TRY_ASSIGN(TensorGeometry g, read_geometry(*v, r.path_of(key)));
    (std::string_view(key) == "base" ? n.base : n.view) = std::move(g);
  }
  if (n.base.has_value() != n.view.has_value()) {
    return field_error(r.path_of(n.base ? "view" : "base"), "base and view come together");
  }
  if (n.base && n.kind != AutogradNodeKind::kCopySlices) {
    return field_error(r.path_of("base"), "only CopySlices has a base and a view");
  }
  if (r.has("variable")) {
    CAPSIM_TRY_ASSIGN(n.variable, name_at(r, "variable"));
  }
  if (r.has("aot_backward")) {
    if (n.kind != AutogradNodeKind::kAotBackward) {
      return field_error(r.path_of("aot_backward"), "only an AOT backward has a backward graph");
    }
    CAPSIM_TRY_ASSIGN(const Json* v, r.value("aot_backward"));
    CAPSIM_TRY_ASSIGN(n.aot_backward, read_aot_backward(*v, r.path_of("aot_backward")));
  }
  if (r.has("saved_values")) {
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "saved_values", kMaxPerNode));
    n.saved_values.emplace();
    for (std::size_t i = 0; i < v->size(); ++i) {
      CAPSIM_TRY_ASSIGN(ImportedField f, read_field((*v)[i], at(r.path_of("saved_values"), i)));
      n.saved_values->push_back(std::move(f));
    }
  }
  return {};
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
  if (r.has("input_ranges")) {
    CAPSIM_TRY_ASSIGN(const Json* v, array_of(r, "input_ranges", kMaxPerNode));
    (void)v;
    CAPSIM_TRY_ASSIGN(n.input_ranges, r.index_list("input_ranges"));
    std::size_t edges = 0;
    for (const std::uint32_t k : n.input_ranges) edges += k;
    if (edges != n.next.size()) {
      return field_error(r.path_of("input_ranges"),
                         fmt::format("spans {} edges, the node has {}", edges, n.next.size()));
    }
  }
  CAPSIM_TRY(read_node_saved(r, n));
  CAPSIM_TRY(read_node_links(r, n));
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
