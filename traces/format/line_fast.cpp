// The fast path's envelope (line_fast.hpp): one parse per line, the checks
// on seq, type and action or index that TraceReader::parse_line makes, then
// the payload through event_line_fast.cpp or action_line_fast.cpp.
#include "traces/format/line_fast.hpp"

#include "traces/format/fast_json.hpp"

namespace capsim {

struct FastLineReader::Impl {
  simdjson::dom::parser parser;
  fast_line::Members members;  // kept across lines, with its capacity
};

FastLineReader::FastLineReader() : impl_(std::make_unique<Impl>()) {}
FastLineReader::~FastLineReader() = default;

std::size_t FastLineReader::padding() {
  return simdjson::SIMDJSON_PADDING;
}

bool FastLineReader::read(std::string_view line, std::uint64_t seq,
                          std::optional<std::size_t> last_action, const TraceHeader& header,
                          FastLine& out) {
  using fast_line::element;
  using fast_line::integer;
  using fast_line::text;
  element root;
  if (impl_->parser.parse(line.data(), line.size(), false).get(root) != simdjson::SUCCESS) {
    return false;
  }
  fast_line::Members& m = impl_->members;
  if (!m.assign(root)) return false;
  const element* s = m.take("seq");
  const element* t = m.take("type");
  if (!s || !t || integer(*s) != static_cast<std::int64_t>(seq)) return false;
  const std::optional<std::string_view> type = text(*t);
  if (type == "event") {
    const element* a = m.take("action");
    const element* k = m.take("event");
    if (!last_action || !a || !k || integer(*a) != static_cast<std::int64_t>(*last_action)) {
      return false;
    }
    const std::optional<std::string_view> kind_name = text(*k);
    const std::optional<EventKind> kind =
        kind_name ? event_kind_from_name(*kind_name) : std::nullopt;
    if (!kind || !header.observed(*kind)) return false;
    std::optional<Event> event =
        fast_line::read_event(m, *kind, *last_action, header.observes_real_run());
    if (!event) return false;
    out.type = TraceLineType::kEvent;
    out.event = std::move(*event);
    return true;
  }
  if (type == "action") {
    const std::size_t expected = last_action ? *last_action + 1 : 0;
    const element* i = m.take("index");
    if (!i || integer(*i) != static_cast<std::int64_t>(expected) || expected >= kMaxRunActions) {
      return false;
    }
    std::optional<Action> action = fast_line::read_action(m);
    if (!action) return false;
    out.type = TraceLineType::kAction;
    out.action_index = expected;
    out.action = std::move(*action);
    return true;
  }
  return false;
}

}  // namespace capsim
