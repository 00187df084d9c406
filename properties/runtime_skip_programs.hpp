// Small programs that reach the run-time skips of docs/cudagraph-trees.md
// (§2.3 steps 3, 4 and 7, §4, §4.1): the mutation gate (the run-time S1), the
// re-record limit (E5) and 2.15's managed-input limit (E9 under action
// "skip", demotion under "copy"), for the
// `cudagraphs.skips-as-documented.s1-runtime`, `.e5` and `.e9` properties.
//
// Two graphs: `src(x) = x + x` over a fresh x of 6 rows of 8 floats, and
// `g(a, q) = a * q`, where q (input 1) is a lifted Parameter (static) and
// maybe one of `g`'s inputs is written in place (`a.add_(q)` or `q.add_(a)`).
// Each step is either
//   - `o = src(x)` (a new torch.compile invocation), then eager code viewing
//     row k of o, or a fresh eager tensor, as `a`, then `g(a, q_j)` in the
//     same invocation: a row of o is an output of the graph before on the
//     tree path (cudagraph-managed); a fresh tensor is not;
//   - or `g(a, q_j)` alone, of a fresh a, as a new invocation.
// The generator knows by construction which argument is which (`RuntimeCall`);
// the oracle (runtime_skip_oracle.hpp) reads only that, the FunctionDef and
// the config. Plain data that RapidCheck shrinks (runtime_skip_programs_rc.hpp);
// `lower_runtime_skips` makes a valid program of any plan and keeps it inside
// what the oracle can decide from outside the tree manager:
//   - a step that writes a's plain input takes a row of o when src ran, and
//     a fresh tensor otherwise, so that the gate's memo per (node, function)
//     (§2.3 step 3, invariant 17) never meets one graph with both kinds;
//   - when some step has no src, `g` is called at nodes the oracle does not
//     follow, so the two limits are set past the number of calls;
//   - error mode (E4: inline_inbuilt_nn_modules and input-mutation support
//     both off, up to 2.11) is left out: support off keeps inlining on;
//   - under action "skip" the re-record limit is the default 128, so that E5
//     and E9 never fall on one call, whose order the doc does not give.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "properties/cudagraph_programs.hpp"
#include "sim/core/cudagraph_config.hpp"

namespace capsim {

// The rows of src's output, and the params q is drawn from.
inline constexpr std::uint32_t kRuntimeRows = 6;
inline constexpr std::uint32_t kRuntimeParams = 2;

struct RuntimeStepPlan {
  bool src = true;          // o = src(x) first, in this step's invocation
  std::uint32_t arg = 0;    // a: row `arg` of o if below kRuntimeRows (and src ran), else fresh
  std::uint32_t param = 0;  // q: params[param % kRuntimeParams]
};

struct RuntimePlan {
  std::uint64_t seed = 0;
  TorchProfile torch_profile = TorchProfile::kClassic;
  std::uint32_t mutate = 0;    // 0: none; 1: a.add_(q) (a plain input); 2: q.add_(a) (static)
  bool inline_modules = true;  // inline_inbuilt_nn_modules (up to 2.11)
  bool support_input_mutation = true;           // cudagraph_support_input_mutation
  bool or_error = false;                        // cudagraph_or_error (2.9 on)
  std::optional<std::uint32_t> rerecord_limit;  // cudagraph_unexpected_rerecord_limit
  std::optional<std::uint32_t> managed_limit;   // cudagraph_managed_input_rerecord_limit (2.15)
  bool managed_skip = false;                    // its action "skip" (2.15)
  std::vector<RuntimeStepPlan> steps;           // at least one after lowering
};

// What the program makes of one call of `g`, as the generator knows it.
struct RuntimeCall {
  std::size_t action = 0;            // the Call's action index
  bool after_src = false;            // src ran earlier in the same invocation
  std::optional<std::uint32_t> row;  // a is this row of src's output; none: a fresh tensor
  std::uint32_t param = 0;           // q is params[param]
};

struct RuntimeProgram {
  GeneratedProgram generated;
  CudagraphConfig config;
  std::vector<RuntimeCall> calls;  // every call of `g`, in order
};
RuntimeProgram lower_runtime_skips(const RuntimePlan& plan);

// The FunctionDef of `g` in `program`.
const FunctionDef& runtime_g(const RuntimeProgram& program);

// The config line and the program, for a counterexample.
std::string describe(const RuntimeProgram& program);

}  // namespace capsim
