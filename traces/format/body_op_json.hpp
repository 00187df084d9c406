// Body ops in function lines (docs/trace-format.md §4): each op's JSON
// object, written and read strictly, and the list readers that function and
// action lines share (sizes, strides, lengths checked before conversion).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "model/result.hpp"
#include "model/tensor.hpp"
#include "sim/core/function_def.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim {

// An error when `key` is an array of more than `limit` entries, checked
// before the elements are converted, so that a huge list costs nothing.
Status check_length(ObjectReader& r, std::string_view key, std::size_t limit);
// Sizes: at most kMaxRank, none negative, spanning at most kMaxValueElements.
Result<Dims> read_sizes(ObjectReader& r, std::string_view key);
// Strides: at most kMaxRank, each in [0, kMaxValueElements].
Result<Dims> read_strides(ObjectReader& r, std::string_view key);
// A nested object, read strictly under its own path (`ops[2].sgd.lr`).
Result<ObjectReader> nested(ObjectReader& parent, std::string_view key);

// An optimizer's hyperparameters, as ops and optimizer actions carry them
// (`sgd`, `adam`): every field required.
Json sgd_json(const SgdHyper& h);
Result<SgdHyper> read_sgd(ObjectReader& parent);
Json adam_json(const AdamHyper& h);
Result<AdamHyper> read_adam(ObjectReader& parent);

// {"op", "args", ...the fields its kind uses}.
Json op_json(const BodyOp& op);
// Op k of a body with n inputs, at `path`; arity and references are checked
// here, with the precise path.
Result<BodyOp> read_op(const Json& j, const std::string& path, std::size_t k, std::size_t n);

// An op's name back to its kind; an error lists the known names.
Result<BodyOpKind> body_op_from_name(std::string_view name, std::string_view path);

}  // namespace capsim
