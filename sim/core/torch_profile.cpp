// The rows of torch_profile.hpp, read from each release's
// torch/_inductor/cudagraph_trees.py (CUDAGraphTreeManager._run,
// exceed_rerecord_limit, check_warn_on_unable_to_start_executing,
// format_dealloc_msg) and torch/_inductor/cudagraph_utils.py
// (CheckInvariantStatus), in the wheels PyPI serves.
#include "sim/core/torch_profile.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "model/check.hpp"

namespace capsim {

namespace {

// Each release is the one before it plus what it changed.
template <typename Change>
constexpr TorchProfileRules after(TorchProfileRules before, std::string_view name,
                                  std::string_view commits, Change change) {
  before.name = name;
  before.releases = name;
  before.commits = commits;
  change(before);
  return before;
}

constexpr TorchProfileRules kClassicRules = {.name = "classic",
                                             .releases = "2.5 to 2.8",
                                             .commits = "2.5.0 32f585d9, 2.8.0 a1cb3cc0",
                                             .not_modelled =
                                                 "a set_ on a graph input (refused: "
                                                 "input_storage_mutations)"};

// graph_partition is on by default (torch/_inductor/config.py), and
// cudagraph_or_error exists.
constexpr TorchProfileRules k2_9Rules =
    after(kClassicRules, "2.9", "2.9.0 0fabc3ba", [](TorchProfileRules& r) {
      r.graph_partition_default = true;
      r.has_cudagraph_or_error = true;
    });

// The W2 limit drops to 8; with partitions on, cudagraph_unsafe ops and
// skip_dynamic_graphs cut partitions instead of skipping the graph
// (compile_fx.py's codegen_and_compile, scheduler.py's should_partition).
constexpr TorchProfileRules k2_10Rules =
    after(k2_9Rules, "2.10", "2.10.0 449b1768", [](TorchProfileRules& r) {
      r.dynamic_shape_warn_limit = 8;
      r.partition_bypasses_graph_skips = true;
      r.mark_static_guard_default = false;
      r.ca_metadata_grad_dtype = true;
    });

// check_memory_pool's new texts (E6, E7); W2 moves to the cudagraphs logger.
constexpr TorchProfileRules k2_11Rules =
    after(k2_10Rules, "2.11", "2.11.0 70d99e99", [](TorchProfileRules& r) {
      r.pool_texts_2_11 = true;
      r.ca_aot_opaque_objs = true;
    });

// PR 178205: the limit is off, inline_inbuilt_nn_modules is always True, and
// so is rerecord_if_static_inputs_change; W1 gets its new text (#176865).
constexpr TorchProfileRules k2_12Rules =
    after(k2_11Rules, "2.12", "2.12.0 7661cd9c", [](TorchProfileRules& r) {
      r.rerecord_limit = RerecordLimit::kNever;
      r.has_min_partition_size = true;
      r.always_rerecord_static = true;
      r.inline_always_on = true;
      r.w1_requires_backward_text = true;
      r.opaque_inputs_allowed = true;
    });

// PR 182531: the limit is back, for every failed check but a static pointer's.
constexpr TorchProfileRules k2_13Rules =
    after(k2_12Rules, "2.13", "2.13.0 cf30153c", [](TorchProfileRules& r) {
      r.rerecord_limit = RerecordLimit::kAlways;
      r.static_mismatch_counts = false;
      r.liveness_mismatch_counts = true;
      r.reason_from_last_failure = true;
      r.e1_grad_output_text = true;
      r.caching_allocator_skip = true;
      r.input_storage_mutation_skip = true;
      r.complex_memory_overlap_test = false;
      r.ca_aot_flat_args_tuple = true;
      r.ca_accumulate_variable_grad = true;
      r.not_modelled = "";
    });

constexpr TorchProfileRules k2_14Rules =
    after(k2_13Rules, "2.14", "2.14.0 08187d9e", [](TorchProfileRules& r) {
      r.e1_generation_cloning_text = true;
      r.has_generation_cloning = true;
      r.has_mark_warmup_incomplete = true;
    });

constexpr TorchProfileRules k2_15Rules =
    after(k2_14Rules, "2.15", "2.15.0 d0f2af8b", [](TorchProfileRules& r) {
      r.has_dynamic_shape_rerecord_limit = true;
      r.direct_backward_clears_pending = true;
      r.has_managed_input_demotion = true;
      r.saved_tensor_keeps_output_live = true;
    });

constexpr std::array<TorchProfileRules, static_cast<std::size_t>(TorchProfile::kCount)> kRules = {
    kClassicRules, k2_9Rules,  k2_10Rules, k2_11Rules,
    k2_12Rules,    k2_13Rules, k2_14Rules, k2_15Rules};

}  // namespace

const TorchProfileRules& profile_rules(TorchProfile profile) {
  const auto i = static_cast<std::size_t>(profile);
  CAPSIM_CHECK(i < kRules.size(), "a torch profile has a row");
  return kRules[i];
}

std::string_view torch_profile_name(TorchProfile profile) {
  return profile_rules(profile).name;
}

std::optional<TorchProfile> torch_profile_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kRules.size(); ++i) {
    if (kRules[i].name == name) return static_cast<TorchProfile>(i);
  }
  return std::nullopt;
}

std::optional<TorchProfile> torch_profile_for(std::string_view version) {
  if (auto p = torch_profile_from_name(version)) return p;
  // "2.N" or "2.N.P": the minor release picks the profile.
  if (!version.starts_with("2.")) return std::nullopt;
  std::string_view rest = version.substr(2);
  int minor = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), minor);
  if (ec != std::errc{} || end == rest.data()) return std::nullopt;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  if (!rest.empty()) {
    int patch = -1;
    const auto [pend, pec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), patch);
    if (rest[0] != '.' || pec != std::errc{} || pend != rest.data() + rest.size()) {
      return std::nullopt;
    }
  }
  if (minor >= 5 && minor <= 8) return TorchProfile::kClassic;
  if (minor == 9) return TorchProfile::k2_9;
  if (minor >= 10 && minor <= 15) return torch_profile_from_name(version.substr(0, 4));
  return std::nullopt;
}

namespace {

// The config knobs and skips the profile's releases have, comma-separated.
std::string profile_knobs(const TorchProfileRules& r) {
  std::string knobs;
  const auto knob = [&](bool has, std::string_view name) {
    if (!has) return;
    knobs += knobs.empty() ? "" : ", ";
    knobs += name;
  };
  knob(r.has_cudagraph_or_error, "cudagraph_or_error");
  knob(r.has_min_partition_size, "cudagraph_min_partition_size");
  knob(r.has_generation_cloning, "cudagraph_trees_generation_cloning");
  knob(r.has_mark_warmup_incomplete, "torch.compiler.cudagraph_mark_warmup_incomplete()");
  knob(r.has_dynamic_shape_rerecord_limit, "cudagraph_dynamic_shape_rerecord_limit");
  knob(r.caching_allocator_skip, "the caching-allocator skip");
  knob(r.input_storage_mutation_skip, "the input-storage-mutation skip (set_ on an input)");
  knob(r.opaque_inputs_allowed, "opaque objects as inputs");
  knob(r.has_managed_input_demotion,
       "cudagraph_managed_input_rerecord_limit (5) and _action (copy, skip)");
  return knobs;
}

}  // namespace

std::vector<std::string> describe_profile(const TorchProfileRules& r) {
  std::vector<std::string> out;
  switch (r.rerecord_limit) {
    case RerecordLimit::kUnlessInlined:
      out.emplace_back("re-record limit: only with inline_inbuilt_nn_modules=False");
      break;
    case RerecordLimit::kNever: out.emplace_back("re-record limit: never applies"); break;
    case RerecordLimit::kAlways: out.emplace_back("re-record limit: always applies"); break;
  }
  std::string counts = "counted toward it: managed-pointer changes";
  if (r.static_mismatch_counts) counts += ", static-pointer changes";
  if (r.liveness_mismatch_counts) counts += ", live outputs expected dead";
  out.push_back(counts + (r.reason_from_last_failure ? " (reason: the last failed check)"
                                                     : " (reason: the last counted check)"));
  if (r.inline_always_on) {
    out.emplace_back("inline_inbuilt_nn_modules: always True (the flag is deprecated)");
  }
  out.emplace_back(r.always_rerecord_static
                       ? "a changed static pointer always re-records (no E4)"
                       : "a changed static pointer raises E4 with inlining and input-mutation "
                         "support both off");
  out.emplace_back(r.w1_requires_backward_text
                       ? "W1: \"outputs from a previous step still require backward\""
                       : "W1: \"pending, uninvoked backwards\"");
  std::string e1 = r.e1_generation_cloning_text
                       ? "E1: points at cudagraph_trees_generation_cloning"
                       : "E1: \"clone the tensor outside of torch.compile()\"";
  if (r.e1_grad_output_text) e1 += "; a grad output's E1 has its own text";
  out.push_back(std::move(e1));
  out.push_back(fmt::format(
      "graph_partition: {} by default{}", r.graph_partition_default ? "on" : "off",
      r.partition_bypasses_graph_skips ? "; with it, cudagraph_unsafe ops and "
                                         "cudagraph_skip_dynamic_graphs cut partitions, not skip"
                                       : ""));
  out.push_back(
      fmt::format("W2 (dynamic shapes): past {} distinct int keys", r.dynamic_shape_warn_limit));
  out.push_back(fmt::format("mark_static_address: guard={} by default",
                            r.mark_static_guard_default ? "True" : "False"));
  out.emplace_back(
      r.pool_texts_2_11
          ? "E6/E7: \"... but should be: {...}. This could be a bug ...\", \"Detected N "
            "tensor(s) in the cudagraph pool not tracked as outputs ...\""
          : "E6/E7: \"... but should be {...}\", \"These live storage data ptrs are "
            "in the cudagraph pool but not accounted for ...\"");
  if (const std::string knobs = profile_knobs(r); !knobs.empty()) out.push_back("has: " + knobs);
  out.push_back(fmt::format(
      "compiled autograd's graph: validate_outputs metadata {}; call_aot_bwd_prologue(saved, "
      "symints{}, {}); call_accumulate_grad(variable{}, grad, has_post_hooks)",
      r.ca_metadata_grad_dtype ? "with grad_dtype" : "without grad_dtype",
      r.ca_aot_opaque_objs ? ", opaque_objs" : "",
      r.ca_aot_flat_args_tuple ? "(grads...)" : "*grads",
      r.ca_accumulate_variable_grad ? ", variable_grad" : ""));
  out.emplace_back(r.saved_tensor_keeps_output_live
                       ? "a cached output held only by a pending backward's saved tensor: live"
                       : "a cached output held only by a pending backward's saved tensor: dead "
                         "(its path may end before the backward)");
  if (r.direct_backward_clears_pending) {
    out.emplace_back(
        "a BACKWARD call run directly (capture sizes, key limit) clears the "
        "pending-backward flag");
  }
  out.push_back(fmt::format("read from: {}", r.commits));
  if (!r.not_modelled.empty()) out.push_back(fmt::format("not modelled yet: {}", r.not_modelled));
  return out;
}

std::string known_torch_profiles() {
  std::string out;
  for (const TorchProfileRules& r : kRules) {
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

}  // namespace capsim
