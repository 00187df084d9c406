// The lowering of one planned function (a FunctionPlan) to a FunctionDef,
// shared by cudagraph_programs.cpp, which lowers whole programs. Internal to
// properties/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "properties/cudagraph_programs.hpp"

namespace capsim {

enum class SlotKind : std::uint8_t { kParam, kMarked, kSaved, kData };

struct LoweredFunction {
  FunctionDef def;
  std::vector<SlotKind> slots;
  std::vector<bool> output_full;  // the output has sizes {numel}
  bool mutates = false;
  bool slices = false;    // a slice's bounds are fixed at numel
  bool generics = false;  // a generic op's result metadata is fixed at numel
  // Only data slots, no slice and no generic op: the body is valid at any size.
  bool resizable() const {
    return !slices && !generics &&
           std::all_of(slots.begin(), slots.end(), [](SlotKind k) { return k == SlotKind::kData; });
  }
};

// Lowers `p`, the program's function `index`, over `program_params` params
// of `numel` elements; the newer releases' facts as `profile` has them.
LoweredFunction lower_function(const FunctionPlan& p, std::size_t index,
                               std::uint32_t program_params, std::int64_t numel,
                               TorchProfile profile);

}  // namespace capsim
