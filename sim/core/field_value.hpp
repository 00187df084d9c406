// The typed value of one event field: one C++ type per `FieldType`
// (sim/core/event_fields.hpp), held in a variant in that table's order.
//
// Emitters pass plain values (`{F::graph, node.id}`, `{F::reason, "no_child"}`)
// and the constructor picks the type; lists whose element type says nothing
// (indices, ids) go through `int_list`. The text printer (`format_value`,
// the form of `capsim scenario`'s lines) and the JSON printer
// (traces/format/event_schema.hpp) are two printers of this one value; nothing
// parses a value back out of its text.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "model/address.hpp"
#include "model/check.hpp"
#include "sim/core/event_fields.hpp"

namespace capsim {

// Python's `Optional[int]`: a parent graph id, or None for a root.
struct IntOrNone {
  std::optional<std::int64_t> value;
  friend bool operator==(const IntOrNone&, const IntOrNone&) = default;
};
// A device address, printed "0x..." (model/address.hpp).
struct DevicePtr {
  Address value = 0;
  friend bool operator==(const DevicePtr&, const DevicePtr&) = default;
};
// FNV-1a 64 (model/digest.hpp), printed as 16 lower-case hex digits.
struct Digest {
  std::uint64_t value = 0;
  friend bool operator==(const Digest&, const Digest&) = default;
};
using IntList = std::vector<std::int64_t>;
using AddressList = std::vector<Address>;
using TextList = std::vector<std::string>;
using IntLists = std::vector<IntList>;

// An index list of any integer type, as an event holds it.
template <std::integral Int>
IntList int_list(const std::vector<Int>& values) {
  IntList out;
  out.reserve(values.size());
  for (const Int v : values) {
    if constexpr (std::is_unsigned_v<Int>) {
      CAPSIM_CHECK(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "an event integer fits int64");
    }
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}
template <std::integral Int>
IntLists int_lists(const std::vector<std::vector<Int>>& lists) {
  IntLists out;
  out.reserve(lists.size());
  for (const auto& l : lists) out.push_back(int_list(l));
  return out;
}

class FieldValue {
 public:
  // In CAPSIM_FIELD_TYPES order: `type()` is the index.
  using Storage = std::variant<std::int64_t, IntOrNone, bool, std::string, IntList, DevicePtr,
                               AddressList, TextList, IntLists, Digest>;

  template <std::integral Int>
  requires(!std::same_as<Int, bool>) FieldValue(Int v) : storage_(to_int64(v)) {}
  template <std::integral Int>
  requires(!std::same_as<Int, bool>) FieldValue(std::optional<Int> v)
      : storage_(IntOrNone{v ? std::optional<std::int64_t>(to_int64(*v)) : std::nullopt}) {}
  FieldValue(bool v) : storage_(v) {}
  FieldValue(std::string v) : storage_(std::move(v)) {}
  FieldValue(std::string_view v) : storage_(std::string(v)) {}
  FieldValue(const char* v) : storage_(std::string(v)) {}
  FieldValue(IntOrNone v) : storage_(v) {}
  FieldValue(IntList v) : storage_(std::move(v)) {}
  FieldValue(DevicePtr v) : storage_(v) {}
  FieldValue(AddressList v) : storage_(std::move(v)) {}
  FieldValue(TextList v) : storage_(std::move(v)) {}
  FieldValue(IntLists v) : storage_(std::move(v)) {}
  FieldValue(Digest v) : storage_(v) {}

  FieldType type() const { return static_cast<FieldType>(storage_.index()); }
  template <typename T>
  const T* get_if() const {
    return std::get_if<T>(&storage_);
  }
  const Storage& storage() const { return storage_; }
  friend bool operator==(const FieldValue&, const FieldValue&) = default;

 private:
  template <std::integral Int>
  static std::int64_t to_int64(Int v) {
    if constexpr (std::is_unsigned_v<Int>) {
      CAPSIM_CHECK(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "an event integer fits int64");
    }
    return static_cast<std::int64_t>(v);
  }
  Storage storage_;
};

// The text form: an integer in decimal, None, true/false, a text as it is,
// "[1,2]", "0x7f0000000200", "[0x...,0x...]", "[\"a\",\"b\"]" (JSON string
// escapes), "[[0],[1,2]]", 16 hex digits.
std::string format_value(const FieldValue& value);

// The text forms of the list types, for messages that print a list.
std::string format_list(const IntList& values);
std::string format_addresses(const AddressList& addresses);
std::string format_text_list(const TextList& values);
std::string format_index_lists(const IntLists& lists);

}  // namespace capsim
