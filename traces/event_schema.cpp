#include "traces/event_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace capsim {

std::string_view field_type_name(FieldType type) {
  switch (type) {
#define CAPSIM_NAME_(e, name, json) \
  case FieldType::e: return name;
    CAPSIM_FIELD_TYPES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::string_view field_type_json(FieldType type) {
  switch (type) {
#define CAPSIM_JSON_(e, name, json) \
  case FieldType::e: return json;
    CAPSIM_FIELD_TYPES(CAPSIM_JSON_)
#undef CAPSIM_JSON_
  }
  return "?";
}

namespace {

using FT = FieldType;

constexpr FieldSpec kFieldSpecs[] = {
    {"function", FT::kText, "the compiled function's name"},
    {"fid", FT::kInt, "FunctionId: the tree manager's index of the compiled function", kIdRange},
    {"int_key", FT::kIntList, "the symint inputs the function was compiled for"},
    {"static_input_idxs", FT::kIntList, "compile-time static inputs after alignment filtering",
     kIndexRange},
    {"recompile", FT::kBool, "a guard failed and Dynamo recompiled"},
    {"reason", FT::kText, "an enumerated reason (per kind, see the kind's table)"},
    {"node", FT::kInt, "a tree node id (warmup nodes are negative)", kNodeIdRange},
    {"depth", FT::kInt, "the node's depth in the tree (0 for a root)", kDepthRange},
    {"graph", FT::kInt, "a recorded CUDAGraphNode's id (graph_counter order)", kIdRange},
    {"parent", FT::kIntOrNone, "the parent graph id, or null for a root", kIdRange},
    {"static", FT::kIntList, "static_input_idxs of the recording", kIndexRange},
    {"managed", FT::kIntList, "cudagraph_managed_idxs: inputs that are outputs of the path",
     kIndexRange},
    {"non_static", FT::kIntList, "non_static_input_idxs: inputs copied in at each replay",
     kIndexRange},
    {"steps", FT::kInt, "steps (kernels and copies) in the recorded graph", kStepsRange},
    {"static_ptrs", FT::kAddressList, "data pointers at the static positions, in index order"},
    {"input", FT::kInt, "an input index", kIndexRange},
    {"inputs", FT::kIntList, "input indices (the mutated inputs that block cudagraphs)",
     kIndexRange},
    {"old_ptr", FT::kAddress, "the pointer the recording baked in"},
    {"new_ptr", FT::kAddress, "the pointer the call passed"},
    {"api", FT::kText, "\"plain\" for torch.cuda.graph / make_graphed_callables"},
    {"matches_eager", FT::kBool, "capsim diagnostic, never in a trace"},
    {"copies", FT::kInt, "tensors copied into placeholders", kIndexRange},
    {"bytes", FT::kInt, "bytes those copies moved", kBytesRange},
    {"count", FT::kInt, "the checkpoint counter (debug_checkpointing_counter)", kCountRange},
    {"live", FT::kInt, "storages kept live by the checkpoint", kCountRange},
    {"pool_blocks_before", FT::kInt, "live blocks of the pool before the restore", kCountRange},
    {"pool_blocks_after", FT::kInt, "live blocks of the pool after the restore", kCountRange},
    {"poisoned", FT::kInt, "tensors whose storage was marked deallocated", kCountRange},
    {"freed", FT::kInt, "storages freed", kCountRange},
    {"name", FT::kText, "a program name (tensor, output or optimizer)"},
    {"ptr", FT::kAddress, "the output's data pointer"},
    {"numel", FT::kInt, "elements read", kBytesRange},
    {"digest", FT::kDigest,
     "FNV-1a 64 of the float32 bytes read (ca_run: every leaf's .grad; device: every range the "
     "graph writes, after the replay)"},
    {"values", FT::kText, "a preview of the first values, for people"},
    {"demoted", FT::kBool, "the input left the static set"},
    {"id", FT::kText, "capsim's id of the PyTorch message (E1..E7, S1, W1, Z1, A1, E5)"},
    {"exception", FT::kText, "the Python exception type"},
    {"message", FT::kText, "PyTorch's exact text"},
    {"where", FT::kText, "which pool check raised, or which tree path raised E1"},
    {"what", FT::kText, "created, traced or dropped"},
    {"kind", FT::kText, "the optimizer kind: sgd, adam or adamw"},
    {"params", FT::kInt, "params the optimizer holds", kCountRange},
    {"static_params", FT::kInt, "params marked static when the step was traced", kCountRange},
    {"static_state", FT::kInt, "state tensors marked static", kCountRange},
    {"static_grads", FT::kInt, "grads that were static (mark_static_address)", kCountRange},
    {"params_alive", FT::kInt, "param storages still alive after the drop", kCountRange},
    {"state_alive", FT::kInt, "optimizer state storages still alive after the drop", kCountRange},
    {"set_to_none", FT::kBool, "zero_grad's argument"},
    {"grads", FT::kInt, "grads that zero_grad changed", kCountRange},
    {"graphs", FT::kInt, "recorded graphs the tree manager held", kCountRange},
    {"backward", FT::kInt, "compiled autograd: the backward's index in the scenario run, from 0",
     kIdRange},
    {"node_calls", FT::kInt, "NodeCalls in the backward's ordered_calls", kCountRange},
    {"autograd_node", FT::kText, "an autograd node's name (MulBackward0, AccumulateGrad, ...)"},
    {"call", FT::kInt, "a NodeCall id: the node's position in ordered_calls", kIdRange},
    {"metadata", FT::kText, "the proxy metadata read: sizes, strides, dtype, device or use_count"},
    {"mode", FT::kText, "the capture mode: functional (after PR 144707) or legacy (before)"},
    {"graph_nodes", FT::kInt, "nodes of the captured FX graph", kCountRange},
    {"graph_digest", FT::kDigest, "FNV-1a 64 of the captured FX graph's text form"},
    {"leaves", FT::kInt, "leaves whose .grad the compiled backward produced", kCountRange},
    {"baked", FT::kInt, "pointer arguments baked into the replayed graph", kCountRange},
    {"baked_digest", FT::kDigest,
     "FNV-1a 64 of each baked pointer's (step, argument, address, bytes) as 64-bit words"},
    {"captured", FT::kBool, "compiled autograd captured a new graph (a cache miss)"},
    {"targets", FT::kTextList,
     "the captured graph's call targets in graph order (compared in canonical names, "
     "docs/fidelity.md)"},
    {"uses", FT::kIntLists,
     "per call of `targets`, the calls its arguments refer to (indices into `targets`; compared "
     "as canonical dataflow, docs/fidelity.md)",
     kIndexRange},
};

// Per kind, in the order the simulator writes them. `true` marks a field
// every event of the kind carries.
#define R(key)    \
  EventFieldUse { \
    key, true     \
  }
#define O(key)    \
  EventFieldUse { \
    key, false    \
  }
constexpr EventFieldUse kCompile[] = {R("function"),          O("fid"),       O("int_key"),
                                      O("static_input_idxs"), O("recompile"), O("reason")};
constexpr EventFieldUse kWarmup[] = {R("fid"), R("function"), R("node"), R("depth")};
constexpr EventFieldUse kRecord[] = {O("fid"),     R("function"),    O("api"),     O("graph"),
                                     O("parent"),  O("static"),      O("managed"), O("non_static"),
                                     R("steps"),   O("static_ptrs"), O("reason"),  O("input"),
                                     O("old_ptr"), O("new_ptr")};
constexpr EventFieldUse kReplay[] = {O("fid"),   R("function"),    O("api"),
                                     O("graph"), O("static_ptrs"), O("matches_eager")};
constexpr EventFieldUse kCopyIn[] = {O("fid"), R("function"), O("graph"), R("copies"), R("bytes")};
constexpr EventFieldUse kEager[] = {O("fid"), R("function"), R("reason")};
constexpr EventFieldUse kCheckpoint[] = {R("count"), R("node"), R("live"), R("pool_blocks_before"),
                                         R("pool_blocks_after")};
constexpr EventFieldUse kPathEnd[] = {R("reason")};
constexpr EventFieldUse kDealloc[] = {R("poisoned"), R("freed")};
constexpr EventFieldUse kAlignClone[] = {R("function"), R("input"), O("demoted")};
constexpr EventFieldUse kSkip[] = {R("id"),      O("fid"),     O("function"),
                                   O("inputs"),  O("reason"),  O("input"),
                                   O("old_ptr"), O("new_ptr"), R("message")};
constexpr EventFieldUse kWarning[] = {R("id"), O("fid"), R("message")};
constexpr EventFieldUse kError[] = {R("id"), R("exception"), O("graph"), O("where"), R("message")};
constexpr EventFieldUse kOutput[] = {R("name"), R("ptr")};
constexpr EventFieldUse kRead[] = {R("name"), R("numel"), R("digest"), O("values")};
constexpr EventFieldUse kOptimizer[] = {R("name"),         R("what"),          O("kind"),
                                        O("params"),       O("static_params"), O("static_state"),
                                        O("static_grads"), O("params_alive"),  O("state_alive")};
constexpr EventFieldUse kZeroGrad[] = {R("name"), R("set_to_none"), R("grads")};
constexpr EventFieldUse kShutdown[] = {O("graphs"), O("reason")};
constexpr EventFieldUse kCaCacheHit[] = {R("backward"), R("node_calls")};
constexpr EventFieldUse kCaCacheMiss[] = {R("backward"),      R("node_calls"), R("reason"),
                                          O("autograd_node"), O("call"),       O("message")};
constexpr EventFieldUse kMetadataRead[] = {R("backward"), R("call"), R("autograd_node"),
                                           R("metadata"), R("mode")};
constexpr EventFieldUse kCaCapture[] = {R("backward"), R("mode"), R("graph_nodes"),
                                        R("graph_digest")};
constexpr EventFieldUse kCaRun[] = {R("backward"), R("leaves"), R("digest"), O("matches_eager")};
constexpr EventFieldUse kDevice[] = {R("baked"), R("baked_digest"), R("digest")};
constexpr EventFieldUse kCaGraph[] = {R("backward"), R("captured"), O("targets"), O("uses")};
#undef R
#undef O

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "[a,b,c]" -> {"a","b","c"}.
std::optional<std::vector<std::string_view>> split_list(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<std::string_view> out;
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    out.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

bool is_digest(std::string_view s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool within(IntRange range, std::int64_t v) {
  return v >= range.min && v <= range.max;
}

// The writer's side of the limits: capsim never writes what a reader refuses.
std::optional<Json> text_to_json(const FieldSpec& spec, std::string_view text) {
  switch (spec.type) {
    case FT::kInt: {
      auto v = parse_int(text);
      if (!v || !within(spec.range, *v)) return std::nullopt;
      return Json(*v);
    }
    case FT::kIntOrNone: {
      if (text == "None") return Json(nullptr);
      auto v = parse_int(text);
      if (!v || !within(spec.range, *v)) return std::nullopt;
      return Json(*v);
    }
    case FT::kBool:
      if (text != "true" && text != "false") return std::nullopt;
      return Json(text == "true");
    case FT::kText: return Json(std::string(text));
    case FT::kIntList: {
      auto parts = split_list(text);
      if (!parts) return std::nullopt;
      Json out = Json::array();
      for (std::string_view p : *parts) {
        auto v = parse_int(p);
        if (!v || !within(spec.range, *v)) return std::nullopt;
        out.push_back(*v);
      }
      return out;
    }
    case FT::kAddress: {
      if (!json_address(Json(std::string(text)), "").ok()) return std::nullopt;
      return Json(std::string(text));
    }
    case FT::kAddressList: {
      auto parts = split_list(text);
      if (!parts) return std::nullopt;
      Json out = Json::array();
      for (std::string_view p : *parts) {
        if (!json_address(Json(std::string(p)), "").ok()) return std::nullopt;
        out.push_back(std::string(p));
      }
      return out;
    }
    case FT::kDigest:
      if (!is_digest(text)) return std::nullopt;
      return Json(std::string(text));
    case FT::kTextList: {
      Json out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!out.is_array()) return std::nullopt;
      for (const Json& e : out) {
        if (!e.is_string()) return std::nullopt;
      }
      return out;
    }
    case FT::kIntLists: {
      Json out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!out.is_array()) return std::nullopt;
      for (const Json& e : out) {
        if (!e.is_array()) return std::nullopt;
        for (const Json& i : e) {
          if (!i.is_number_integer() || !within(spec.range, i.get<std::int64_t>())) {
            return std::nullopt;
          }
        }
      }
      return out;
    }
  }
  return std::nullopt;
}

// An integer within the field's range; the message names the limit.
Result<std::int64_t> bounded_integer(const Json& v, const std::string& path, IntRange range) {
  CAPSIM_TRY_ASSIGN(const std::int64_t i, json_integer(v, path));
  if (i < range.min) {
    return field_error(
        path, fmt::format("{} is below the limit of {} (docs/trace-format.md §8)", i, range.min));
  }
  if (i > range.max) {
    return field_error(
        path, fmt::format("{} is above the limit of {} (docs/trace-format.md §8)", i, range.max));
  }
  return i;
}

Result<std::string> json_to_text(const FieldSpec& spec, const Json& v, const std::string& path) {
  switch (spec.type) {
    case FT::kInt: {
      CAPSIM_TRY_ASSIGN(const std::int64_t i, bounded_integer(v, path, spec.range));
      return std::to_string(i);
    }
    case FT::kIntOrNone: {
      if (v.is_null()) return std::string("None");
      CAPSIM_TRY_ASSIGN(const std::int64_t i, bounded_integer(v, path, spec.range));
      return std::to_string(i);
    }
    case FT::kBool:
      if (!v.is_boolean()) return field_error(path, "expected a boolean");
      return std::string(v.get<bool>() ? "true" : "false");
    case FT::kText:
      if (!v.is_string()) return field_error(path, "expected a string");
      return v.get<std::string>();
    case FT::kIntList: {
      if (!v.is_array()) return field_error(path, "expected an array of integers");
      std::vector<std::int64_t> ints;
      for (std::size_t i = 0; i < v.size(); ++i) {
        CAPSIM_TRY_ASSIGN(const std::int64_t x,
                          bounded_integer(v[i], fmt::format("{}[{}]", path, i), spec.range));
        ints.push_back(x);
      }
      return format_list(ints);
    }
    case FT::kAddress: {
      CAPSIM_TRY_ASSIGN(const Address a, json_address(v, path));
      return hex(a);
    }
    case FT::kAddressList: {
      if (!v.is_array()) return field_error(path, "expected an array of hex address strings");
      std::vector<std::uint64_t> addresses;
      for (std::size_t i = 0; i < v.size(); ++i) {
        CAPSIM_TRY_ASSIGN(const Address a, json_address(v[i], fmt::format("{}[{}]", path, i)));
        addresses.push_back(a);
      }
      return format_addresses(addresses);
    }
    case FT::kDigest:
      if (!v.is_string() || !is_digest(v.get_ref<const std::string&>())) {
        return field_error(path, "expected a digest of 16 lower-case hex digits");
      }
      return v.get<std::string>();
    case FT::kTextList: {
      if (!v.is_array()) return field_error(path, "expected an array of strings");
      std::vector<std::string> items;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string())
          return field_error(fmt::format("{}[{}]", path, i), "expected a string");
        items.push_back(v[i].get<std::string>());
      }
      return format_text_list(items);
    }
    case FT::kIntLists: {
      if (!v.is_array()) return field_error(path, "expected an array of integer arrays");
      std::string text = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", path, i);
        if (!v[i].is_array()) return field_error(item, "expected an array of integers");
        std::vector<std::int64_t> ints;
        for (std::size_t k = 0; k < v[i].size(); ++k) {
          CAPSIM_TRY_ASSIGN(const std::int64_t x,
                            bounded_integer(v[i][k], fmt::format("{}[{}]", item, k), spec.range));
          ints.push_back(x);
        }
        if (i != 0) text += ',';
        text += format_list(ints);
      }
      return text + "]";
    }
  }
  return field_error(path, "unsupported field type");
}

bool is_envelope_key(std::string_view key) {
  return std::find(std::begin(kEventEnvelopeKeys), std::end(kEventEnvelopeKeys), key) !=
         std::end(kEventEnvelopeKeys);
}

}  // namespace

std::span<const FieldSpec> event_field_specs() {
  return kFieldSpecs;
}

const FieldSpec* find_field_spec(std::string_view key) {
  for (const FieldSpec& f : kFieldSpecs) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::span<const EventFieldUse> event_fields_of(EventKind kind) {
  switch (kind) {
    case EventKind::kCompile: return kCompile;
    case EventKind::kWarmup: return kWarmup;
    case EventKind::kRecord: return kRecord;
    case EventKind::kReplay: return kReplay;
    case EventKind::kCopyIn: return kCopyIn;
    case EventKind::kEager: return kEager;
    case EventKind::kCheckpoint: return kCheckpoint;
    case EventKind::kPathEnd: return kPathEnd;
    case EventKind::kDealloc: return kDealloc;
    case EventKind::kAlignClone: return kAlignClone;
    case EventKind::kSkip: return kSkip;
    case EventKind::kWarning: return kWarning;
    case EventKind::kError: return kError;
    case EventKind::kOutput: return kOutput;
    case EventKind::kRead: return kRead;
    case EventKind::kOptimizer: return kOptimizer;
    case EventKind::kZeroGrad: return kZeroGrad;
    case EventKind::kShutdown: return kShutdown;
    case EventKind::kCaCacheHit: return kCaCacheHit;
    case EventKind::kCaCacheMiss: return kCaCacheMiss;
    case EventKind::kMetadataRead: return kMetadataRead;
    case EventKind::kCaCapture: return kCaCapture;
    case EventKind::kCaRun: return kCaRun;
    case EventKind::kDevice: return kDevice;
    case EventKind::kCaGraph: return kCaGraph;
  }
  return {};
}

std::optional<EventKind> event_kind_from_name(std::string_view name) {
#define CAPSIM_FROM_NAME_(e, n) \
  if (name == n) return EventKind::e;
  CAPSIM_EVENT_KINDS(CAPSIM_FROM_NAME_)
#undef CAPSIM_FROM_NAME_
  return std::nullopt;
}

bool is_diagnostic_field(std::string_view key) {
  return key == "matches_eager";
}

namespace {
const EventFieldUse* find_use(EventKind kind, std::string_view key) {
  for (const EventFieldUse& u : event_fields_of(kind)) {
    if (u.key == key) return &u;
  }
  return nullptr;
}
}  // namespace

Result<Json> event_fields_to_json(const Event& event) {
  Json out = Json::object();
  for (const EventField& f : event.fields) {
    if (is_diagnostic_field(f.key)) continue;
    // An extension (a producer's own observation, such as the CUDA driver's
    // buffer ids) is written as text; readers skip it.
    if (f.key.starts_with("x_")) {
      out[f.key] = f.value;
      continue;
    }
    const FieldSpec* spec = find_field_spec(f.key);
    if (spec == nullptr || find_use(event.kind, f.key) == nullptr) {
      return make_error(
          fmt::format("event '{}' has field '{}', which the trace schema does not allow",
                      event_kind_name(event.kind), f.key));
    }
    std::optional<Json> v = text_to_json(*spec, f.value);
    if (!v) {
      return make_error(fmt::format("event '{}' field '{}': \"{}\" is not a {}",
                                    event_kind_name(event.kind), f.key, f.value,
                                    field_type_name(spec->type)));
    }
    out[f.key] = std::move(*v);
  }
  return out;
}

Result<std::vector<EventField>> event_fields_from_json(EventKind kind, const Json& line,
                                                       bool partial) {
  std::vector<EventField> fields;
  for (auto it = line.begin(); it != line.end(); ++it) {
    const std::string& key = it.key();
    if (is_envelope_key(key) || key.starts_with("x_")) continue;
    const FieldSpec* spec = find_field_spec(key);
    if (spec == nullptr || find_use(kind, key) == nullptr || is_diagnostic_field(key)) {
      return field_error(key, fmt::format("unknown field for event '{}' (extensions must start "
                                          "with \"x_\")",
                                          event_kind_name(kind)));
    }
    CAPSIM_TRY_ASSIGN(std::string text, json_to_text(*spec, *it, key));
    fields.push_back({key, std::move(text)});
  }
  for (const EventFieldUse& u : event_fields_of(kind)) {
    if (u.required && !partial && !line.contains(u.key)) {
      return field_error(u.key,
                         fmt::format("missing (event '{}' requires it)", event_kind_name(kind)));
    }
  }
  return fields;
}

}  // namespace capsim
