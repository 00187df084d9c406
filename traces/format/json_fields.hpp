// Strict reading of one JSON object of a trace line.
//
// The trace format refuses unknown fields (docs/trace-format.md §7),
// so every object is read through an ObjectReader: each getter marks its key as
// known, and `finish()` fails on the first key that no getter asked for,
// except extension keys that start with "x_". Errors are values whose message
// starts with `field '<path>'` and whose Error::field is that path, dotted from
// the line's root (`ops[2].scalar`); the trace reader turns it into
// file:line:column.
//
// Numbers are checked, not converted silently: an integer field refuses a
// fraction and anything outside int64, a float field refuses what a float32
// cannot hold.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/address.hpp"
#include "model/result.hpp"
#include "model/saturating_sum.hpp"

namespace capsim {

// Insertion-ordered, so that lines are written in the order the format lists
// their fields, and so are byte-stable without sorting.
using Json = nlohmann::ordered_json;

// `j` as the text of a JSON document capsim prints (`--json`, a report): as
// dump(indent) gives it, except that a string (a value or a key) that is not
// valid UTF-8 keeps its valid sequences and shows each other byte as the
// text \xNN, as a message on stderr shows it (trace_reader.hpp's
// printable_message). A file name or an argv word need not be UTF-8, and
// dump() throws on one that is not; JSON's own escapes take care of control
// bytes. The one JSON rule for every string from input, argv or the file system.
std::string printable_json(const Json& j, int indent = -1);

// A figure as member `key` of `j`: its value, and `KEY_saturated: true`
// beside it when the sum saturated (the value is then a floor).
void put_figure(Json& j, const std::string& key, const SaturatingSum& figure);

// "field 'path': problem", with Error::field set to `path`.
Error field_error(std::string_view path, std::string_view problem);

class ObjectReader {
 public:
  // `path` is the object's own path ("" for the line itself).
  static Result<ObjectReader> of(const Json& object, std::string path);

  // Keys the caller handles itself (the envelope's `seq` and `type`).
  void skip(std::string_view key);
  bool has(std::string_view key) const;

  // A required field; errors name the field and the type it should have.
  Result<std::int64_t> integer(std::string_view key);
  Result<std::uint64_t> unsigned_integer(std::string_view key);
  Result<bool> boolean(std::string_view key);
  Result<std::string> string(std::string_view key);
  Result<float> float32(std::string_view key);
  // A hex string "0x..." (addresses are never JSON numbers: they pass 2^53).
  Result<Address> address(std::string_view key);
  Result<std::vector<std::int64_t>> integer_list(std::string_view key);
  Result<std::vector<std::uint32_t>> index_list(std::string_view key);
  Result<std::vector<std::string>> string_list(std::string_view key);
  // The raw value, for nested objects and arrays; marks the key as known.
  Result<const Json*> value(std::string_view key);

  // Fails on the first key that was neither read nor skipped (document order).
  Status finish() const;

  std::string path_of(std::string_view key) const;

 private:
  ObjectReader(const Json& object, std::string path) : object_(&object), path_(std::move(path)) {}
  const Json* object_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
};

// Value checks shared with array elements (`path` names the element).
Result<std::int64_t> json_integer(const Json& value, std::string_view path);
Result<float> json_float32(const Json& value, std::string_view path);
// A JSON number's double as the float32 it stands for, rounded to nearest;
// nullopt past float32's range. json_float32's rule, for the fast reader too.
std::optional<float> float32_of_double(double d);
// Whether a number read as the double `d` may stand for either of two
// floats: `d` lies exactly halfway between them, where the text it came from
// may have been a hair above or below (a 17-digit or 60-digit literal near
// 1 + 2^-24, a denormal near half the smallest). Rounding the text to a
// double and then to a float would then pick the even one, where strtof on
// the text picks the nearer.
bool float32_midpoint(double d);
// For a number whose text is `text` and whose double is `d`: when `d` is a
// float32 midpoint, the double of the float strtof reads from the text (so
// that every later float32 read of it is strtof's); else `d`. The readers'
// JSON parsers apply it as they parse, where they still have the text.
double float32_exact(double d, std::string_view text);
Result<Address> json_address(const Json& value, std::string_view path);

// A float32 as the JSON number with the fewest decimal digits that reads back
// to the same bits ("0.1", not "0.10000000149011612").
Json float_json(float f);

// The X-macro lists give the (name, enumerator) pairs; trailing columns are
// ignored. Used with `using Enum = ...;` in scope.
#define CAPSIM_PAIR_(e, n, ...) {n, Enum::e},

// The value named `name`, or an error that lists the known names.
template <typename E>
Result<E> from_name(std::string_view name, std::string_view path, std::string_view what,
                    const std::vector<std::pair<std::string_view, E>>& names) {
  for (const auto& [n, e] : names) {
    if (n == name) return e;
  }
  std::vector<std::string_view> known;  // only for the message: no allocation on a hit
  for (const auto& [n, e] : names) known.push_back(n);
  return field_error(
      path, fmt::format("unknown {} '{}' (known: {})", what, name, fmt::join(known, ", ")));
}

// `out = *value`, or value's error: one field per statement, without the
// scope CAPSIM_TRY_ASSIGN needs (switch cases, if/else).
template <typename T, typename U>
Status assign(T& out, Result<U> value) {
  if (!value.ok()) return value.error();
  out = std::move(value).value();
  return {};
}

}  // namespace capsim
