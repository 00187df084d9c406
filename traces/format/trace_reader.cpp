// The streaming trace reader (see trace_reader.hpp): chunked line reading, JSON parsing that
// refuses repeated keys and deep nesting, the envelope checks, and errors placed at
// file:line:column.
#include "traces/format/trace_reader.hpp"

#include "traces/format/input_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "model/check.hpp"
#include "traces/format/event_schema.hpp"
#include "traces/format/json_text.hpp"
#include "traces/format/program_json.hpp"

namespace capsim {

namespace {

// Why a line is not one JSON value, and the column to point at.
struct JsonProblem {
  std::size_t column = 1;
  std::string what;
};

// nlohmann's messages read "[json.exception.parse_error.101] parse error at
// line 1, column 7: syntax error ..." or "[json.exception.out_of_range.406]
// number overflow parsing '1e400'"; keep what follows the tag and the
// position, and point at the token when the message quotes it.
JsonProblem json_problem(const Json::exception& e, std::string_view line) {
  std::string what = e.what();
  if (what.starts_with("[json.exception.")) {
    const std::size_t close = what.find("] ");
    if (close != std::string::npos) what.erase(0, close + 2);
  }
  JsonProblem p;
  if (const auto* pe = dynamic_cast<const Json::parse_error*>(&e)) {
    p.column = pe->byte;
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
  } else {
    const std::size_t open = what.find('\'');
    const std::size_t close = open == std::string::npos ? open : what.find('\'', open + 1);
    if (close != std::string::npos) {
      const std::size_t at = line.find(std::string_view(what).substr(open + 1, close - open - 1));
      if (at != std::string_view::npos) p.column = at + 1;
    }
  }
  p.what = std::move(what);
  return p;
}

// nlohmann's own DOM builder, which keeps the last value of a repeated key
// silently, behind a watch that notes the first key an object repeats. A
// SAX handler rather than a parse callback: nlohmann's callback parser is
// the slower one, and the callback copied every key twice (docs/
// performance.md). json_sax_dom_parser is nlohmann's detail namespace, but
// the SAX interface it implements is public (nlohmann::json_sax).
class DuplicateKeyWatch {
 public:
  using Dom = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit DuplicateKeyWatch(Json& out) : dom_(out) {}
  const std::optional<std::string>& repeated() const { return repeated_; }

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  // A float32 midpoint is read from its text, as strtof would
  // (json_fields.hpp: float32_exact).
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return dom_.number_float(float32_exact(v, s), s);
  }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    if (open_ == keys_.size()) keys_.emplace_back();
    keys_[open_++].clear();
    return dom_.start_object(n);
  }
  bool key(Json::string_t& k) {
    if (!keys_[open_ - 1].insert(k) && !repeated_) repeated_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    --open_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t at, const std::string& token, const Exception& e) {
    return dom_.parse_error(at, token, e);  // throws e, as Json::parse does
  }

 private:
  // One object's keys. A trace's objects have a few keys each, where a scan
  // beats a set; past kFew (a hostile line's object of 100,000 keys) a set
  // keeps the check linearithmic.
  struct ObjectKeys {
    static constexpr std::size_t kFew = 32;
    std::vector<std::string> few;
    std::set<std::string, std::less<>> many;
    void clear() {
      few.clear();
      many.clear();
    }
    // False when `k` was there already.
    bool insert(const std::string& k) {
      if (many.empty() && few.size() < kFew) {
        if (std::find(few.begin(), few.end(), k) != few.end()) return false;
        few.push_back(k);
        return true;
      }
      if (many.empty()) many.insert(few.begin(), few.end());
      return many.insert(k).second;
    }
  };
  Dom dom_;
  // Keys per open object, kept (and their strings' capacity) across objects.
  std::vector<ObjectKeys> keys_;
  std::size_t open_ = 0;
  std::optional<std::string> repeated_;
};

// Parses one line as JSON, refusing an object that repeats a key: nlohmann
// keeps the last value silently, and a line whose fields say two things
// would otherwise fail lines later, far from its cause.
std::optional<JsonProblem> parse_json_line(std::string_view line, Json& out) {
  std::optional<std::string> repeated;
  try {
    out = Json();
    DuplicateKeyWatch watch(out);
    Json::sax_parse(line, &watch);
    repeated = watch.repeated();
  } catch (const Json::exception& e) {
    return json_problem(e, line);
  }
  if (!repeated) return std::nullopt;
  const std::string quoted = Json(*repeated).dump();
  const std::size_t first = line.find(quoted + ":");
  const std::size_t second =
      first == std::string_view::npos ? first : line.find(quoted + ":", first + 1);
  return JsonProblem{second == std::string_view::npos ? 1 : second + 1,
                     fmt::format("duplicate key {} in one object", quoted.substr(0, 66))};
}

// The last key of a field path: "ops[2].scalar" -> "scalar", "args[1]" -> "args".
std::string last_key(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  if (dot != std::string_view::npos) path.remove_prefix(dot + 1);
  const std::size_t bracket = path.find('[');
  return std::string(path.substr(0, bracket));
}

// The deepest nesting of arrays and objects, outside strings. Lines are
// checked before parsing because a parsed value is destroyed recursively, and
// a line of a million '[' must not take the stack with it.
std::size_t nesting_depth(std::string_view line) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}

}  // namespace

bool parse_trace_json(std::string_view line, Json& out) {
  return !parse_json_line(line, out).has_value();
}

std::string printable_block(std::string_view text, std::string_view indent) {
  CAPSIM_CHECK(!indent.empty(), "a block's continuation lines are indented");
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t newline = text.find('\n', start);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    out += printable_message(text.substr(start, end - start));
    if (newline == std::string_view::npos) break;
    out.append("\n").append(indent);
    start = newline + 1;
  }
  return out;
}

std::string printable_message(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    const std::size_t n = utf8_sequence(text);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
      text.remove_prefix(1);
    } else {
      out.append(text.substr(0, n));
      text.remove_prefix(n);
    }
  }
  return out;
}

Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<std::istream> in, open_input(path));
  return open(std::move(in), input_name(path));
}

Result<std::unique_ptr<TraceReader>> TraceReader::open(std::unique_ptr<std::istream> in,
                                                       std::string name) {
  std::unique_ptr<TraceReader> r(new TraceReader(std::move(in), std::move(name)));
  CAPSIM_TRY_ASSIGN(const bool got, r->read_raw_line());
  if (!got) return make_error(fmt::format("{}:1:1: empty file: no header line", r->name_));
  if (nesting_depth(r->raw_) > kMaxTraceNesting) {
    return r->error_at(1, fmt::format("nesting deeper than {} levels", kMaxTraceNesting));
  }
  Json j;
  if (const std::optional<JsonProblem> p = parse_json_line(r->raw_, j)) {
    return r->error_at(p->column, "invalid JSON in the header line: " + p->what);
  }
  if (!j.is_object() || !j.contains("type") || j["type"] != "header") {
    return r->error_at(
        1, "missing header: the first line must be {\"seq\":0,\"type\":\"header\",...}");
  }
  CAPSIM_TRY_ASSIGN(ObjectReader obj, ObjectReader::of(j, ""));
  const Result<std::int64_t> seq = obj.integer("seq");
  if (!seq) return r->field_error_at(seq.error());
  if (*seq != 0) return r->field_error_at(field_error("seq", "the header's seq must be 0"));
  obj.skip("type");
  Result<TraceHeader> header = header_from_json(obj);
  if (!header) return r->field_error_at(header.error());
  r->header_ = std::move(header).value();
  r->next_seq_ = 1;
  return r;
}

Result<bool> TraceReader::fill_chunk() {
  std::streambuf* buf = in_->rdbuf();
  std::streamsize got = 0;
  try {
    // Only what the stream holds already, or what one refill brings: a
    // trace on a pipe is read as it comes, never waited for past a line.
    std::streamsize avail = buf->in_avail();
    if (avail <= 0) {
      if (buf->sgetc() == std::char_traits<char>::eof()) return false;
      avail = std::max<std::streamsize>(buf->in_avail(), 1);
    }
    avail = std::min<std::streamsize>(avail, static_cast<std::streamsize>(kChunkBytes));
    got = buf->sgetn(chunk_.data(), avail);
  } catch (const std::exception& e) {
    // libstdc++'s filebuf throws on a read error (EIO, EISDIR) whatever
    // the stream's exception mask.
    ++line_;
    return error_at(1, fmt::format("read failed: {}", e.what()));
  }
  chunk_begin_ = 0;
  chunk_end_ = static_cast<std::size_t>(std::max<std::streamsize>(got, 0));
  return chunk_end_ > 0;
}

Result<bool> TraceReader::read_raw_line() {
  raw_.clear();
  if (chunk_.empty()) chunk_.resize(kChunkBytes);
  bool any = false;
  for (;;) {
    if (chunk_begin_ == chunk_end_) {
      CAPSIM_TRY_ASSIGN(const bool more, fill_chunk());
      if (!more) {
        terminated_ = false;
        break;
      }
    }
    any = true;
    const char* start = chunk_.data() + chunk_begin_;
    const std::size_t n = chunk_end_ - chunk_begin_;
    const char* newline = static_cast<const char*>(std::memchr(start, '\n', n));
    const std::size_t take = newline ? static_cast<std::size_t>(newline - start) : n;
    if (raw_.size() + take > kMaxTraceLineBytes) {
      ++line_;
      return error_at(kMaxTraceLineBytes + 1,
                      fmt::format("line longer than the limit of {} bytes", kMaxTraceLineBytes));
    }
    raw_.append(start, take);
    chunk_begin_ += take;
    if (newline) {
      ++chunk_begin_;
      terminated_ = true;
      break;
    }
  }
  if (!any) return false;
  ++line_;
  if (line_ > kMaxTraceLines) {
    return error_at(1, fmt::format("more than {} lines", kMaxTraceLines));
  }
  return true;
}

Error TraceReader::error_at(std::size_t column, const std::string& what) const {
  return Error{fmt::format("{}:{}:{}: {}", name_, line_, column, printable_message(what)),
               ErrorKind::bad_trace,
               {}};
}

Error TraceReader::field_error_at(const Error& e) const {
  std::size_t column = 1;
  if (!e.field.empty()) {
    // fmt, not operator+: GCC 12 at -O3 warns (-Wrestrict) falsely on the chain.
    const std::string key = fmt::format("\"{}\":", last_key(e.field));
    const std::size_t at = raw_.find(key);
    if (at != std::string::npos) column = at + 1;
  }
  Error out = error_at(column, e.message);
  // A newer version is a trace capsim does not read, not a broken one.
  if (e.kind == ErrorKind::unsupported) out.kind = e.kind;
  out.field = e.field;
  return out;
}

Result<std::optional<TraceItem>> TraceReader::next() {
  CAPSIM_TRY_ASSIGN(TraceItem* const item, advance());
  if (item == nullptr) return std::optional<TraceItem>{};
  // A fresh item with only this line's member, as the reader always gave.
  TraceItem out;
  out.line = item->line;
  out.type = item->type;
  out.text = std::move(item->text);
  switch (item->type) {
    case TraceLineType::kHeader: break;
    case TraceLineType::kFunction: out.function = std::move(item->function); break;
    case TraceLineType::kAction:
      out.action_index = item->action_index;
      out.action = std::move(item->action);
      break;
    case TraceLineType::kEvent: out.event = std::move(item->event); break;
  }
  return std::optional<TraceItem>(std::move(out));
}

Result<TraceItem*> TraceReader::advance() {
  for (;;) {
    CAPSIM_TRY_ASSIGN(const bool got, read_raw_line());
    if (!got) return nullptr;
    if (raw_.empty() && !terminated_) return nullptr;
    if (fast_line()) return &item_;
    if (nesting_depth(raw_) > kMaxTraceNesting) {
      return error_at(1, fmt::format("nesting deeper than {} levels", kMaxTraceNesting));
    }
    Json j;
    if (const std::optional<JsonProblem> p = parse_json_line(raw_, j)) {
      if (!terminated_) {
        // What a killed recorder leaves: the prefix before it is the trace.
        truncated_ = true;
        warnings_.push_back(fmt::format(
            "{}:{}:1: warning: the last line is truncated ({} bytes, no newline); replaying the {} "
            "lines before it",
            name_, line_, raw_.size(), line_ - 1));
        return nullptr;
      }
      return error_at(p->column, "invalid JSON: " + p->what);
    }
    Result<TraceItem> item = parse_line(j);
    if (!item) return field_error_at(item.error());
    item_ = std::move(item).value();
    return &item_;
  }
}

bool TraceReader::fast_line() {
  if (!fast_on_ || !terminated_) return false;
  // simdjson reads up to its padding past the line; the buffer keeps it.
  if (raw_.capacity() < raw_.size() + FastLineReader::padding()) {
    raw_.reserve(raw_.size() + FastLineReader::padding());
  }
  if (!fast_.read(raw_, next_seq_, last_action_, header_, fast_out_)) return false;
  ++next_seq_;
  ++fast_lines_;
  item_.line = line_;
  item_.type = fast_out_.type;
  item_.text.assign(raw_);
  if (item_.type == TraceLineType::kAction) {
    last_action_ = fast_out_.action_index;
    item_.action_index = fast_out_.action_index;
    std::swap(item_.action, fast_out_.action);
  } else {
    std::swap(item_.event, fast_out_.event);
  }
  return true;
}

Result<TraceItem> TraceReader::parse_line(const Json& j) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, ""));
  CAPSIM_TRY_ASSIGN(const std::int64_t seq, r.integer("seq"));
  if (seq < 0 || static_cast<std::uint64_t>(seq) != next_seq_) {
    return field_error(
        "seq",
        static_cast<std::uint64_t>(seq) < next_seq_
            ? fmt::format("sequence number {} repeats or goes back (expected {})", seq, next_seq_)
            : fmt::format("sequence number {} skips ahead (expected {})", seq, next_seq_));
  }
  ++next_seq_;
  CAPSIM_TRY_ASSIGN(const std::string type, r.string("type"));
  TraceItem item;
  item.line = line_;
  item.text = raw_;
  if (type == "function") {
    if (last_action_) return field_error("type", "a function line after the first action");
    if (++functions_ > kMaxTraceFunctions) {
      return field_error("type", fmt::format("more than {} functions", kMaxTraceFunctions));
    }
    item.type = TraceLineType::kFunction;
    CAPSIM_TRY_ASSIGN(item.function, function_from_json(r));
    return item;
  }
  if (type == "action") {
    item.type = TraceLineType::kAction;
    CAPSIM_TRY_ASSIGN(const std::int64_t index, r.integer("index"));
    const std::size_t expected = last_action_ ? *last_action_ + 1 : 0;
    if (index < 0 || static_cast<std::size_t>(index) != expected) {
      return field_error(
          "index", fmt::format("action index {} out of order (expected {})", index, expected));
    }
    if (expected >= kMaxRunActions) {
      return field_error("index", fmt::format("more than {} actions", kMaxRunActions));
    }
    last_action_ = expected;
    item.action_index = expected;
    CAPSIM_TRY_ASSIGN(item.action, action_from_json(r));
    return item;
  }
  if (type == "event") {
    item.type = TraceLineType::kEvent;
    CAPSIM_TRY_ASSIGN(const std::int64_t action, r.integer("action"));
    if (!last_action_ || action < 0 || static_cast<std::size_t>(action) != *last_action_) {
      return field_error(
          "action", last_action_ ? fmt::format("event names action {}, but the latest action is {}",
                                               action, *last_action_)
                                 : std::string("an event before the first action"));
    }
    CAPSIM_TRY_ASSIGN(const std::string kind_name, r.string("event"));
    const std::optional<EventKind> kind = event_kind_from_name(kind_name);
    if (!kind) {
      return field_error("event", fmt::format("unknown event kind '{}'", kind_name.substr(0, 64)));
    }
    if (!header_.observed(*kind)) {
      return field_error(
          "event", fmt::format("event kind '{}' is not in the header's observes list", kind_name));
    }
    item.event.kind = *kind;
    item.event.action = static_cast<std::uint32_t>(action);
    CAPSIM_TRY_ASSIGN(item.event.fields,
                      event_fields_from_json(*kind, j, header_.observes_real_run()));
    return item;
  }
  if (type == "header") return field_error("type", "a second header line");
  return field_error("type", fmt::format("unknown line type '{}' (expected function, action or "
                                         "event)",
                                         type.substr(0, 64)));
}

}  // namespace capsim
