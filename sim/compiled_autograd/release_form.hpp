// Compiled autograd's captured graph as a given PyTorch release lays it out.
//
// capsim's own capture (capture.hpp) models what matters to
// the semantics: which calls, in which order, over which data, and what a
// proxy's metadata may not decide. This file writes the same capture in the
// form the release itself prints, node for node, so that it can be compared
// with a graph a recorder took from real PyTorch (docs/fidelity.md) and shown
// beside `TORCH_LOGS=compiled_autograd_verbose` output (`capsim capture
// --torch`). The form was read from each release's
// torch/_dynamo/compiled_autograd.py (AutogradCompilerInstance: begin_capture,
// proxy_call_backward, validate_outputs, end_capture and its passes),
// torch/_dynamo/external_utils.py and torch/csrc/dynamo/compiled_autograd.h
// (the IValue packing), in the wheels PyPI serves.
//
// What every release from 2.8.0 on does, and capsim's capture does not: five
// placeholders (`packed_data` last); every lifted tensor's getitem at the top,
// the root grads first; then the getitem of every size slot and its
// `unwrap_maybe_dynamic_int`; a node's saved fields passed in their C++
// declaration order; a defined `.grad` lifted after its leaf; the reorder
// passes of `end_capture`; dce that keeps every unpacking of a placeholder;
// and `remove_unused_sizes`, which renumbers the sizes that stay.
#pragma once

#include <string>

#include "model/fx_graph.hpp"
#include "sim/compiled_autograd/collect.hpp"

namespace capsim {

// The switches between releases (the rows live with the torch profiles,
// sim/core/torch_profile.hpp; the World hands them over).
struct CaGraphForm {
  // validate_outputs' packed InputMetadata ends with grad_dtype (2.10 on).
  bool metadata_grad_dtype = true;
  // call_aot_bwd_prologue takes ctx_opaque_objs (2.11 on) and its flat args
  // as one tuple (2.13 on) rather than spread.
  bool aot_opaque_objs = true;
  bool aot_flat_args_tuple = false;
  // call_accumulate_grad(variable, variable_grad, grad, has_post_hooks)
  // (2.13 on); else (variable, grad, has_post_hooks).
  bool accumulate_variable_grad = false;
};

// The release-form graph of one backward that Phase A collected (its size
// slots' `dynamic` already marked from the cache decision). Errors name the
// node: a CppNode or an AOT backward, whose bodies the form does not model,
// and Phase A disagreeing with the graph.
Result<FxGraph> capture_release_form(const AutogradGraph& graph, const CollectedBackward& backward,
                                     const CaGraphForm& form);

}  // namespace capsim
