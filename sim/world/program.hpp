// Program: the user actions a World runs (docs/architecture.md, "sim/").
//
// A program is what a training or inference loop does, reduced to the steps
// that matter for capture semantics: make tensors and parameters, call compiled
// functions (each call of a torch.compile-wrapped callable is a new
// invocation), run eager code, accumulate grads, step and zero optimizers,
// reassign `.data`, mark steps, drop references, read values, run backwards
// (eager or through compiled autograd) and run a compiled-autograd scenario.
// Names refer
// to Python objects; an object keeps its identity (and its static mark and its
// .grad) when its `.data` is reassigned, as in PyTorch.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/kernel_launch.hpp"
#include "sim/autograd/capture_mode.hpp"
#include "sim/autograd/imported_graph.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// A fresh tensor in the default (eager) pool. `offset` elements are skipped
// at the front of its storage, so offset 1 gives a misaligned data pointer.
struct NewTensor {
  std::string name;
  Dims sizes;
  // none: uniform in [-1, 1) from the World's RNG (an integer dtype: an
  // integer in [0, 16); bool: whether it is >= 0)
  std::optional<float> fill;
  std::int64_t offset = 0;
  bool parameter = false;  // an nn.Parameter
  // A leaf that requires grad (it gets an AccumulateGrad). Unlike
  // nn.Parameter's, the default is False for parameters too: programs
  // written before autograd ran in the World build no graphs.
  bool requires_grad = false;
  DType dtype = DType::kFloat32;  // its element size and how fill is stored
  // none: contiguous. Otherwise the tensor's strides (a slice of a bigger
  // batch, a transposed input): its storage spans offset + the elements the
  // strides reach, all filled.
  std::optional<Dims> strides = std::nullopt;
};
// torch._dynamo.mark_static_address(t, guard=...). `name` may be "p.grad".
// No `guard` takes the profile's default (`mark_static_guard_default`: True
// up to 2.9.0, False from 2.9.1).
struct MarkStatic {
  std::string name;
  std::optional<bool> guard = std::nullopt;
};
// A call of a compiled function (cudagraphs through the tree manager, or the
// plain API when configured).
struct Call {
  std::string function;
  std::vector<std::string> args;      // names, or "p.grad"
  std::vector<std::string> outputs;   // names bound to the results ("" drops one)
  std::vector<std::int64_t> int_key;  // the symint inputs (dynamic shapes)
  // Entering a torch.compile-wrapped callable bumps the generation. Default:
  // yes for forward and inference graphs, no for backward graphs (autograd
  // calls them inside the same invocation).
  std::optional<bool> new_invocation;
  // Names whose references move into the call's input list (boxed calling
  // convention), e.g. saved tensors handed to a backward.
  std::vector<std::string> consume;
};
// Plain eager PyTorch: the body runs now, allocating from the default pool.
// When an argument requires grad, the body runs through the World's autograd
// engine (sim/autograd/autograd_body.hpp), which records the backward graph;
// the graph keeps the tensors its nodes save alive. Under torch.no_grad()
// (`no_grad`) no graph is recorded and the outputs need no grad: an `alias`
// body so run is `t.detach()`.
struct EagerCall {
  std::string function;
  std::vector<std::string> args;
  std::vector<std::string> outputs;
  bool no_grad = false;
};
struct Del {
  std::string name;
};
struct Read {
  std::string name;
};
// `name.data = <new tensor>`: same object, new storage.
struct ReassignData {
  std::string name;
  std::optional<float> fill;
};
struct MarkStepBegin {};
// A backward that is not cudagraphed ran (it clears the pending flag).
struct SetToRunningBackward {};
// AccumulateGrad: `param.grad` takes `grad` if it is None, else adds it in place.
struct AccumulateGrad {
  std::string param;
  std::string grad;
};

// `tensor.backward(gradient=grad, retain_graph=...)` over the graph that
// eager calls built. Eager: the World's autograd engine runs it. Compiled
// (compiled autograd enabled, torch._dynamo.compiled_autograd): Phase A, the
// cache, on a miss the functional capture lowered to a BACKWARD function of
// the tree manager, then that function called through the tree manager like
// every other, its grads accumulated into the leaves' .grad as AccumulateGrad
// does (sim/world/world_autograd.cpp).
struct Backward {
  std::string tensor;
  std::optional<std::string> grad;  // none: ones, for a scalar only
  bool retain_graph = false;
  bool compiled = false;
  bool dynamic = true;  // compiled only: _enable(..., dynamic=)
};

// X(enumerator, name)
#define CAPSIM_OPTIMIZER_KINDS(X) \
  X(kSgd, "sgd")                  \
  X(kAdam, "adam")                \
  X(kAdamW, "adamw")
enum class OptimizerKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_OPTIMIZER_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view optimizer_kind_name(OptimizerKind kind);

struct CreateOptimizer {
  std::string name;
  OptimizerKind kind = OptimizerKind::kAdam;
  std::vector<std::string> params;
  SgdHyper sgd;
  AdamHyper adam;
};
// A compiled `opt.step()`: a new torch.compile invocation.
struct OptimizerStep {
  std::string name;
};
struct ZeroGrad {
  std::string name;
  bool set_to_none = true;
};
// nn.Module.zero_grad(set_to_none=...) of the module `name`, or the user's
// own `p.grad = None` (`name` is then the param's): each of `params` loses
// its grad, or has it zeroed in place. The same zero_grad event as an
// optimizer's.
struct ClearGrads {
  std::string name;
  std::vector<std::string> params;
  bool set_to_none = true;
};
// The optimizer goes out of scope: its finalizer releases the static marks.
struct DropOptimizer {
  std::string name;
};
// torch._dynamo.reset(): the tree manager is shut down, compiled code dropped.
struct Reset {};
// A built-in compiled-autograd scenario (sim/scenarios/autograd_scenarios.hpp), run as
// one action: each of its forwards builds a graph on the World's tensors with
// engine ops a program's bodies cannot express (hooks, custom functions, views),
// and each backward is a compiled Backward of that graph with its capture in
// `mode` (sim/world/world_capture.cpp).
struct RunCaptureScenario {
  std::string name;
  CaptureMode mode = CaptureMode::kFunctional;
};

using Action = std::variant<NewTensor, MarkStatic, Call, EagerCall, Del, Read, ReassignData,
                            MarkStepBegin, SetToRunningBackward, AccumulateGrad, CreateOptimizer,
                            OptimizerStep, ZeroGrad, DropOptimizer, Reset, RunCaptureScenario,
                            DefineAutogradGraph, CompiledBackward, Backward, ClearGrads>;
// The action kinds' names, in variant order.
std::string_view action_name(const Action& action);
// One action of each kind with its fields at their defaults, in variant
// order: what a reader that picks the kind by its name starts from.
const std::array<Action, std::variant_size_v<Action>>& action_kinds();
// Whether `action` gives the name `name` a new tensor: a new tensor, a
// reassigned .data, or a call (compiled or eager) that binds it as an output.
bool action_binds(const Action& action, const std::string& name);

struct Program {
  std::vector<FunctionDef> functions;
  std::vector<Action> actions;
};

// The limit on actions in one program held in memory (a Program, a
// `capsim simulate` file): each costs a few hundred bytes there.
inline constexpr std::size_t kMaxActions = std::size_t{1} << 22;
// The limit on action indices in one run. A trace replays one action at a
// time and keeps none, so its limit is its line limit (kMaxTraceLines in
// traces/format/trace_format.hpp; every action is a line): a 10^7-event trace has
// about 10^7 actions.
inline constexpr std::size_t kMaxRunActions = std::size_t{1} << 26;
static_assert(kMaxActions <= kMaxRunActions);

}  // namespace capsim
