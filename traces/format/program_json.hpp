// The JSON form of a capsim Program (its FunctionDefs and Actions) and of
// CudagraphConfig, as the trace format (JSON Lines) records them.
//
// The form is lossless for everything the simulator reads: for every function
// and action `from_json(to_json(x))` re-serialises to the same bytes. Fields a
// kind does not use (a BodyOp's `sizes` on an `add`, the Adam hyper-parameters
// of an SGD optimizer) are not written, and reading refuses them, so a line has
// one spelling. Reading goes through ObjectReader: unknown fields are refused
// (except "x_" extensions) and every error starts with `field '<path>'`.
//
// Limits (a line is untrusted input): names are at most kMaxJsonNameBytes,
// sizes have at most kMaxRank non-negative entries and span at most
// kMaxValueElements elements (sim/core/function_def.hpp), a body has at most
// kMaxBodyInputs inputs and kMaxBodyOps ops, and name lists are bounded.
#pragma once

#include <string>
#include <string_view>

#include "model/result.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/core/function_def.hpp"
#include "sim/program/program.hpp"
#include "traces/format/body_op_json.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/json_text.hpp"

namespace capsim {

// The longest name (tensor, function, optimizer, placeholder) a line may hold.
inline constexpr std::size_t kMaxJsonNameBytes = 256;

// A name of at most kMaxJsonNameBytes; a list of at most `limit` of them.
Result<std::string> read_name(ObjectReader& r, std::string_view key);
Result<std::vector<std::string>> read_names(ObjectReader& r, std::string_view key,
                                            std::size_t limit);

// Every field, in struct order, under the struct's member names.
// The knobs of newer releases that differ from their defaults (a part of
// config_to_json), for people as much as for traces.
Json newer_config_to_json(const CudagraphConfig& c);
Json config_to_json(const CudagraphConfig& c);
// All fields required; `path` names the object ("config").
Result<CudagraphConfig> config_from_json(const Json& j, std::string path);

// {"function", "mode", "inputs", "ops", "outputs", "static_input_idxs",
//  "param_input_idxs"}; each op is {"op", "args", ...the fields its kind uses}.
Json function_to_json(const FunctionDef& def);
// `r` reads a whole line object whose envelope keys the caller has skipped;
// this reads the rest, calls r.finish() and validate().
Result<FunctionDef> function_from_json(ObjectReader& r);

// Actions (action_json.cpp, from sim/program/actions.def):
// {"action": action_name(a), ...the struct's fields}.
Json action_to_json(const Action& a);
// The same members appended to `object` as text (dump()'s bytes), without a
// Json per line; false, and nothing written, for the kinds that only
// action_to_json writes (define_autograd_graph, compiled_backward).
bool append_action_members(JsonObjectText& object, const Action& a);
// Same convention as function_from_json: reads "action" and the fields, then
// calls r.finish().
Result<Action> action_from_json(ObjectReader& r);
// Every kind's fields as the recorder checks its lines against them
// (`capsim version --actions`, action_schema.cpp): per kind, each field's
// key, type (enum values, list limits) and presence, in the table's order; a
// kind with a codec of its own has "fields": null.
Json action_schema_json();

// Names back to enums; an error lists the known names (body_op_from_name:
// body_op_json.hpp).
Result<OptimizerKind> optimizer_kind_from_name(std::string_view name, std::string_view path);
Result<CompilationMode> compilation_mode_from_name(std::string_view name, std::string_view path);

}  // namespace capsim
