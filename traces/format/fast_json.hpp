// The pieces the reader's fast path (line_fast.hpp) reads one line's object
// with: simdjson's DOM values read into capsim's types by the general
// reader's rules (json_fields.hpp), each returning nullopt where the general
// reader would do anything else (refuse the value, or read it through a rule
// of its own that this file does not repeat). Internal to traces/: only the
// fast path's .cpp files include it, so simdjson stays out of every other
// header.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/address.hpp"
#include "model/check.hpp"
#include "sim/core/events.hpp"
#include "sim/program/program.hpp"

namespace capsim::fast_line {

using simdjson::dom::element;
using simdjson::dom::element_type;

// A JSON integer that fits int64. A uint64 past it or a number with a
// fraction or an exponent is declined (json_integer has messages for them).
inline std::optional<std::int64_t> integer(element e) {
  if (e.type() != element_type::INT64) return std::nullopt;
  std::int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

inline std::optional<std::int64_t> bounded(element e, IntRange range) {
  const std::optional<std::int64_t> v = integer(e);
  if (!v || !range.contains(*v)) return std::nullopt;
  return v;
}

inline std::optional<std::string_view> text(element e) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
  return s;
}

inline std::optional<bool> boolean(element e) {
  bool b = false;
  if (e.get_bool().get(b) != simdjson::SUCCESS) return std::nullopt;
  return b;
}

// json_address's rule: "0x" and 1 to 16 lower-case hex digits.
inline std::optional<Address> address(element e) {
  const std::optional<std::string_view> s = text(e);
  if (!s || s->size() < 3 || s->size() > 18 || (*s)[0] != '0' || (*s)[1] != 'x') {
    return std::nullopt;
  }
  Address a = 0;
  for (const char c : s->substr(2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return std::nullopt;
    a = a * 16 + static_cast<Address>(digit);
  }
  return a;
}

// An array of at most `limit` items, each read by `read`.
template <typename Item, typename Read>
std::optional<std::vector<Item>> list(element e, std::size_t limit, Read read) {
  simdjson::dom::array array;
  if (e.get_array().get(array) != simdjson::SUCCESS || array.size() > limit) return std::nullopt;
  std::vector<Item> out;
  out.reserve(array.size());
  for (element item : array) {
    std::optional<Item> v = read(item);
    if (!v) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

struct KeyValue {
  std::string_view key;
  element value;
};

// A line's object: its keys and values in its order, at most kMaxKeys of
// them (a line with more goes the general way, whose duplicate-key watch
// switches to a set past 32 keys; see trace_reader.cpp), and which of them a
// reader has taken: a line is read only when every key was.
class Members {
 public:
  static constexpr std::size_t kMaxKeys = 32;

  // False when `root` is not an object, repeats a key or has too many.
  bool assign(element root) {
    kvs_.clear();
    taken_ = 0;
    simdjson::dom::object object;
    if (root.get_object().get(object) != simdjson::SUCCESS) return false;
    for (simdjson::dom::key_value_pair kv : object) {
      if (kvs_.size() == kMaxKeys || find_index(kv.key) < kvs_.size()) return false;
      kvs_.push_back({kv.key, kv.value});
    }
    return true;
  }

  std::size_t size() const { return kvs_.size(); }
  const KeyValue& at(std::size_t i) const {
    CAPSIM_CHECK(i < kvs_.size());
    return kvs_[i];
  }
  // The value of `key`, marked as taken; nullptr when the line has none.
  const element* take(std::string_view key) {
    const std::size_t i = find_index(key);
    if (i == kvs_.size()) return nullptr;
    taken_ |= std::uint32_t{1} << i;
    return &kvs_[i].value;
  }
  // The value of member i, marked as taken (a walk over at() that reads it).
  const element& take_at(std::size_t i) {
    CAPSIM_CHECK(i < kvs_.size());
    taken_ |= std::uint32_t{1} << i;
    return kvs_[i].value;
  }
  // Every key was taken (ObjectReader::finish, less the "x_" extensions,
  // which the general path skips: a line with one is declined).
  bool all_taken() const {
    return kvs_.size() == kMaxKeys ? taken_ == ~std::uint32_t{0}
                                   : taken_ == (std::uint32_t{1} << kvs_.size()) - 1;
  }

 private:
  std::size_t find_index(std::string_view key) const {
    // Lengths and first bytes first: keys are short and mostly differ there,
    // and a memcmp call per pair was a few percent of reading a trace.
    for (std::size_t i = 0; i < kvs_.size(); ++i) {
      const std::string_view k = kvs_[i].key;
      if (k.size() == key.size() && (k.empty() || k[0] == key[0]) && k == key) return i;
    }
    return kvs_.size();
  }
  std::vector<KeyValue> kvs_;  // kept, with its capacity, across lines
  std::uint32_t taken_ = 0;
  static_assert(kMaxKeys <= 32, "taken_ has a bit per key");
};

// The payload readers, called once the envelope (seq, type, and action or
// index) is checked and taken; each reads the rest of the line, or nullopt.
std::optional<Event> read_event(Members& m, EventKind kind, std::size_t action, bool real_run);
std::optional<Action> read_action(Members& m);

}  // namespace capsim::fast_line
