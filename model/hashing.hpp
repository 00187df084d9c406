// Hash functors for the lookup tables on capsim's per-call paths.
//
// Ordered maps cost a tree walk (and, for strings, a comparison per level)
// on every lookup; the tables that are looked up and never iterated use
// these hashes instead. A table whose order reaches output (a listing, an
// event, a file) stays ordered, or sorts what it hands out: iteration order
// of a hashed table must never be observable (docs/architecture.md,
// "Determinism").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace capsim {

// Strings, found by std::string_view or const char* without a copy
// (heterogeneous lookup: pair with std::equal_to<>).
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The id structs (TensorId, StorageId, ...): a `value` that is already unique.
struct IdHash {
  template <typename Id>
  std::size_t operator()(const Id& id) const {
    return std::hash<std::uint64_t>{}(static_cast<std::uint64_t>(id.value));
  }
};

}  // namespace capsim
