// FxArg: one argument of an FxGraph node, in torch.fx's vocabulary.
//
// An argument is None, a node reference, an int, a float, a bool, a string, a
// list, a tuple, a constant written verbatim (a device, or a value a recorder
// wrote in the node-line form, docs/trace-format.md §6.3) or a keyword
// argument (its name in `text()`, its value the one element of `items()`).
//
// Why the layout: a captured graph holds about four arguments per node, and
// almost all of them are node references and small integers. The scalar
// kinds live in the argument itself (32 bytes); the text and the items that
// only strings, verbatims, keywords and lists carry live in a payload on the
// heap, which the other kinds never allocate. Moving, remapping and
// destroying an argument then touches 32 bytes and no allocator (an argument
// holding a string and a vector inline was 88 bytes, and the capture's
// profile was its moves).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/check.hpp"

namespace capsim {

using FxNodeId = std::uint32_t;

struct FxArg {
  enum class Kind : std::uint8_t {
    kNone,
    kNode,
    kInt,
    kFloat,
    kBool,
    kString,
    kList,
    kTuple,
    kVerbatim,
    kKeyword
  };
  Kind kind = Kind::kNone;
  bool b = false;
  FxNodeId node = 0;
  std::int64_t i = 0;
  double f = 0.0;

  FxArg() = default;
  FxArg(const FxArg& other);
  FxArg(FxArg&&) noexcept = default;
  FxArg& operator=(const FxArg& other);
  FxArg& operator=(FxArg&&) noexcept = default;
  ~FxArg();

  static FxArg none() { return {}; }
  static FxArg ref(FxNodeId n) {
    FxArg a;
    a.kind = Kind::kNode;
    a.node = n;
    return a;
  }
  static FxArg integer(std::int64_t v) {
    FxArg a;
    a.kind = Kind::kInt;
    a.i = v;
    return a;
  }
  static FxArg real(double v) {
    FxArg a;
    a.kind = Kind::kFloat;
    a.f = v;
    return a;
  }
  static FxArg boolean(bool v) {
    FxArg a;
    a.kind = Kind::kBool;
    a.b = v;
    return a;
  }
  static FxArg string(std::string v);
  static FxArg of(std::vector<FxArg> items);
  static FxArg tuple(std::vector<FxArg> items);
  static FxArg verbatim(std::string text);
  static FxArg keyword(std::string name, FxArg value);

  // Whether `items()` holds arguments (a list, a tuple or a keyword's value).
  bool nests() const {
    return kind == Kind::kList || kind == Kind::kTuple || kind == Kind::kKeyword;
  }
  // A string's or a verbatim's text, a keyword's name; empty for the others.
  const std::string& text() const;
  // A list's or a tuple's items, a keyword's one value; empty for the others.
  const std::vector<FxArg>& items() const;
  // The same, to change in place; only for an argument that nests() (a
  // name of its own, so that reading a non-const scalar never lands here).
  std::vector<FxArg>& mutable_items();
  // The bytes this argument owns on the heap (its payload, the payload's
  // text and items, recursively), as a container reports them: what the
  // capture benchmark counts per node.
  std::size_t heap_bytes() const;

  friend bool operator==(const FxArg& a, const FxArg& b);

 private:
  struct Payload;
  std::unique_ptr<Payload> payload_;
  Payload& payload();
};

struct FxArg::Payload {
  std::string text;
  std::vector<FxArg> items;
};

inline FxArg::~FxArg() = default;

}  // namespace capsim
