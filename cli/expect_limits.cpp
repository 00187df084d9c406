// Limits from flags and from a TOML file (see expect_limits.hpp), with toml++ reading the file.
#include "cli/expect_limits.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <charconv>
#include <filesystem>

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

std::string where(const std::string& path, const toml::node& node) {
  return fmt::format("{}:{}", path, node.source().begin.line);
}

// The limits of one table: its keys are limit keys with counts.
Status read_table(const std::string& path, const toml::table& table,
                  const std::optional<std::string>& function, std::vector<Limit>& out) {
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (!function && name == "function") continue;  // the per-function tables
    const std::optional<LimitKind> kind = limit_from_key(name);
    const std::string field = function ? fmt::format("function.{}.{}", *function, name) : name;
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
    out.push_back(Limit{*kind, function, static_cast<std::uint64_t>(*value)});
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
                                    where(path, node), fn));
    }
    CAPSIM_TRY(read_table(path, *limits, fn, out));
  }
  return out;
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
  Limit limit{kind, std::nullopt, *n};
  if (eq != std::string::npos) limit.function = value.substr(0, eq);
  return limit;
}

Result<std::vector<Limit>> read_limits_file(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(fmt::format("{}: field '--limits': cannot read the file", path));
  if (size > kMaxLimitsFileBytes) {
    return make_error(fmt::format("{}: field '--limits': {} bytes, more than a limits file's {}",
                                  path, size, kMaxLimitsFileBytes));
  }
  try {
    const toml::table root = toml::parse_file(path);
    return limits_of(path, root);
  } catch (const toml::parse_error& e) {
    return make_error(
        fmt::format("{}:{}: field '--limits': {}", path, e.source().begin.line, e.description()));
  }
}

}  // namespace capsim::cli
