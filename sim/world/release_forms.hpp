// The compiled-autograd graph form of a torch profile: the profile's row
// (sim/core/torch_profile.hpp) as the switches the release form reads
// (sim/compiled_autograd/release_form.hpp). Here, in the world wing:
// compiled autograd reads only its form, and the World, which picks the
// profile, hands the form over.
#pragma once

#include "sim/compiled_autograd/release_form.hpp"
#include "sim/core/torch_profile.hpp"

namespace capsim {

inline CaGraphForm ca_graph_form_of(TorchProfile profile) {
  const TorchProfileRules& r = profile_rules(profile);
  return {.metadata_grad_dtype = r.ca_metadata_grad_dtype,
          .aot_opaque_objs = r.ca_aot_opaque_objs,
          .aot_flat_args_tuple = r.ca_aot_flat_args_tuple,
          .accumulate_variable_grad = r.ca_accumulate_variable_grad};
}

}  // namespace capsim
