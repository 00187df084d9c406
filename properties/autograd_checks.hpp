// The compiled-autograd properties as plain checks over one AutogradProgram.
//
// The checks of the `capsim check` catalogue's capture.* properties (run by
// tests/properties/test_catalogue.cpp), and of P-cache in
// tests/properties/prop_compiled_autograd.cpp. Each returns nullopt when the
// property holds, else one line. The rules are those of
// docs/compiled-autograd.md, "Phase A" (the cache) and "Phase B" (the capture,
// and the proxy metadata it may not read).
#pragma once

#include "properties/autograd_programs.hpp"
#include "properties/cudagraph_checks.hpp"
#include "sim/compiled_autograd/capture_mode.hpp"
#include "sim/compiled_autograd/compiled_backward.hpp"

namespace capsim {

// Every leaf's .grad as bits, in leaf order: how the properties compare grads
// (bitwise, never with a tolerance).
Result<std::vector<std::vector<std::uint32_t>>> leaf_grad_bits(const AutogradEngine& e);

// P-no-read: the initial capture in `mode` reads no proxy metadata.
CheckResult check_no_metadata_read(const AutogradProgram& p, CaptureMode mode);

// P-independent: perturbing every proxy's metadata (three seeds) leaves the
// captured graph's text byte-identical.
CheckResult check_independent_of_metadata(const AutogradProgram& p, CaptureMode mode);

// P-cache: a second backward of the same program with other values is a
// cache hit, with exactly one capture in all.
CheckResult check_second_backward_hits(const AutogradProgram& p);

// P-equal: the functional graph, run by the FX interpreter with `fault`,
// leaves every leaf's .grad bitwise equal to the eager engine's.
CheckResult check_runs_like_eager(const AutogradProgram& p, Fault fault);

}  // namespace capsim
