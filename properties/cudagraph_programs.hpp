// Random but valid programs for the cudagraph-tree properties.
//
// A generator draws a ProgramPlan: plain data made only of small integers and
// flags, so that a property-testing library can shrink it by dropping steps,
// calls and ops. `lower` turns any plan into a Program that World::run accepts
// (no unknown names, no shape mismatch, no call with a poisoned input) and
// keeps the generator's own bookkeeping next to it: for every call, which
// inputs the program made static (params, mark_static_address'd tensors,
// optimizer params and state, backward saved slots) and which are plain eager
// tensors. The RapidCheck generator of plans is in cudagraph_programs_rc.hpp,
// which only test code includes; this library does not depend on RapidCheck.
//
// How validity is kept without running the program:
//   - every tensor has sizes {numel}, except the 0-d and sliced values inside
//     bodies, which are never fed to another call, and the inputs of a
//     size-change fault, whose outputs are never used;
//   - outputs of a call are used as inputs (or read) only in the same step,
//     i.e. before the next new torch.compile invocation or mark_step_begin,
//     except by the kept-across-a-generation fault: such a call may raise E1
//     (the output was overwritten), so it binds no outputs of its own;
//   - no call consumes its inputs, so no recording expects a path output to
//     die during the graph (E3); the config keeps re-record mode (no E4);
//   - a function that mutates an input gets pairwise distinct tensors (the
//     eager oracle copies aliasing inputs separately), and static slots only
//     get 16-byte aligned tensors, except by the unaligned-static fault.
//
// Faults (a param's .data reassigned, zero_grad(set_to_none) on a grad, an
// optimizer dropped, an output kept across a generation, a size change, an
// input mutated, an unaligned static input) are plan fields like any other,
// so they shrink; the generator switches whole features off per case (swarm
// testing), so that a case without, say, mark_step reaches what mark_step hides.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/core/cudagraph_config.hpp"
#include "sim/core/torch_profile.hpp"
#include "sim/program/program.hpp"

namespace capsim {

// --- The plan: what a generator draws ------------------------------------------

// The op menu of generated bodies.
#define CAPSIM_PLAN_OPS(X)                                                  \
  X(kAdd, "add")                                                            \
  X(kMul, "mul")                                                            \
  X(kNeg, "neg")                                                            \
  X(kRelu, "relu")                                                          \
  X(kSum, "sum")                                                            \
  X(kClone, "clone")                                                        \
  X(kAlias, "alias")                                                        \
  X(kSlice, "slice")                                                        \
  X(kAddStatic, "add_")    /* add_ into a param or marked input */          \
  X(kAddData, "add_data_") /* add_ into a plain input: the mutation gate */ \
  X(kGeneric, "generic")   /* an op without an exact kernel (GenericOp) */
enum class PlanOp : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_PLAN_OPS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
inline constexpr std::uint32_t kPlanOpCount = 11;

struct OpPlan {
  PlanOp op = PlanOp::kAdd;
  std::uint32_t a = 0, b = 0;           // value picks, taken modulo the candidates
  std::uint32_t start = 0, length = 0;  // kSlice
};

struct FunctionPlan {
  CompilationMode mode = CompilationMode::kInference;
  // Slot counts. A backward has `saved` leading static slots (count_tangents)
  // and data slots (tangents); forward and inference graphs have params,
  // marked and data slots. At least one slot is always made.
  std::uint32_t params = 0, marked = 0, saved = 0, data = 1;
  std::vector<OpPlan> ops;
  std::vector<std::uint32_t> outputs;  // value picks
  // Ops [cut_at, cut_at + cut_len) (taken modulo the body) are a partition
  // cut of reason kCutReasons[cut_reason % 4]; cut_len 0: none.
  std::uint32_t cut_at = 0, cut_len = 0, cut_reason = 0;
  // What the compile-time skips read beyond the ops (docs/cudagraph-trees.md
  // §2.5): 0 none, 1 a float input (S4), 2 an opaque input (S4 before 2.12),
  // 3 two CUDA devices (S3), 4 a set_ on input 0 (S7; none before 2.13), 5 a
  // body that marks its first warmup incomplete (none before 2.14).
  std::uint32_t input_facts = 0;
};

// The knobs of newer releases a case sets; unset ones keep the profile's
// defaults (CudagraphConfig). None is a knob a profile may lack.
struct PlanKnobs {
  std::optional<bool> graph_partition;
  // cudagraph_capture_sizes = {{numel + capture_grow}}: the size-change
  // fault's keys of another growth, and every call without a key, run
  // directly.
  std::optional<std::uint32_t> capture_grow;
  std::optional<std::int64_t> dynamic_shape_warn_limit;
  bool skip_dynamic_graphs = false;
  // cudagraph_trees_generation_cloning, where the profile has it (2.14 on).
  bool generation_cloning = false;
  // cudagraph_managed_input_rerecord_limit and action "skip", where the
  // profile has them (2.15).
  std::optional<std::int64_t> managed_input_limit;
  bool managed_input_skip = false;
};
// Sets the knobs `knobs` holds on `config`, for programs of `numel`.
void apply_knobs(const PlanKnobs& knobs, std::int64_t numel, CudagraphConfig& config);

// Where a call's argument comes from; its meaning depends on the slot.
//   param slot:  params[pick]
//   marked slot: source 0: persistent marked tensor [pick]; 1: a fresh tensor
//                marked now (guard = pick is odd)
//   saved slot:  source 0: an output of this step [pick]; 1: the persistent
//                eager tensor; 2: a persistent marked tensor [pick]
//   data slot:   source 0: a fresh eager tensor (offset `offset` elements, so
//                1..3 is misaligned); 1: the persistent eager tensor; 2: an
//                output of this step [pick]; 3 (a fault): an output of an
//                earlier step [pick], kept across a generation
struct ArgPlan {
  std::uint32_t source = 0, pick = 0, offset = 0;
  // A fresh marked tensor's offset: 1..3 is the unaligned-static fault.
  std::uint32_t static_offset = 0;
};

struct CallPlan {
  std::uint32_t function = 0;
  std::vector<ArgPlan> args;    // one per slot; missing ones default
  std::uint32_t keep_mask = 0;  // bit k: output k is bound to a name
  std::uint32_t hold = 0;       // kept outputs die `hold` steps later (>= 4: never)
  bool read = false;            // read the first kept output
  std::optional<std::uint32_t> reassign_before;  // `params[i].data = ...` first
  // A fault, for functions of data slots and no slice: every input has `grow` more
  // elements than the program's tensors (a new symint, so a new graph).
  std::uint32_t grow = 0;
};

struct StepPlan {
  bool mark_step = false;  // torch.compiler.cudagraph_mark_step_begin()
  std::vector<CallPlan> calls;
  bool running_backward = false;  // a backward that is not cudagraphed ran
  bool optimizer_step = false;
  bool mark_grads = false;      // mark_static_address(p.grad) before the step
  std::uint32_t zero_grad = 0;  // 0: none; 1: set_to_none; 2: fill zeros
  std::optional<std::uint32_t> reassign_after;
  // A fault: the optimizer goes out of scope after the step (its finalizer
  // runs) and a new one is made over the same params.
  bool drop_optimizer = false;
};

struct OptimizerPlan {
  OptimizerKind kind = OptimizerKind::kSgd;
  std::uint32_t param_mask = 1;  // which params (never empty after lowering)
  // SGD with momentum 0.9: its first step makes the momentum buffers inside
  // the graph, and the second recompiles with them as static inputs.
  bool momentum = false;
};

struct ProgramPlan {
  std::uint64_t seed = 0;
  std::uint32_t numel = 8;              // 4..16
  std::uint32_t params = 1;             // 1..3
  std::vector<bool> marked_guards;      // persistent marked tensors, guard flag each
  std::vector<FunctionPlan> functions;  // at least one after lowering
  std::optional<OptimizerPlan> optimizer;
  std::vector<StepPlan> steps;
  // A decode loop after the steps (0: none): `moving_slice_steps` new
  // invocations of `src`, each followed by eager code viewing row k of its
  // output and `sink` reading that row in the same invocation: a managed
  // input whose pointer moves every step (2.15's managed-input demotion;
  // lowered under a profile that has it only).
  std::uint32_t moving_slice_steps = 0;
  // The swarm (shown in counterexamples only): the features this case
  // switched off, by name (cudagraph_programs_rc.hpp).
  std::vector<std::string> swarm_off;
  // The release whose tree manager runs the case: every property holds
  // under every profile.
  TorchProfile torch_profile = TorchProfile::kClassic;
  PlanKnobs knobs;
};

// --- The lowered program and the generator's bookkeeping -----------------------

// What the generator knows of one input of one compiled call.
enum class ArgKnowledge : std::uint8_t {
  kUnknown,    // an output of an earlier call, or a grad: the tree decides
  kStatic,     // made static by the program: never copied
  kNonStatic,  // a plain eager tensor: always copied at replay
};
inline constexpr std::int64_t kDefaultNumel = 0;  // GeneratedProgram::numel_at: the program's

struct GeneratedProgram {
  Program program;
  std::uint64_t seed = 0;
  std::int64_t numel = 0;
  // Per action: the knowledge of each input index (empty unless the action
  // is a Call or an OptimizerStep).
  std::vector<std::vector<ArgKnowledge>> knowledge;
  // Per action: the element count of a call's tensors when a size-change
  // fault made it differ from `numel` (else kDefaultNumel).
  std::vector<std::int64_t> numel_at;
  std::vector<std::string> swarm_off;
  // The release the program runs under, and its knobs: run_generated and
  // the traces of counterexamples take them.
  TorchProfile torch_profile = TorchProfile::kClassic;
  PlanKnobs knobs;
  // The first action that breaks PyTorch's contract: a call that takes an
  // output kept across a generation. From there PyTorch promises nothing (a
  // replayed output is overwritten silently, docs/cudagraph-trees.md §5.5),
  // so the tree properties check the program before it (`within_contract`).
  std::optional<std::size_t> contract_end;
  // Tallies, for coverage labels.
  std::size_t calls = 0, steps = 0, reassigns = 0, optimizer_steps = 0, mark_steps = 0;
  std::size_t managed_candidates = 0;  // args that are outputs of the same step
  // The faults this program holds.
  std::size_t older_outputs = 0, size_changes = 0, unaligned_statics = 0, optimizer_drops = 0;

  // The element count of the tensors of action `index`.
  std::int64_t numel_of(std::size_t index) const {
    const std::int64_t n = index < numel_at.size() ? numel_at[index] : kDefaultNumel;
    return n == kDefaultNumel ? numel : n;
  }
};

GeneratedProgram lower(const ProgramPlan& plan);

// `generated` cut before its contract_end (unchanged when it has none).
GeneratedProgram within_contract(GeneratedProgram generated);
// Its first `n` actions (and their knowledge).
GeneratedProgram first_actions(GeneratedProgram generated, std::size_t n);

// One line per function and per action, in a Python-like notation.
std::string describe(const GeneratedProgram& generated);
std::string describe_action(const Action& action);
std::string describe_function(const FunctionDef& def);

// How RapidCheck (and doctest) show a program in a counterexample.
std::ostream& operator<<(std::ostream& os, const GeneratedProgram& generated);

}  // namespace capsim
