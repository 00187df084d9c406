// The skip oracle: which compile-time cudagraph skip PyTorch takes for one
// compile of a graph, written from the conditions docs/cudagraph-trees.md
// states (§2.5, its skip table in §7 and the "Version profiles" table), not
// from the World's or the tree manager's code (sim/world/partitions.cpp,
// World::compile), so that `cudagraphs.skips-as-documented.*` can catch a
// model whose skip no longer fires and whose graph is cudagraphed anyway.
// It reads only the graph's FunctionDef, whether the call has symints, the
// sizes and strides of the call's tensor arguments, and the config with its
// torch profile's switches.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "sim/core/cudagraph_config.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// What a compile of a graph does, as the doc states it.
struct SkipVerdict {
  enum class Kind : std::uint8_t {
    kNone,    // no compile-time skip: cudagraphed, partitioned or run directly
    kLogged,  // a `skip` event with `id`; calls run eagerly (compile_time_skip)
    kSilent,  // S4 with graph partitions: no event, each call `eager reason=silent_skip`
  };
  Kind kind = Kind::kNone;
  // The skip (kSkipMutatedInputs, S1, to kSkipInputStorageReplaced, S7) for
  // kLogged and kSilent.
  std::optional<Decision> id;
  // cudagraph_or_error (2.9 on): the logged skip raises E8 at every call.
  bool raises = false;
  // Why, in the doc's words, for a failure line.
  std::string why;
};

// The sizes and strides of one tensor argument of the compiling call.
struct ArgLayout {
  Dims sizes;
  Dims strides;
};

// The verdict for a compile of `def` under `config`; `dynamic`: the call has
// symint inputs (a non-empty int key); `args`: the layouts of its tensor
// arguments (none given: all contiguous).
SkipVerdict documented_skip(const FunctionDef& def, bool dynamic, const CudagraphConfig& config,
                            std::span<const ArgLayout> args = {});

// The doc's words that the run-time oracle (runtime_skip_oracle.hpp) shares:
// the inputs the body writes (an in-place op's first operand, followed
// through views back to the input it views), and whether input `i` is a
// compile-time static input (§3: the lifted params and buffers, and the
// nn.Parameters when inline_inbuilt_nn_modules is on, always from 2.12).
std::set<std::uint32_t> written_inputs(const FunctionDef& def);
bool static_input(const FunctionDef& def, std::uint32_t i, const CudagraphConfig& config);

}  // namespace capsim
