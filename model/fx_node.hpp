// FxNode and FxNodeView: one node of a torch.fx-shaped graph, owned or seen.
//
// `FxNode` owns its target and arguments: the form a recorded region's
// backward graph is read into (AotBackwardBody) before a capture copies it.
// `FxNodeView` is how an FxGraph hands out its nodes. The graph keeps every
// node's arguments in one vector, its targets and name bases interned once,
// and a name as its base and a counter (torch.fx's `add`, `add_1`, ...): the
// view points into that storage and is valid until the graph next changes.
// Why: a node that owned a name, a target and an argument vector was three
// heap blocks, and a capture's walks over the nodes were cache misses.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/fx_arg.hpp"

namespace capsim {

// X(enumerator, name)
#define CAPSIM_FX_OPS(X)            \
  X(kPlaceholder, "placeholder")    \
  X(kCallFunction, "call_function") \
  X(kOutput, "output")

enum class FxOp : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_FX_OPS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view fx_op_name(FxOp op);

struct FxNode {
  FxOp op = FxOp::kCallFunction;
  std::string name;
  std::string target;
  std::vector<FxArg> args;
  friend bool operator==(const FxNode&, const FxNode&) = default;
};

struct FxNodeView {
  FxOp op = FxOp::kCallFunction;
  std::string_view target;
  std::span<const FxArg> args;
  // The name is `name_base` when `name_count` is 0, else `name_base_<count>`.
  std::string_view name_base;
  std::uint32_t name_count = 0;

  std::string name() const;
  // Appends name() to `out` without a temporary.
  void append_name(std::string& out) const;
};

}  // namespace capsim
