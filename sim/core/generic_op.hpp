// Generic ops: what capsim knows of an op it has no exact kernel for.
//
// A generic BodyOp (GenericOp, function_def.hpp) carries an aten op's target,
// its non-tensor arguments as text and its results' metadata. This file holds
// the rules that do not depend on running it: the checks a body's generic op
// must pass, the seed its values are mixed from (docs/trace-format.md §4.1),
// and the element reads it costs. body_interpreter.cpp runs it.
#pragma once

#include <cstdint>

#include "model/result.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// Limits, `views` and `writes` within the args and results, every result's
// metadata well formed. Errors name the field.
Status validate_generic(const BodyOp& op);

// FNV-1a 64 over the target's bytes, a zero byte and the attrs' bytes.
std::uint64_t generic_op_seed(const GenericOp& op);
// The seed of result (or written arg) `k`: seed ^ 0x9e3779b97f4a7c15 * (k + 1).
std::uint64_t generic_output_seed(std::uint64_t op_seed, std::size_t k);

// The element reads of mixing `arg_numels` into an output of `out_numel`
// elements: per arg, the larger of the two counts (0 for an empty arg).
// Saturates at INT64_MAX.
std::int64_t generic_mix_reads(std::int64_t out_numel, const std::vector<std::int64_t>& arg_numels);

}  // namespace capsim
