// A generic op's fields in a function line (docs/trace-format.md §4.1).
//
// program_json.cpp reads and writes every op's `op` and `args`; the fields a
// generic op adds (target, attrs, results, views, writes) and getitem's index
// are read and written here, strictly, with errors naming the field
// (`ops[3].results[1].dtype`).
#pragma once

#include "model/result.hpp"
#include "sim/core/function_def.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim {

// Adds op.generic's fields to `j` (views and writes only when not empty,
// attrs only when not empty).
void write_generic_fields(Json& j, const BodyOp& op);
// Reads them into op.generic, then validate_generic's checks.
Status read_generic_fields(ObjectReader& r, BodyOp& op);

// A tensor's metadata as a generic result: sizes, strides, storage_offset,
// dtype.
Json tensor_meta_json(const TensorMeta& meta);
Result<TensorMeta> read_tensor_meta(const Json& j, const std::string& path);

}  // namespace capsim
