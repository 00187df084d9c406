// The capsim-trace envelopes (see trace_format.hpp): the header to and from JSON, with the
// recorded release checked against its profile, and the writing of each kind of line.
#include "traces/format/trace_format.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "traces/format/event_schema.hpp"
#include "traces/format/json_text.hpp"
#include "traces/format/program_json.hpp"

namespace capsim {

std::string_view trace_line_type_name(TraceLineType type) {
  switch (type) {
#define CAPSIM_NAME_(e, name) \
  case TraceLineType::e: return name;
    CAPSIM_TRACE_LINE_TYPES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

bool TraceHeader::observed(EventKind kind) const {
  return !observes || std::find(observes->begin(), observes->end(), kind) != observes->end();
}

Json header_to_json(const TraceHeader& header) {
  Json j = Json::object();
  j["seq"] = 0;
  j["type"] = "header";
  j["format"] = kTraceFormat;
  j["version"] = header.version;
  j["producer"] = header.producer;
  j["capsim_version"] = header.capsim_version;
  j["name"] = header.name;
  j["seed"] = header.seed;
  j["config"] = config_to_json(header.config);
  if (header.observes) {
    Json kinds = Json::array();
    for (EventKind k : *header.observes) kinds.push_back(event_kind_name(k));
    j["observes"] = std::move(kinds);
  }
  if (!header.values) j["values"] = false;
  for (const auto& [key, value] : header.extensions) {
    CAPSIM_CHECK(key.starts_with("x_"), "header extensions start with x_");
    j[key] = value;
  }
  return j;
}

namespace {

// A recorded trace names its release (x_torch_version, "2.11.0+cu130"): it
// must be one a torch profile models, and the profile the config names.
Status check_torch_version(ObjectReader& r, const CudagraphConfig& config) {
  if (!r.has("x_torch_version")) return {};
  CAPSIM_TRY_ASSIGN(const std::string version, r.string("x_torch_version"));
  const std::string release = version.substr(0, version.find('+'));
  const std::optional<TorchProfile> p = torch_profile_for(release);
  if (!p) {
    return field_error("x_torch_version",
                       fmt::format("release '{}' has no torch profile (known: {})",
                                   version.substr(0, 64), known_torch_profiles()));
  }
  if (*p != config.torch_profile) {
    return field_error("x_torch_version",
                       fmt::format("release {} is profile {}, but config.torch_profile is {}",
                                   version.substr(0, 64), torch_profile_name(*p),
                                   torch_profile_name(config.torch_profile)));
  }
  return {};
}

// The strings of the extension field `key` (an array), bounded; anything
// else there is the producer's business and ignored, as every x_ field.
std::vector<std::string> left_out_list(ObjectReader& r, std::string_view key) {
  std::vector<std::string> out;
  if (!r.has(key)) return out;
  const Result<const Json*> v = r.value(key);
  if (!v.ok() || !(*v)->is_array()) return out;
  for (const Json& e : **v) {
    if (out.size() == kMaxLeftOut) break;
    if (e.is_string()) out.push_back(e.get<std::string>().substr(0, kMaxLeftOutBytes));
  }
  return out;
}

}  // namespace

Result<TraceHeader> header_from_json(ObjectReader& r) {
  TraceHeader h;
  CAPSIM_TRY_ASSIGN(const std::string format, r.string("format"));
  if (format != kTraceFormat) {
    return field_error(
        "format", fmt::format("expected \"{}\", got \"{}\"", kTraceFormat, format.substr(0, 64)));
  }
  CAPSIM_TRY_ASSIGN(h.version, r.integer("version"));
  if (h.version != kTraceVersion) {
    Error e = field_error("version", fmt::format("unsupported version {} (this capsim reads "
                                                 "version {})",
                                                 h.version, kTraceVersion));
    e.kind = ErrorKind::unsupported;
    return e;
  }
  CAPSIM_TRY_ASSIGN(h.producer, r.string("producer"));
  // Who wrote the trace decides how replay compares it (a real run's
  // recorder observes less than the model predicts), so a name capsim does
  // not know is refused rather than read as the model's.
  if (h.producer != kModelProducer && h.producer != kCudaProducer &&
      h.producer != kPytorchProducer && h.producer != kUserProducer) {
    return field_error("producer", fmt::format("unknown producer '{}' ({}, {}, {}; a program may "
                                               "say {})",
                                               h.producer.substr(0, 64), kModelProducer,
                                               kCudaProducer, kPytorchProducer, kUserProducer));
  }
  CAPSIM_TRY_ASSIGN(h.capsim_version, r.string("capsim_version"));
  CAPSIM_TRY_ASSIGN(h.name, r.string("name"));
  CAPSIM_TRY_ASSIGN(h.seed, r.unsigned_integer("seed"));
  CAPSIM_TRY_ASSIGN(const Json* config, r.value("config"));
  CAPSIM_TRY_ASSIGN(h.config, config_from_json(*config, "config"));
  if (r.has("observes")) {
    CAPSIM_TRY_ASSIGN(const std::vector<std::string> names, r.string_list("observes"));
    std::vector<EventKind> kinds;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::optional<EventKind> k = event_kind_from_name(names[i]);
      if (!k) {
        return field_error(fmt::format("observes[{}]", i),
                           fmt::format("unknown event kind '{}'", names[i].substr(0, 64)));
      }
      kinds.push_back(*k);
    }
    h.observes = std::move(kinds);
  }
  if (r.has("values")) {
    CAPSIM_TRY_ASSIGN(h.values, r.boolean("values"));
    // The CUDA reference always computes: its evidence is values.
    if (!h.values && h.producer == kCudaProducer) {
      return field_error("values", "a capsim-cuda trace always has values");
    }
  }
  CAPSIM_TRY(check_torch_version(r, h.config));
  h.untranslated = left_out_list(r, "x_untranslated");
  h.notes = left_out_list(r, "x_notes");
  CAPSIM_TRY(r.finish());
  return h;
}

namespace {
// Appends `payload`'s members after the envelope's, each value as its
// dump(): the bytes dump() writes for the whole line, without copying the
// payload into an envelope object first.
void append_dumped(JsonObjectText& line, const Json& payload) {
  for (auto it = payload.begin(); it != payload.end(); ++it) {
    line.add_raw(it.key(), it.value().dump());
  }
}
}  // namespace

std::string header_line(const TraceHeader& header) {
  return header_to_json(header).dump();
}

std::string function_line(std::uint64_t seq, const FunctionDef& def) {
  std::string out;
  JsonObjectText line(out);
  line.add("seq", seq);
  line.add("type", trace_line_type_name(TraceLineType::kFunction));
  append_dumped(line, function_to_json(def));
  line.close();
  return out;
}

std::string action_line(std::uint64_t seq, std::size_t index, const Action& action) {
  // As text where the kind can be (event_line says why), else its Json's
  // members dumped; no action field is named like an envelope key.
  std::string out;
  JsonObjectText line(out);
  line.add("seq", seq);
  line.add("type", trace_line_type_name(TraceLineType::kAction));
  line.add("index", std::uint64_t{index});
  if (!append_action_members(line, action)) append_dumped(line, action_to_json(action));
  line.close();
  return out;
}

Result<std::string> event_line(std::uint64_t seq, const Event& event) {
  // Written as text, not built as a Json and dumped: a trace is mostly event
  // lines, and the Json route was a sixth of a generated program's trace
  // (docs/performance.md, the generated programs' rows). The bytes are dump()'s (json_text.hpp);
  // no field is named like an envelope key (kEventEnvelopeKeys).
  std::string out;
  JsonObjectText line(out);
  line.add("seq", seq);
  line.add("type", trace_line_type_name(TraceLineType::kEvent));
  line.add("action", std::uint64_t{event.action});
  line.add("event", event_kind_name(event.kind));
  CAPSIM_TRY(append_event_fields(line, event));
  line.close();
  return out;
}

Result<std::vector<std::string>> trace_lines(const TraceHeader& header, const Program& program,
                                             const std::vector<Event>& events) {
  std::vector<std::string> lines;
  lines.push_back(header_line(header));
  std::uint64_t seq = 1;
  for (const FunctionDef& def : program.functions) lines.push_back(function_line(seq++, def));
  std::size_t next_event = 0;
  for (std::size_t i = 0; i < program.actions.size(); ++i) {
    lines.push_back(action_line(seq++, i, program.actions[i]));
    for (; next_event < events.size() && events[next_event].action == i; ++next_event) {
      if (!header.observed(events[next_event].kind)) continue;
      CAPSIM_TRY_ASSIGN(std::string line, event_line(seq++, events[next_event]));
      lines.push_back(std::move(line));
    }
  }
  if (next_event != events.size()) {
    return make_error(fmt::format("event {} names action {}, which is out of order", next_event,
                                  events[next_event].action));
  }
  return lines;
}

}  // namespace capsim
