// Limits from flags and from a TOML file (see expect_limits.hpp), with toml++ reading the file.
#include "cli/expect_limits.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <charconv>
#include <optional>

#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

namespace {

// A count: decimal digits only, at most 2^63 - 1 (a JSON integer).
std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (n > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return n;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string where(const std::string& path, const toml::node& node) {
  return fmt::format("{}:{}", printable_message(path), node.source().begin.line);
}

// The limits of one table: its keys are limit keys with counts.
Status read_table(const std::string& path, const toml::table& table,
                  const std::optional<std::string>& function, std::vector<Limit>& out) {
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (!function && name == "function") continue;  // the per-function tables
    const std::optional<LimitKind> kind = limit_from_key(name);
    const std::string field =
        printable_message(function ? fmt::format("function.{}.{}", *function, name) : name);
    if (!kind) {
      return make_error(
          fmt::format("{}: field '{}': unknown limit (known: max_recordings, max_rerecords, "
                      "max_copy_bytes_per_call, max_eager_fallbacks, errors, warnings)",
                      where(path, node), field));
    }
    const std::optional<std::int64_t> value = node.value_exact<std::int64_t>();
    if (!value || *value < 0) {
      return make_error(fmt::format("{}: field '{}': expected a count (an integer >= 0)",
                                    where(path, node), field));
    }
    if (out.size() == kMaxLimits) {
      return make_error(
          fmt::format("{}: field '{}': more than {} limits", where(path, node), field, kMaxLimits));
    }
    out.push_back(Limit{*kind, function, static_cast<std::uint64_t>(*value),
                        fmt::format("{}: field '{}'", where(path, node), field)});
  }
  return {};
}

Result<std::vector<Limit>> limits_of(const std::string& path, const toml::table& root) {
  std::vector<Limit> out;
  CAPSIM_TRY(read_table(path, root, std::nullopt, out));
  const toml::node* functions = root.get("function");
  if (functions == nullptr) return out;
  const toml::table* table = functions->as_table();
  if (table == nullptr) {
    return make_error(fmt::format("{}: field 'function': expected a table ([function.NAME])",
                                  where(path, *functions)));
  }
  for (const auto& [name, node] : *table) {
    const toml::table* limits = node.as_table();
    const std::string fn(name.str());
    if (limits == nullptr) {
      return make_error(fmt::format("{}: field 'function.{}': expected a table of limits",
                                    where(path, node), printable_message(fn)));
    }
    CAPSIM_TRY(read_table(path, *limits, fn, out));
  }
  return out;
}

// A TOML key's text ("function . f", '"errors"') as the dotted path of its
// parts ("function.f"), read as TOML reads a key; the text itself when it
// does not read as one.
std::string dotted_key(std::string_view text) {
  const std::string raw(trimmed(text));
  toml::table key;
  try {
    key = toml::parse(raw + " = 0");
  } catch (const toml::parse_error&) {
    return raw;
  }
  std::string dotted;
  const toml::table* table = &key;
  while (table != nullptr && table->size() == 1) {
    const auto first = table->cbegin();
    dotted += (dotted.empty() ? "" : ".") + std::string(first->first.str());
    table = first->second.as_table();
  }
  return dotted.empty() ? raw : dotted;
}

// The header's key of a table line ("[function.f]"), or none.
std::optional<std::string> table_header(std::string_view line) {
  line = trimmed(line);
  if (!line.starts_with('[')) return std::nullopt;
  const std::size_t close = line.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  return dotted_key(line.substr(line.starts_with("[[") ? 2 : 1, close - 1));
}

// The key a "cannot redefine existing ..." parse error at `line` of `text`
// is about, as a field path ("function.f.errors"). toml++ quotes the key's
// raw text in its message, sometimes garbled, so the key is read from the
// line itself: a table header, or a key before '=' under the last header
// above it. None for any other error.
std::optional<std::string> redefined_key(const std::string& why, std::string_view text,
                                         std::size_t line) {
  if (why.find("cannot redefine existing") == std::string::npos || line == 0) return std::nullopt;
  std::optional<std::string> table;
  std::string_view at;
  for (std::size_t n = 1; n <= line && !text.empty(); ++n) {
    const std::size_t end = text.find('\n');
    const std::string_view l = text.substr(0, end);
    if (n == line) {
      at = l;
    } else if (std::optional<std::string> header = table_header(l)) {
      table = header;
    }
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  if (std::optional<std::string> header = table_header(at)) return header;
  const std::size_t eq = at.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  const std::string key = dotted_key(at.substr(0, eq));
  return table ? *table + "." + key : key;
}

}  // namespace

Result<Limit> parse_limit_flag(LimitKind kind, const std::string& value) {
  const auto eq = value.rfind('=');
  const std::string_view count =
      eq == std::string::npos ? std::string_view(value) : std::string_view(value).substr(eq + 1);
  const std::optional<std::uint64_t> n = parse_count(count);
  if (!n || eq == 0) {
    return make_error(fmt::format("field '{}': expected N or FUNCTION=N (N a count), got '{}'",
                                  limit_flag(kind), value));
  }
  Limit limit{kind, std::nullopt, *n, fmt::format("field '{}'", limit_flag(kind))};
  if (eq != std::string::npos) limit.function = value.substr(0, eq);
  return limit;
}

Result<std::vector<Limit>> read_limits_file(const std::string& path) {
  CAPSIM_TRY_ASSIGN(const std::string text, read_input(path, kMaxLimitsFileBytes, "limits file"));
  return read_limits_text(text, input_name(path));
}

Result<std::vector<Limit>> read_limits_text(std::string_view text, const std::string& name) {
  if (text.size() > kMaxLimitsFileBytes) {
    return make_error(fmt::format("{}: more than {} bytes, a limits file's limit",
                                  printable_message(name), kMaxLimitsFileBytes));
  }
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    const std::string why(e.description());
    if (std::optional<std::string> key = redefined_key(why, text, e.source().begin.line)) {
      return make_error(fmt::format("{}:{}: field '{}': given twice (a TOML key is set once)",
                                    printable_message(name), e.source().begin.line,
                                    printable_message(*key)));
    }
    return make_error(fmt::format("{}:{}: field '--limits': {}", printable_message(name),
                                  e.source().begin.line, printable_message(why)));
  }
  return limits_of(name, root);
}

}  // namespace capsim::cli
