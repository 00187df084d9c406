// Torch profiles: which PyTorch release's cudagraph tree manager capsim
// models, as data.
//
// The manager's decisions changed between releases (docs/cudagraph-trees.md,
// "Version profiles"): which failed invariant checks count toward the
// re-record limit, whether the limit applies at all, whether a changed static
// pointer can still raise, and the texts users see. A profile is one row of
// switches per release whose behaviour differs; the tree manager and the
// messages read its row (`profile_rules`) and never compare versions. Each
// row names the release commit it was read from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsim {

// X(enumerator, name, releases it covers)
#define CAPSIM_TORCH_PROFILES(X)       \
  X(kClassic, "classic", "2.5 to 2.8") \
  X(k2_9, "2.9", "2.9")                \
  X(k2_10, "2.10", "2.10")             \
  X(k2_11, "2.11", "2.11")             \
  X(k2_12, "2.12", "2.12")             \
  X(k2_13, "2.13", "2.13")             \
  X(k2_14, "2.14", "2.14")             \
  X(k2_15, "2.15", "2.15")
enum class TorchProfile : std::uint8_t {
#define CAPSIM_ENUM_(e, name, releases) e,
  CAPSIM_TORCH_PROFILES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
      kCount
};
// The newest release capsim models (`capsim version --profiles` marks it;
// the 2.15 scenarios are written for it).
inline constexpr TorchProfile kNewestTorchProfile = TorchProfile::k2_15;

// When CUDAGraphTreeManager.exceed_rerecord_limit can be true.
enum class RerecordLimit : std::uint8_t {
  kUnlessInlined,  // not with inline_inbuilt_nn_modules (2.5 to 2.11)
  kNever,          // it returns False (2.12, PR 178205)
  kAlways,         // whatever inline_inbuilt_nn_modules says (2.13 on, PR 182531)
};

struct TorchProfileRules {
  std::string_view name;
  std::string_view releases;
  std::string_view commits;  // the release commits the rules were read from
  RerecordLimit rerecord_limit = RerecordLimit::kUnlessInlined;
  // Which failed checks of a sibling count toward the limit (a call counts
  // once, however many siblings fail). The managed-pointer check always does.
  bool static_mismatch_counts = true;
  bool liveness_mismatch_counts = false;
  // The limit's reason is the last failed sibling's, whatever its status
  // (else the last counted one's).
  bool reason_from_last_failure = false;
  // rerecord_if_static_inputs_change is always true: no E4.
  bool always_rerecord_static = false;
  // torch._dynamo.config.inline_inbuilt_nn_modules is deprecated and always
  // True (PR 178205): every nn.Parameter is a static input.
  bool inline_always_on = false;
  // W1's text: "because outputs from a previous step still require backward"
  // (else "because of pending, uninvoked backwards").
  bool w1_requires_backward_text = false;
  // E1 of a BACKWARD function's output has its own text, on gradient
  // accumulation.
  bool e1_grad_output_text = false;
  // E1's text points at cudagraph_trees_generation_cloning (else at cloning
  // the tensor outside torch.compile()).
  bool e1_generation_cloning_text = false;
  // torch._inductor.config.graph_partition's default (2.9 on: True in OSS
  // builds): a function with partition cuts is split, not skipped.
  bool graph_partition_default = false;
  // With graph_partition on, neither a cudagraph_unsafe op nor
  // cudagraph_skip_dynamic_graphs skips the graph: the partitioner cuts
  // around those ops instead (2.10 on; 2.9 still skips).
  bool partition_bypasses_graph_skips = false;
  // torch._dynamo.mark_static_address's default `guard` (decorators.py): True
  // up to 2.9.0; False from 2.9.1 (PR 162208), so the 2.9 profile, read from
  // 2.9.0, keeps True. A trace's mark_static without `guard` takes it.
  bool mark_static_guard_default = true;
  // cudagraph_dynamic_shape_warn_limit's default: W2 once a wrapper holds
  // more distinct int keys than this.
  std::int64_t dynamic_shape_warn_limit = 50;
  // The release has these knobs (2.9: cudagraph_or_error; 2.12:
  // cudagraph_min_partition_size; 2.15: cudagraph_dynamic_shape_rerecord_limit).
  bool has_cudagraph_or_error = false;
  bool has_min_partition_size = false;
  bool has_dynamic_shape_rerecord_limit = false;
  // cudagraph_trees_generation_cloning (2.14, opt-in).
  bool has_generation_cloning = false;
  // torch.compiler.cudagraph_mark_warmup_incomplete() (2.14, #191386).
  bool has_mark_warmup_incomplete = false;
  // A call cudagraphify_impl runs directly (past the capture sizes or the
  // key limit) tells the manager a BACKWARD ran (2.15's run_eager).
  bool direct_backward_clears_pending = false;
  // A cached replay output (cudagraph_trees.py `check_refcount`) that only a
  // pending backward's saved tensor holds counts as live (2.15, where an
  // extra C++ use means a holder); up to 2.14 it counts as dead, so a path
  // whose user-visible outputs died ends even though its backward has not run.
  bool saved_tensor_keeps_output_live = false;
  // cudagraph_managed_input_rerecord_limit and _action (2.15): the pointer
  // changes of each cudagraph-managed input are counted per (parent node,
  // function) edge; at the limit the input is copied in from then on
  // ("copy"), or the edge runs eagerly ("skip").
  bool has_managed_input_demotion = false;
  // Compile-time skips the release has (2.13 on): the caching allocator
  // off, an input's storage replaced (set_).
  bool caching_allocator_skip = false;
  bool input_storage_mutation_skip = false;
  // An opaque object (OpaqueBase; CustomClassBase from 2.14) passes the
  // "non-Tensor inputs" test (2.12 on).
  bool opaque_inputs_allowed = false;
  // Inductor's "complex memory overlap" cudagraph test (an example input
  // whose elements share memory fails it, S4): up to 2.12.x; 2.13 dropped
  // it (PR 182524) and copies such an input with copy_strided_storage_.
  bool complex_memory_overlap_test = true;
  // E6 and E7 in 2.11's words ("… but should be: {…}. This could be a bug …",
  // "Detected N tensor(s) in the cudagraph pool not tracked as outputs …");
  // else the older ones ("… but should be {…}", "These live storage data ptrs
  // are in the cudagraph pool but not accounted for …").
  bool pool_texts_2_11 = false;
  // Compiled autograd's graph form (torch/_dynamo/compiled_autograd.py,
  // external_utils.py, csrc/dynamo/compiled_autograd.h; the World hands these
  // to sim/compiled_autograd/release_form.hpp): validate_outputs'
  // packed InputMetadata ends with grad_dtype (2.10 on); call_aot_bwd_prologue
  // takes ctx_opaque_objs (2.11 on) and its flat args as one tuple (2.13 on);
  // call_accumulate_grad takes variable_grad (2.13 on, #184082). classic has
  // 2.8.0's form; 2.5 to 2.7 were not read.
  bool ca_metadata_grad_dtype = false;
  bool ca_aot_opaque_objs = false;
  bool ca_aot_flat_args_tuple = false;
  bool ca_accumulate_variable_grad = false;
  // What the profile leaves out that its release has, for `capsim version
  // --profiles` (empty: nothing known).
  std::string_view not_modelled;
};

// What no profile models yet, whatever the release (`capsim version --profiles`).
inline constexpr std::string_view kNotModelledInAnyProfile = "stack traces in any text";

const TorchProfileRules& profile_rules(TorchProfile profile);
std::string_view torch_profile_name(TorchProfile profile);
// A profile by its name ("classic", "2.13"), or none.
std::optional<TorchProfile> torch_profile_from_name(std::string_view name);
// The profile of a release "2.N" or "2.N.P" (2.5 to 2.15), or of a profile's
// name; none for anything else.
std::optional<TorchProfile> torch_profile_for(std::string_view version);
// "classic, 2.12, ...": the profiles this build knows, for errors.
std::string known_torch_profiles();
// The profile's rules in words, one per line (`capsim version --profiles`).
std::vector<std::string> describe_profile(const TorchProfileRules& rules);

}  // namespace capsim
