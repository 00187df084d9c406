// Strict reading of a trace line's JSON objects (see json_fields.hpp): ObjectReader's getters,
// checked integers, float32s and addresses, and the shortest float text that reads back.
#include "traces/format/json_fields.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "traces/format/json_text.hpp"

namespace capsim {

namespace {

// `s` with each byte outside a valid UTF-8 sequence as the text \xNN.
std::string valid_utf8(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    const std::size_t n = utf8_sequence(s);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s.front()));
      s.remove_prefix(1);
    } else {
      out.append(s.substr(0, n));
      s.remove_prefix(n);
    }
  }
  return out;
}

// `j` with every string and key made valid UTF-8 (valid_utf8).
Json with_valid_utf8(const Json& j) {
  if (j.is_string()) return valid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& v : j) out.push_back(with_valid_utf8(v));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (const auto& [k, v] : j.items()) out[valid_utf8(k)] = with_valid_utf8(v);
    return out;
  }
  return j;
}

}  // namespace

std::string printable_json(const Json& j, int indent) {
  try {
    return j.dump(indent);
  } catch (const Json::type_error&) {
    // Only invalid UTF-8 makes dump() throw: walk the document once, then.
    return with_valid_utf8(j).dump(indent);
  }
}

void put_figure(Json& j, const std::string& key, const SaturatingSum& figure) {
  j[key] = figure.value;
  if (figure.saturated) j[key + "_saturated"] = true;
}

Error field_error(std::string_view path, std::string_view problem) {
  Error e = make_error(fmt::format("field '{}': {}", path, problem));
  e.field = std::string(path);
  return e;
}

namespace {

std::string_view type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number with a fraction or exponent";
    case Json::value_t::binary:
    case Json::value_t::discarded: break;
  }
  return "an unsupported value";
}

Error wrong_type(std::string_view path, std::string_view expected, const Json& got) {
  return field_error(path, fmt::format("expected {}, got {}", expected, type_name(got)));
}

}  // namespace

Result<std::int64_t> json_integer(const Json& value, std::string_view path) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<std::int64_t>();
  }
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return field_error(path, "integer out of range (more than 2^63-1)");
    }
    return static_cast<std::int64_t>(u);
  }
  if (value.is_number_float()) {
    // nlohmann stores an integer literal beyond int64 and uint64 as a double;
    // one within range came with a fraction or an exponent ("1.0", "1e3").
    const double d = value.get<double>();
    if (d >= 0x1p63) return field_error(path, "integer out of range (more than 2^63-1)");
    if (d <= -0x1p63) return field_error(path, "integer out of range (less than -2^63)");
    return wrong_type(path, "an integer", value);
  }
  return wrong_type(path, "an integer", value);
}

std::optional<float> float32_of_double(double d) {
  // Round to nearest, as a float32 parse would: a number above FLT_MAX by less
  // than half an ulp of the top binade (2^103) is FLT_MAX. That includes
  // FLT_MAX's own shortest text, 3.4028235e+38, which as a double lies above it.
  constexpr double kMax = static_cast<double>(std::numeric_limits<float>::max());
  constexpr double kHalfUlp = 0x1p103;
  if (!std::isfinite(d) || std::fabs(d) >= kMax + kHalfUlp) return std::nullopt;
  if (std::fabs(d) > kMax)
    return d > 0 ? std::numeric_limits<float>::max() : -std::numeric_limits<float>::max();
  return static_cast<float>(d);
}

bool float32_midpoint(double d) {
  if (!std::isfinite(d) || std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max())) {
    return false;
  }
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return false;
  const float other =
      std::nextafter(f, d > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                   : -std::numeric_limits<float>::infinity());
  // Two neighbouring floats' halfway point needs one bit more than a float:
  // a double holds it exactly.
  return (static_cast<double>(f) + static_cast<double>(other)) / 2 == d;
}

double float32_exact(double d, std::string_view text) {
  if (!float32_midpoint(d)) return d;
  const std::string s(text.substr(0, 4096));
  char* end = nullptr;
  errno = 0;
  const float f = std::strtof(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(f)) return d;
  return static_cast<double>(f);
}

Result<float> json_float32(const Json& value, std::string_view path) {
  if (!value.is_number()) return wrong_type(path, "a number", value);
  const std::optional<float> f = float32_of_double(value.get<double>());
  if (!f) return field_error(path, "number out of float32 range");
  return *f;
}

Result<Address> json_address(const Json& value, std::string_view path) {
  if (!value.is_string()) return wrong_type(path, "a hex address string \"0x...\"", value);
  const std::string& s = value.get_ref<const std::string&>();
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || s[1] != 'x') {
    return field_error(
        path, fmt::format("expected a hex address \"0x...\", got \"{}\"", s.substr(0, 40)));
  }
  Address a = 0;
  for (std::size_t i = 2; i < s.size(); ++i) {
    const char c = s[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) {
      return field_error(path, fmt::format("expected lower-case hex digits, got \"{}\"", s));
    }
    a = a * 16 + static_cast<Address>(digit);
  }
  return a;
}

Result<ObjectReader> ObjectReader::of(const Json& object, std::string path) {
  if (!object.is_object()) return wrong_type(path.empty() ? "<line>" : path, "an object", object);
  return ObjectReader(object, std::move(path));
}

std::string ObjectReader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

void ObjectReader::skip(std::string_view key) {
  known_.emplace(key);
}

bool ObjectReader::has(std::string_view key) const {
  return object_->contains(key);
}

Result<const Json*> ObjectReader::value(std::string_view key) {
  known_.emplace(key);
  auto it = object_->find(key);
  if (it == object_->end()) return field_error(path_of(key), "missing");
  return &*it;
}

Result<std::int64_t> ObjectReader::integer(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  return json_integer(*v, path_of(key));
}

Result<std::uint64_t> ObjectReader::unsigned_integer(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  CAPSIM_TRY_ASSIGN(const std::int64_t i, json_integer(*v, path_of(key)));
  if (i < 0) return field_error(path_of(key), "expected a non-negative integer");
  return static_cast<std::uint64_t>(i);
}

Result<bool> ObjectReader::boolean(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  if (!v->is_boolean()) return wrong_type(path_of(key), "a boolean", *v);
  return v->get<bool>();
}

Result<std::string> ObjectReader::string(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  if (!v->is_string()) return wrong_type(path_of(key), "a string", *v);
  return v->get<std::string>();
}

Result<float> ObjectReader::float32(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  return json_float32(*v, path_of(key));
}

Result<Address> ObjectReader::address(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  return json_address(*v, path_of(key));
}

Result<std::vector<std::int64_t>> ObjectReader::integer_list(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  if (!v->is_array()) return wrong_type(path_of(key), "an array of integers", *v);
  std::vector<std::int64_t> out;
  out.reserve(v->size());
  for (std::size_t i = 0; i < v->size(); ++i) {
    CAPSIM_TRY_ASSIGN(const std::int64_t x,
                      json_integer((*v)[i], fmt::format("{}[{}]", path_of(key), i)));
    out.push_back(x);
  }
  return out;
}

Result<std::vector<std::uint32_t>> ObjectReader::index_list(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const std::vector<std::int64_t> ints, integer_list(key));
  std::vector<std::uint32_t> out;
  out.reserve(ints.size());
  for (std::size_t i = 0; i < ints.size(); ++i) {
    if (ints[i] < 0 || ints[i] > std::numeric_limits<std::uint32_t>::max()) {
      return field_error(fmt::format("{}[{}]", path_of(key), i), "index out of range");
    }
    out.push_back(static_cast<std::uint32_t>(ints[i]));
  }
  return out;
}

Result<std::vector<std::string>> ObjectReader::string_list(std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, value(key));
  if (!v->is_array()) return wrong_type(path_of(key), "an array of strings", *v);
  std::vector<std::string> out;
  out.reserve(v->size());
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return wrong_type(fmt::format("{}[{}]", path_of(key), i), "a string", (*v)[i]);
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

Status ObjectReader::finish() const {
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    const std::string& key = it.key();
    if (key.starts_with("x_") || known_.count(key) != 0) continue;
    return field_error(path_of(key), "unknown field (extensions must start with \"x_\")");
  }
  return {};
}

// The float as the double with the fewest decimal digits that reads back to
// the same float32 ("0.1", not "0.10000000149011612"), so lines stay short
// and readable. The shortest float text goes through a double on the way back
// (double rounding), so the result is checked and the exact widening is the
// fallback. Non-finite floats have no JSON number: nlohmann writes null, and
// reading refuses it.
Json float_json(float f) {
  if (std::isfinite(f)) {
    const std::string shortest = fmt::format("{}", f);
    const double d = std::strtod(shortest.c_str(), nullptr);
    // The shortest text of FLT_MAX reads as a double above FLT_MAX; json_float32
    // rounds it back, but the double itself is kept exact here so that the
    // value round-trips through any JSON reader.
    const bool in_range = std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max());
    if (in_range && static_cast<float>(d) == f && std::signbit(d) == std::signbit(f)) {
      return Json(d);
    }
  }
  return Json(static_cast<double>(f));
}

}  // namespace capsim
