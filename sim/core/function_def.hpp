// FunctionDef: the body of one compiled function, as the tree manager sees it.
//
// Inductor hands cudagraph trees a callable over a flat list of tensor inputs;
// capsim describes that callable as a tiny SSA body: values 0..n-1 are the
// inputs, value n+k is the result of op k, and `outputs` lists the values that
// are returned. In-place ops (add_, copy_, the optimizer updates) mutate their
// first argument and return it; views (alias, slice) return a tensor over
// their argument's storage. Running a body eagerly executes each op now;
// capturing it appends the same launches to a StepProgram with the addresses
// baked in (body_interpreter.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernel_launch.hpp"
#include "model/result.hpp"
#include "model/tensor.hpp"
#include "sim/core/non_tensor_input.hpp"

namespace capsim {

// X(enumerator, name, arity, in_place)
#define CAPSIM_BODY_OPS(X)                                                                 \
  X(kAdd, "add", 2, false)                                                                 \
  X(kSub, "sub", 2, false)                                                                 \
  X(kMul, "mul", 2, false)                                                                 \
  X(kDiv, "div", 2, false)                                                                 \
  X(kNeg, "neg", 1, false)                                                                 \
  X(kRelu, "relu", 1, false)                                                               \
  X(kSum, "sum", 1, false) /* over `dims` (default every dim), keepdim or not */           \
  X(kMm, "mm", 2, false)                                                                   \
  X(kClone, "clone", 1, false)                                                             \
  X(kFull, "full", 0, false) /* a fresh tensor of `sizes` filled with `scalar` */          \
  X(kAddInplace, "add_", 2, true)                                                          \
  X(kCopyInplace, "copy_", 2, true)                                                        \
  X(kAlias, "alias", 1, false)                /* a view with the same metadata */          \
  X(kSlice, "slice", 1, false)                /* a view of [start, end) along dim 0 */     \
  X(kTranspose, "t", 1, false)                /* a 2-d view with its dims swapped */       \
  X(kView, "view", 1, false)                  /* a contiguous operand seen as `sizes` */   \
  X(kExpand, "expand", 1, false)              /* a broadcast view to `sizes` */            \
  X(kReluBackward, "relu_backward", 2, false) /* grad, result */                           \
  X(kSgd, "sgd", 3, true)                     /* param, grad, momentum_buffer */           \
  X(kSgdPlain, "sgd_plain", 2, true)          /* param, grad: SGD without momentum */      \
  X(kAdam, "adam", 5, true)                   /* param, grad, exp_avg, exp_avg_sq, step */ \
  X(kAdamW, "adamw", 5, true)                                                              \
  X(kExp, "exp", 1, false) /* float32, as kernel_bodies.hpp's f_exp */                     \
  X(kLog, "log", 1, false)                                                                 \
  X(kSigmoid, "sigmoid", 1, false)                                                         \
  X(kTanh, "tanh", 1, false)                                                               \
  X(kRsqrt, "rsqrt", 1, false)                                                             \
  X(kSqrt, "sqrt", 1, false)                                                               \
  X(kReciprocal, "reciprocal", 1, false)                                                   \
  X(kAmax, "amax", 1, false)            /* the largest over `dims`, as sum */              \
  X(kAsStrided, "as_strided", 1, false) /* a view: sizes, strides, storage_offset */       \
  X(kGeneric, "generic", -1, false)     /* any op, modelled from metadata (GenericOp) */   \
  X(kGetItem, "getitem", 1, false)      /* result `index` of a generic op's tuple */

enum class BodyOpKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name, arity, in_place) e,
  CAPSIM_BODY_OPS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view body_op_name(BodyOpKind kind);
// The args an op takes; -1 for generic, which takes 0 to kMaxGenericArgs.
int body_op_arity(BodyOpKind kind);
bool body_op_in_place(BodyOpKind kind);
// Whether the op's value is a view of its first operand that launches no
// kernel (alias, slice, t, view, expand, as_strided); in-place ops return a
// view too, but
// launch their update.
bool body_op_is_view(BodyOpKind kind);
// Argument positions an in-place op writes (SGD: param and momentum buffer).
std::vector<std::uint32_t> body_op_written_args(BodyOpKind kind);

using ValueIndex = std::uint32_t;

// What a generic op is (docs/trace-format.md §4.1): an aten op capsim has no
// exact kernel for, described by its metadata. Its tensors, their bytes, what
// it views and what it writes are exact; its values are a fixed mix of the op
// and every byte of its args (kernel_bodies.hpp, generic_mix_run).
struct GenericOp {
  std::string target;  // "aten.convolution.default"
  std::string attrs;   // its non-tensor arguments as text
  // Per result: sizes, strides, storage_offset and dtype (the rest default);
  // none for a result that is not a tensor.
  std::vector<std::optional<TensorMeta>> results;
  // Per result, the arg whose storage it views; empty: every result fresh.
  std::vector<std::optional<std::uint32_t>> views;
  std::vector<std::uint32_t> writes;  // args written in place, increasing
  friend bool operator==(const GenericOp&, const GenericOp&) = default;
};

inline constexpr std::size_t kMaxGenericArgs = 1024;
inline constexpr std::size_t kMaxGenericResults = 1024;
inline constexpr std::size_t kMaxGenericTargetBytes = 256;
inline constexpr std::size_t kMaxGenericAttrsBytes = 4096;
// Element reads one generic op's values may cost (each result and written
// arg reads every element of every arg, or each of its own elements once per
// arg): 2^27, under a second on the host. An op over it is mixed from its
// metadata alone, reading no operand (docs/trace-format.md §4.1).
inline constexpr std::int64_t kMaxGenericReads = std::int64_t{1} << 27;

struct BodyOp {
  BodyOpKind kind = BodyOpKind::kAdd;
  std::vector<ValueIndex> args;
  Dims sizes;           // kFull, kView, kExpand, kAsStrided
  float scalar = 0.0f;  // kFull
  // kAsStrided: the view's strides and its offset in its operand's storage
  // (absolute, in elements, as Tensor.storage_offset()).
  Dims strides;
  std::int64_t storage_offset = 0;
  // kSum, kAmax: the dims to reduce (aten.sum.dim_IntList); none: every
  // dim, as aten.sum.default. keepdim keeps each reduced dim with size 1.
  std::optional<std::vector<std::int64_t>> dims;
  bool keepdim = false;
  std::int64_t start = 0, end = 0;  // kSlice
  SgdHyper sgd;
  AdamHyper adam;
  GenericOp generic;        // kGeneric
  std::uint32_t index = 0;  // kGetItem
};

// The arg position whose storage op's value views: arg 0 for a view or an
// in-place op, the `views` entry of a generic op with one result; none for a
// fresh value or a tuple.
std::optional<std::uint32_t> value_views_arg(const BodyOp& op);
// Arg positions the op writes: body_op_written_args, or a generic op's writes.
std::vector<std::uint32_t> written_args(const BodyOp& op);

// Which graph the function is, as AOTAutograd compiled it.
// X(enumerator, name)
#define CAPSIM_COMPILATION_MODES(X) \
  X(kForward, "forward")            \
  X(kBackward, "backward")          \
  X(kInference, "inference")
enum class CompilationMode : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_COMPILATION_MODES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view compilation_mode_name(CompilationMode mode);

// Why Inductor's partitioner (Scheduler.should_partition) puts ops outside
// the cudagraphed partitions. X(enumerator, name, should_partition's text)
#define CAPSIM_PARTITION_CUT_REASONS(X)                                  \
  X(kCpu, "cpu", "cpu ops")                                              \
  X(kCudagraphUnsafe, "cudagraph_unsafe", "CUDAGraph-unsafe custom ops") \
  X(kCustomShouldPartition, "custom_should_partition_ops",               \
    "ops in config.custom_should_partition_ops")                         \
  X(kDynamicShape, "dynamic_shape", "dynamic shape ops")
enum class PartitionCutReason : std::uint8_t {
#define CAPSIM_ENUM_(e, name, text) e,
  CAPSIM_PARTITION_CUT_REASONS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view partition_cut_reason_name(PartitionCutReason reason);
std::optional<PartitionCutReason> partition_cut_reason_from_name(std::string_view name);

// Ops [begin, end) of a body that cannot be cudagraphed, as the program
// declares them: CPU ops, ops tagged cudagraph_unsafe, ops listed in
// custom_should_partition_ops, or ops on symbolic sizes (which cut only with
// cudagraph_skip_dynamic_graphs). Cuts are sorted and do not overlap.
struct PartitionCut {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  PartitionCutReason reason = PartitionCutReason::kCpu;
  friend bool operator==(const PartitionCut&, const PartitionCut&) = default;
};

struct FunctionDef {
  std::string name;
  CompilationMode mode = CompilationMode::kForward;
  std::vector<std::string> input_names;  // placeholder names (primals_1, ...)
  std::vector<BodyOp> ops;
  std::vector<ValueIndex> outputs;
  // The compile-time static set before alignment filtering: lifted params and
  // buffers for a forward, the leading saved tensors for a backward
  // (`count_tangents`). Tensors marked with mark_static_address join at the
  // first call.
  std::vector<std::uint32_t> static_input_idxs;
  // Inputs that are nn.Parameters (static under inline_inbuilt_nn_modules).
  std::vector<std::uint32_t> param_input_idxs;
  // A compiled optimizer step traced over only some of its optimizer's
  // params (the others had no grad): which, in input order; the compile
  // event carries it as `step_params`. Empty for every other function.
  std::vector<std::uint32_t> step_params;
  // Positions in `outputs` that the user sees (AOTAutograd's
  // user_visible_output_idxs: not the saved tensors of a forward); none:
  // every output of a forward or inference graph, none of a backward's.
  std::optional<std::vector<std::uint32_t>> user_visible_outputs;
  // Per output, the user's source line(s) that made it, as PyTorch's
  // CompiledFxGraph.cudagraph_info.stack_traces has them (an FX node's
  // stack_trace, stripped; none when unknown). E1 quotes the overwritten
  // output's. Empty: none known (every E1 says "[Could not find stack
  // trace]"); else one entry per output.
  std::vector<std::optional<std::string>> stack_traces;
  // Per input, the source line(s) of the node that mutates it, as PyTorch's
  // PlaceholderInfo.mutating_use_stack_trace has them (cudagraph_utils.py
  // get_mutating_use_stack_trace_from_node): S1 appends the first one of its
  // mutated inputs ("Found from : \n {trace}"). Empty: none known; else one
  // entry per input, none where the input has no mutating use with a trace.
  std::vector<std::optional<std::string>> mutating_use_stack_traces;
  // Where graph partitions (graph_partition) would cut; empty for most.
  std::vector<PartitionCut> partition_cuts;
  // What Inductor sees of the graph beyond its tensor ops, for the
  // compile-time skips of docs/cudagraph-trees.md §2.5; empty for most.
  // Example inputs that are not tensors (S4), appended after the tensor
  // inputs; the body never reads them.
  std::vector<NonTensorInput> non_tensor_inputs;
  // The CUDA device indices the graph's nodes use, in first-use order
  // (GraphLowering's device_node_mapping); empty: one device. More than one
  // skips the graph (S3). capsim simulates one device whatever it names.
  std::vector<std::uint32_t> cuda_devices;
  // Inputs the graph rebinds with `set_` (a storage mutation of the input
  // itself, get_input_storage_mutation_info), sorted: a skip from 2.13 (S7).
  // The skip is modelled; the rebinding is not (the body runs without it).
  std::vector<std::uint32_t> input_storage_mutations;
  // The body calls torch.compiler.cudagraph_mark_warmup_incomplete() in its
  // first N warmup runs (an autotuner that needs more warmups; 2.14 on), so
  // the function is warmed up N more times before it is recorded.
  std::uint32_t warmups_marked_incomplete = 0;

  std::size_t num_inputs() const { return input_names.size(); }
};

// Limits on a body.
inline constexpr std::size_t kMaxBodyInputs = 2048;
inline constexpr std::size_t kMaxBodyOps = 4096;

// The limit on the values one op computes, since a body (and the tensors it
// runs on) can come from an untrusted trace: a tensor that a body or a
// trace's new_tensor creates spans at most kMaxValueElements elements,
// counting a size of 0 as 1 so that its strides stay small too: 2^24 (64 MiB
// of float32), far above what a capture scenario needs, far below what would
// make replaying a hostile trace take minutes or gigabytes. An op's work has
// no limit of its own: an mm over kMaxExactMmMultiplyAdds and a generic op
// over kMaxGenericReads are modelled from their metadata (launch_mm,
// docs/trace-format.md §4.1), never refused.
inline constexpr std::int64_t kMaxValueElements = std::int64_t{1} << 24;
// The limit on FunctionDef::warmups_marked_incomplete.
inline constexpr std::uint32_t kMaxWarmupsMarkedIncomplete = 64;

// An error unless `sizes` (non-negative) span at most kMaxValueElements:
// checked where values are computed (values on).
Status check_value_sizes(const Dims& sizes);
// An error unless `sizes` (non-negative) span at most kMaxTensorElements: the
// shapes a reader accepts, which cost nothing until values are computed.
Status check_shape_sizes(const Dims& sizes);

// Checks arities, value references (each op may only use earlier values) and
// index sets. Errors name the function, the op and the field.
Status validate(const FunctionDef& def);

// The longest stack trace a function line may carry per output (a reader's
// limit; the recorder keeps the innermost end of a longer one).
inline constexpr std::size_t kMaxStackTraceChars = 4096;

// The stack trace E1 quotes for output `i`: PyTorch's text when none is known.
std::string output_stack_trace(const FunctionDef& def, std::uint32_t i);
// get_mutation_stack_trace: the first of `mutated` (input positions, in
// order) whose mutating use has a non-empty stack trace; none if none does.
std::optional<std::string> mutation_stack_trace(const FunctionDef& def,
                                                const std::vector<std::uint32_t>& mutated);

// Whether output `i` is user-visible (FunctionDef::user_visible_outputs).
bool user_visible_output(const FunctionDef& def, std::uint32_t i);

// Input indices the body writes, following views back to their input.
std::vector<std::uint32_t> mutated_input_idxs(const FunctionDef& def);

// Placeholder names primals_1..primals_n.
std::vector<std::string> primal_names(std::size_t n);

}  // namespace capsim
