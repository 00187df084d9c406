// The JSON form of programs and configs (traces/format/program_json.hpp): every
// built-in scenario survives the round trip through text, each action kind
// reads from a hand-written line, and bad lines fail with a message that
// names the field.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "sim/core/function_builder.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "tests/traces/trace_test_support.hpp"
#include "traces/format/program_json.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {
namespace {

// Through text, as a trace line goes.
Result<Action> action_via_text(const Json& j) {
  const Json line = Json::parse(j.dump());
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(line, ""));
  return action_from_json(r);
}
Result<Action> parse_action(const std::string& text) {
  return action_via_text(Json::parse(text));
}

Result<FunctionDef> function_via_text(const Json& j) {
  const Json line = Json::parse(j.dump());
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(line, ""));
  return function_from_json(r);
}

std::string action_error(const std::string& text) {
  const Result<Action> a = parse_action(text);
  REQUIRE_FALSE(a.ok());
  return a.error().message;
}
std::string function_error(const std::string& text) {
  const Result<FunctionDef> f = function_via_text(Json::parse(text));
  REQUIRE_FALSE(f.ok());
  return f.error().message;
}

std::uint32_t bits(float f) {
  return std::bit_cast<std::uint32_t>(f);
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.starts_with(prefix);
}

}  // namespace

TEST_CASE("program_json: every built-in scenario's functions and actions round-trip") {
  std::set<std::string> action_kinds;
  std::set<std::string> op_kinds;
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    for (const FunctionDef& def : s.program.functions) {
      CAPTURE(def.name);
      const Json j = function_to_json(def);
      const Result<FunctionDef> back = function_via_text(j);
      REQUIRE_MESSAGE(back.ok(), back.error().message);
      CHECK(function_to_json(*back).dump() == j.dump());
      CHECK(back->ops.size() == def.ops.size());
      for (const BodyOp& op : def.ops) op_kinds.insert(std::string(body_op_name(op.kind)));
    }
    for (std::size_t i = 0; i < s.program.actions.size(); ++i) {
      CAPTURE(i);
      const Action& a = s.program.actions[i];
      const Json j = action_to_json(a);
      const Result<Action> back = action_via_text(j);
      REQUIRE_MESSAGE(back.ok(), back.error().message);
      CHECK(back->index() == a.index());
      CHECK(action_to_json(*back).dump() == j.dump());
      action_kinds.insert(std::string(action_name(a)));
    }
  }
  MESSAGE("action kinds covered by scenarios: " << action_kinds.size() << ", op kinds "
                                                << op_kinds.size());
  CHECK(action_kinds.size() >= 10);
}

TEST_CASE("program_json: op-specific fields round-trip bit-exactly") {
  FunctionBuilder f("opt", CompilationMode::kInference, {"p", "g", "m", "a", "b", "s"});
  const ValueIndex full = f.full({2, 3}, 0.1f);
  f.slice(full, 1, -1);
  FunctionDef def = f.returns({full});
  BodyOp sgd;
  sgd.kind = BodyOpKind::kSgd;
  sgd.args = {0, 1, 2};
  sgd.sgd = {1e-45f, 0.9f, -0.0f, std::numeric_limits<float>::max(), true};
  def.ops.push_back(sgd);
  for (BodyOpKind k : {BodyOpKind::kAdam, BodyOpKind::kAdamW}) {
    BodyOp adam;
    adam.kind = k;
    adam.args = {0, 1, 3, 4, 5};
    adam.adam = {3e-4f, 0.85f, 0.9999f, 1e-8f, 1.0f / 3.0f};
    def.ops.push_back(adam);
  }
  def.static_input_idxs = {0, 2};
  def.param_input_idxs = {0};
  REQUIRE(validate(def).ok());

  const Json j = function_to_json(def);
  CHECK(j["ops"][0].dump() == R"({"op":"full","args":[],"sizes":[2,3],"scalar":0.1})");
  CHECK(j["ops"][1].dump() == R"({"op":"slice","args":[6],"start":1,"end":-1})");
  const Result<FunctionDef> back = function_via_text(j);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(function_to_json(*back).dump() == j.dump());
  CHECK(back->ops[0].sizes == Dims{2, 3});
  CHECK(bits(back->ops[0].scalar) == bits(0.1f));
  CHECK(back->ops[1].start == 1);
  CHECK(back->ops[1].end == -1);
  const SgdHyper& s = back->ops[2].sgd;
  CHECK(bits(s.lr) == bits(1e-45f));
  CHECK(bits(s.dampening) == bits(-0.0f));
  CHECK(bits(s.weight_decay) == bits(std::numeric_limits<float>::max()));
  CHECK(s.nesterov);
  CHECK(back->ops[4].kind == BodyOpKind::kAdamW);
  CHECK(bits(back->ops[4].adam.weight_decay) == bits(1.0f / 3.0f));
  CHECK(bits(back->ops[4].adam.eps) == bits(1e-8f));
  CHECK(back->mode == CompilationMode::kInference);
  CHECK(back->static_input_idxs == std::vector<std::uint32_t>{0, 2});
}

TEST_CASE("program_json: finite floats round-trip bit-exactly through text") {
  // A sweep over the bit patterns (both signs, denormals, the extremes); the
  // writer prints the shortest text, so this guards its double rounding.
  std::size_t checked = 0;
  const std::uint32_t extremes[] = {0x00000001u, 0x007fffffu, 0x00800000u,
                                    0x7f7fffffu, 0x80000000u, 0xff7fffffu};
  auto check = [&](std::uint32_t b) {
    const float f = std::bit_cast<float>(b);
    if (!std::isfinite(f)) return;
    NewTensor t;
    t.name = "x";
    t.fill = f;
    const Result<Action> back = action_via_text(action_to_json(t));
    REQUIRE_MESSAGE(back.ok(), back.error().message);
    const auto& fill = std::get<NewTensor>(*back).fill;
    REQUIRE(fill.has_value());
    CHECK_MESSAGE(bits(*fill) == b, "bits " << b);
    ++checked;
  };
  for (std::uint32_t b : extremes) check(b);
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 40503) check(static_cast<std::uint32_t>(b));
  CHECK(checked > 100000);
}

TEST_CASE("program_json: config round-trips with each field changed") {
  const CudagraphConfig d;
  CHECK(config_to_json(d).dump() ==
        R"({"inline_inbuilt_nn_modules":true,"cudagraph_support_input_mutation":true,)"
        R"("cudagraph_unexpected_rerecord_limit":128,"skip_cudagraph_warmup":false,)"
        R"("force_cudagraphs_warmup":false,"slow_path_cudagraph_asserts":true,)"
        R"("zero_grad_static_error":false,"plain_api":false,"poison_freed":false})");
  // Flipping each field one at a time catches a field forgotten on one side.
  const Json base = config_to_json(d);
  for (auto it = base.begin(); it != base.end(); ++it) {
    CAPTURE(it.key());
    Json changed = base;
    changed[it.key()] = it->is_boolean() ? Json(!it->get<bool>()) : Json(7);
    const Result<CudagraphConfig> c = config_from_json(Json::parse(changed.dump()), "config");
    REQUIRE_MESSAGE(c.ok(), c.error().message);
    CHECK_FALSE(*c == d);
    CHECK(config_to_json(*c) == changed);
  }
  Json missing = base;
  missing.erase("plain_api");
  CHECK(config_from_json(missing, "config").error().message == "field 'config.plain_api': missing");
  Json wrong = base;
  wrong["skip_cudagraph_warmup"] = 1;
  CHECK(config_from_json(wrong, "config").error().message ==
        "field 'config.skip_cudagraph_warmup': expected a boolean, got an integer");
}

TEST_CASE("program_json: torch_profile is written unless classic, and read by name") {
  CudagraphConfig c;
  CHECK_FALSE(config_to_json(c).contains("torch_profile"));  // classic: the old bytes
  for (int i = 1; i < static_cast<int>(TorchProfile::kCount); ++i) {
    c.torch_profile = static_cast<TorchProfile>(i);
    const Json j = config_to_json(c);
    CHECK(j["torch_profile"] == std::string(torch_profile_name(c.torch_profile)));
    const Result<CudagraphConfig> back = config_from_json(j, "config");
    REQUIRE(back.ok());
    CHECK(*back == c);
  }
  Json unknown = config_to_json(CudagraphConfig{});
  unknown["torch_profile"] = "2.99";
  CHECK(config_from_json(unknown, "config").error().message ==
        "field 'config.torch_profile': unknown torch profile '2.99' (this build knows classic, "
        "2.9, 2.10, 2.11, 2.12, 2.13, 2.14, 2.15)");
  unknown["torch_profile"] = 2.13;
  CHECK(config_from_json(unknown, "config").error().message.find("expected a string") !=
        std::string::npos);
}

TEST_CASE(
    "program_json: the newer knobs are written when set, read back, and refused where absent") {
  CudagraphConfig c;
  c.torch_profile = TorchProfile::k2_15;
  c.graph_partition = false;
  c.cudagraph_min_partition_size = 3;
  c.cudagraph_capture_sizes = std::vector<std::vector<std::int64_t>>{{2}, {4, 8}};
  c.cudagraph_skip_dynamic_graphs = true;
  c.cudagraph_dynamic_shape_warn_limit = 0;
  c.cudagraph_dynamic_shape_rerecord_limit = 5;
  c.cudagraph_or_error = true;
  c.caching_allocator_enabled = false;
  c.cudagraph_managed_input_rerecord_limit = 2;
  c.cudagraph_managed_input_rerecord_action = ManagedInputAction::kSkip;
  c.cudagraphs = false;
  const Json j = config_to_json(c);
  CHECK(newer_config_to_json(c).size() == 11);
  const Result<CudagraphConfig> back = config_from_json(Json::parse(j.dump()), "config");
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(*back == c);
  CHECK(newer_config_to_json(CudagraphConfig{}).empty());  // the old bytes

  // A knob the profile's releases lack is refused, naming it.
  Json classic = j;
  classic.erase("torch_profile");
  CHECK(starts_with(config_from_json(classic, "config").error().message,
                    "field 'config.cudagraph_or_error': cudagraph_or_error is not a knob of the "
                    "'classic' profile's releases (2.5 to 2.8); it exists from 2.9"));
  Json bad = j;
  bad["cudagraph_capture_sizes"] = Json::parse("[[2],[3,\"x\"]]");
  CHECK(config_from_json(bad, "config").error().message ==
        "field 'config.cudagraph_capture_sizes[1]': expected an array of integers");
  bad = j;
  bad["cudagraph_managed_input_rerecord_action"] = "demote";
  CHECK(config_from_json(bad, "config").error().message ==
        "field 'config.cudagraph_managed_input_rerecord_action': expected \"copy\" or \"skip\", "
        "got 'demote'");
  Json older = j;
  older["torch_profile"] = "2.14";
  older.erase("cudagraph_dynamic_shape_rerecord_limit");
  CHECK(starts_with(config_from_json(older, "config").error().message,
                    "field 'config.cudagraph_managed_input_rerecord_limit': "
                    "cudagraph_managed_input_rerecord_limit is not a knob of the '2.14' "
                    "profile's releases (2.14); it exists from 2.15"));
  bad = j;
  bad["cudagraph_min_partition_size"] = -1;
  CHECK(config_from_json(bad, "config").error().message ==
        "field 'config.cudagraph_min_partition_size': must be 0 to 4096, got -1");
}

TEST_CASE("program_json: partition cuts round-trip and bad ones name the field") {
  FunctionBuilder f("f", CompilationMode::kInference, {"x"});
  const ValueIndex a = f.add(f.input(0), f.input(0));
  FunctionDef d = f.returns({f.add(f.mul(a, a), f.input(0))});
  d.partition_cuts = {{1, 2, PartitionCutReason::kCpu}};
  const Json j = function_to_json(d);
  CHECK(j["partition_cuts"].dump() == R"([{"begin":1,"end":2,"reason":"cpu"}])");
  const Result<FunctionDef> back = function_via_text(j);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(back->partition_cuts == d.partition_cuts);
  CHECK_FALSE(function_to_json(FunctionDef{}).contains("partition_cuts"));
  const auto error_with = [&](const char* cuts) {
    Json k = j;
    k["partition_cuts"] = Json::parse(cuts);
    return function_error(k.dump());
  };
  CHECK(error_with(R"([{"begin":1,"end":4,"reason":"cpu"}])") ==
        "field 'partition_cuts[0].end': ops [1, 4) is empty or not within the 3 ops");
  CHECK(error_with(R"([{"begin":2,"end":2,"reason":"cpu"}])") ==
        "field 'partition_cuts[0].end': ops [2, 2) is empty or not within the 3 ops");
  CHECK(error_with(R"([{"begin":0,"end":2,"reason":"cpu"},{"begin":1,"end":3,"reason":"cpu"}])") ==
        "field 'partition_cuts[1].begin': ops [1, 3) overlap or precede the cut before");
  CHECK(starts_with(error_with(R"([{"begin":0,"end":1,"reason":"gpu"}])"),
                    "field 'partition_cuts[0].reason': unknown cut reason 'gpu'"));
  CHECK(starts_with(error_with(R"([{"begin":0,"end":1,"reason":"cpu","why":1}])"),
                    "field 'partition_cuts[0].why': unknown field"));
}

TEST_CASE("program_json: each action kind reads from a hand-written line") {
  const char* lines[] = {
      R"({"action":"new_tensor","name":"x","sizes":[4,2],"dtype":"int64","fill":0.5,"offset":1,"strides":[1,4],"parameter":true,"requires_grad":true})",
      R"({"action":"mark_static","name":"p.grad","guard":true})",
      R"({"action":"call","function":"fwd","args":["x","p"],"outputs":["y",""],"int_key":[4],"new_invocation":false,"consume":["x"]})",
      R"({"action":"eager_call","function":"f","args":["x"],"outputs":["y"]})",
      R"({"action":"del","name":"y"})",
      R"({"action":"read","name":"y"})",
      R"({"action":"reassign_data","name":"p","fill":2.0})",
      R"({"action":"mark_step_begin"})",
      R"({"action":"set_to_running_backward"})",
      R"({"action":"accumulate_grad","param":"p","grad":"g"})",
      R"({"action":"create_optimizer","name":"opt","kind":"adamw","params":["p"],"adam":{"lr":0.001,"beta1":0.9,"beta2":0.999,"eps":1e-08,"weight_decay":0.01}})",
      R"({"action":"optimizer_step","name":"opt"})",
      R"({"action":"zero_grad","name":"opt","set_to_none":false})",
      R"({"action":"drop_optimizer","name":"opt"})",
      R"({"action":"reset"})",
      R"({"action":"run_capture_scenario","name":"basic","mode":"legacy"})",
      R"({"action":"autograd_graph","name":"g","root":0,"tensors":[{"name":"t","sizes":[2],"dtype":"float64","requires_grad":true}],"nodes":[{"name":"MulBackward0","kind":"functional","inputs":[{"sizes":[2],"dtype":"float32"}],"next":[[1,0],null],"saved":["t"],"saved_sizes":[2],"saved_scalars":[0.5],"hooks":["pre_hook"]},{"name":"AccumulateGrad","kind":"AccumulateGrad","inputs":[{"sizes":[2],"dtype":"float64"}],"next":[],"variable":"t"}]})",
      R"({"action":"compiled_backward","graph":"g","dynamic":false})",
      R"({"action":"backward","tensor":"loss","grad":"g","retain_graph":true,"compiled":true,"dynamic":false})",
      R"({"action":"clear_grads","name":"model","params":["p","q"],"set_to_none":true})",
  };
  static_assert(std::size(lines) == std::variant_size_v<Action>);
  for (std::size_t i = 0; i < std::size(lines); ++i) {
    CAPTURE(lines[i]);
    const Result<Action> a = parse_action(lines[i]);
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    CHECK(a->index() == i);
    // Each line is written exactly as the writer would write it.
    CHECK(action_to_json(*a).dump() == lines[i]);
  }

  const auto t = std::get<NewTensor>(*parse_action(lines[0]));
  CHECK(t.name == "x");
  CHECK(t.sizes == Dims{4, 2});
  CHECK(t.fill == 0.5f);
  CHECK(t.offset == 1);
  CHECK(t.strides == Dims{1, 4});
  CHECK(t.parameter);
  CHECK(t.requires_grad);
  const auto b = std::get<Backward>(*parse_action(lines[18]));
  CHECK(b.tensor == "loss");
  CHECK(b.grad == "g");
  CHECK(b.retain_graph);
  CHECK(b.compiled);
  CHECK_FALSE(b.dynamic);
  const auto c = std::get<Call>(*parse_action(lines[2]));
  CHECK(c.args == std::vector<std::string>{"x", "p"});
  CHECK(c.outputs == std::vector<std::string>{"y", ""});
  CHECK(c.int_key == std::vector<std::int64_t>{4});
  CHECK(c.new_invocation == false);
  CHECK(c.consume == std::vector<std::string>{"x"});
  const auto o = std::get<CreateOptimizer>(*parse_action(lines[10]));
  CHECK(o.kind == OptimizerKind::kAdamW);
  CHECK(bits(o.adam.eps) == bits(1e-8f));
  CHECK(bits(o.adam.weight_decay) == bits(0.01f));
  CHECK(std::get<ZeroGrad>(*parse_action(lines[12])).set_to_none == false);
  CHECK(std::get<RunCaptureScenario>(*parse_action(lines[15])).mode == CaptureMode::kLegacy);

  // Defaults: absent optional fields read as their defaults.
  const auto plain =
      std::get<NewTensor>(*parse_action(R"({"action":"new_tensor","name":"x","sizes":[]})"));
  CHECK_FALSE(plain.fill.has_value());
  CHECK(plain.offset == 0);
  CHECK_FALSE(plain.parameter);
  CHECK_FALSE(plain.requires_grad);
  const auto loss = std::get<Backward>(*parse_action(R"({"action":"backward","tensor":"l"})"));
  CHECK_FALSE(loss.grad.has_value());
  CHECK_FALSE(loss.retain_graph);
  CHECK_FALSE(loss.compiled);
  CHECK(loss.dynamic);
  const auto bare =
      std::get<Call>(*parse_action(R"({"action":"call","function":"f","args":[],"outputs":[]})"));
  CHECK_FALSE(bare.new_invocation.has_value());
  CHECK(bare.int_key.empty());
  const auto sgd = std::get<CreateOptimizer>(*parse_action(
      R"({"action":"create_optimizer","name":"o","kind":"sgd","params":["p"],)"
      R"("sgd":{"lr":0.1,"momentum":0.9,"dampening":0,"weight_decay":0,"nesterov":true}})"));
  CHECK(sgd.kind == OptimizerKind::kSgd);
  CHECK(sgd.sgd.nesterov);
  CHECK(bits(sgd.sgd.lr) == bits(0.1f));
}

TEST_CASE("program_json: bad action lines name the field") {
  CHECK(starts_with(action_error(R"({"action":"del","name":"x","colour":1})"),
                    "field 'colour': unknown field"));
  CHECK(parse_action(R"({"action":"del","name":"x","x_note":"kept for the reader"})").ok());
  CHECK(action_error(R"({"action":"frob"})") ==
        "field 'action': unknown action 'frob' (known: new_tensor, mark_static, call, "
        "eager_call, del, read, reassign_data, mark_step_begin, set_to_running_backward, "
        "accumulate_grad, create_optimizer, optimizer_step, zero_grad, drop_optimizer, reset, "
        "run_capture_scenario, autograd_graph, compiled_backward, backward, clear_grads)");
  CHECK(action_error(R"({"action":"run_capture_scenario","name":"basic","mode":"eager"})") ==
        "field 'mode': unknown capture mode 'eager' (known: functional, legacy)");
  CHECK(action_error(R"({"action":"del","name":3})") ==
        "field 'name': expected a string, got an integer");
  CHECK(action_error(R"({"action":"accumulate_grad","param":"p"})") == "field 'grad': missing");
  CHECK(action_error(R"({"name":"x"})") == "field 'action': missing");
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[2],"fill":1e40})") ==
        "field 'fill': number out of float32 range");
  // FLT_MAX's shortest text reads as a double just above FLT_MAX: it rounds to
  // FLT_MAX, as a float32 parse would; half an ulp more is out of range.
  const auto top = std::get<NewTensor>(
      *parse_action(R"({"action":"new_tensor","name":"x","sizes":[2],"fill":-3.4028235e+38})"));
  CHECK(bits(*top.fill) == bits(-std::numeric_limits<float>::max()));
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[2],"fill":3.4028236e+38})") ==
        "field 'fill': number out of float32 range");
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[2],"offset":1.5})") ==
        "field 'offset': expected an integer, got a number with a fraction or exponent");
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[2,3],"strides":[1]})") ==
        "field 'strides': 1 entries for 2 sizes");
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[2,3],"strides":[1,-3]})") ==
        "field 'strides[1]': stride -3 is outside [0, 1099511627776]");
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[2,-1]})") ==
        "field 'sizes[1]': negative size -1");
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[1,1,1,1,1,1,1,1,1]})") ==
        "field 'sizes': 9 entries, the limit is 8");
  CHECK(action_error(R"({"action":"call","function":"f","args":["a",2],"outputs":[]})") ==
        "field 'args[1]': expected a string, got an integer");
  CHECK(action_error(R"({"action":"create_optimizer","name":"o","kind":"lion","params":[]})") ==
        "field 'kind': unknown optimizer kind 'lion' (known: sgd, adam, adamw)");
  // Only the hyper-parameters of the kind: `sgd` on an Adam optimizer is refused.
  CHECK(starts_with(action_error(R"({"action":"create_optimizer","name":"o","kind":"adam",)"
                                 R"("params":["p"],"adam":{"lr":1,"beta1":0.9,"beta2":0.9,)"
                                 R"("eps":1,"weight_decay":0},"sgd":{}})"),
                    "field 'sgd': unknown field"));
  CHECK(action_error(R"({"action":"create_optimizer","name":"o","kind":"adam","params":["p"],)"
                     R"("adam":{"lr":1,"beta1":0.9,"beta2":0.9,"eps":1}})") ==
        "field 'adam.weight_decay': missing");

  const std::string long_name(kMaxJsonNameBytes + 1, 'n');
  CHECK(action_error(R"({"action":"read","name":")" + long_name + R"("})") ==
        "field 'name': name of 257 bytes, the limit is 256");
  Json many = Json::parse(R"({"action":"eager_call","function":"f","outputs":[]})");
  many["args"] = std::vector<std::string>(kMaxBodyInputs + 1, "a");
  CHECK(
      action_via_text(many).error().message ==
      fmt::format("field 'args': {} entries, the limit is {}", kMaxBodyInputs + 1, kMaxBodyInputs));
}

TEST_CASE("program_json: a tensor of more than kMaxTensorElements elements is refused") {
  // A shape costs nothing until values are computed (values off makes only
  // its address), so the reader holds shapes to the model's limit, 2^40
  // elements; with a size of 0 in front, strides must not overflow either.
  static_assert(kMaxTensorElements == 1099511627776);
  CHECK(parse_action(R"({"action":"new_tensor","name":"x","sizes":[4096,4096]})").ok());
  CHECK(parse_action(R"({"action":"new_tensor","name":"x","sizes":[16777217]})").ok());
  CHECK(parse_action(R"({"action":"new_tensor","name":"x","sizes":[32000,4096]})").ok());
  CHECK(parse_action(R"({"action":"new_tensor","name":"x","sizes":[0,4096,4096]})").ok());
  const std::string too_big =
      "field 'sizes': sizes {} span more than 1099511627776 elements, the limit for one tensor "
      "(a size of 0 counts as 1)";
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[1099511627777]})") ==
        fmt::format(fmt::runtime(too_big), "[1099511627777]"));
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[1048577,1048576]})") ==
        fmt::format(fmt::runtime(too_big), "[1048577, 1048576]"));
  CHECK(action_error(R"({"action":"new_tensor","name":"x","sizes":[1000000000,1000000000]})") ==
        fmt::format(fmt::runtime(too_big), "[1000000000, 1000000000]"));
  CHECK(action_error(
            R"({"action":"new_tensor","name":"x","sizes":[0,1099511627776,1099511627776]})") ==
        fmt::format(fmt::runtime(too_big), "[0, 1099511627776, 1099511627776]"));
  CHECK(
      action_error(
          R"({"action":"new_tensor","name":"x","sizes":[9223372036854775807,9223372036854775807]})") ==
      fmt::format(fmt::runtime(too_big), "[9223372036854775807, 9223372036854775807]"));
}

TEST_CASE("program_json: an op whose result passes the limit fails the replay, its work never") {
  // Sizes within the limit can still ask for a huge result (broadcasting),
  // which the body interpreter refuses, or for hours of multiply-adds (mm),
  // which it models from the shapes (launch_mm) and replays.
  const std::string header = header_line(TraceHeader{});
  auto replay = [&](const std::string& op, const std::string& a, const std::string& b) {
    const std::string text =
        header + "\n" +
        R"({"seq":1,"type":"function","function":"f","mode":"inference","inputs":["a","b"],)"
        R"("ops":[)" +
        op +
        R"(],"outputs":[2],"static_input_idxs":[],"param_input_idxs":[]})"
        "\n" +
        R"({"seq":2,"type":"action","index":0,"action":"new_tensor","name":"a","sizes":)" + a +
        "}\n" + R"({"seq":3,"type":"action","index":1,"action":"new_tensor","name":"b","sizes":)" +
        b + "}\n" +
        R"({"seq":4,"type":"action","index":2,"action":"call","function":"f","args":["a","b"],)"
        R"("outputs":["c"]})"
        "\n";
    return test::replay_text(text);
  };
  auto replay_error = [&](const std::string& op, const std::string& a, const std::string& b) {
    const Result<ResimulationReport> report = replay(op, a, b);
    REQUIRE_FALSE(report.ok());
    return report.error().message;
  };
  const std::string mm = R"({"op":"mm","args":[0,1]})";
  const std::string add = R"({"op":"add","args":[0,1]})";
  // Replay computes values: a tensor the reader takes but values on cannot
  // fill fails its action (the simulator fills every tensor it makes: one
  // line of 60 bytes must not ask for 4 GiB).
  CHECK(replay_error(add, "[4097,4096]", "[1]") ==
        "mem.jsonl:3:1: action 0 (new_tensor): sizes [4097, 4096]: the tensor spans 16781312 "
        "elements, the limit for one tensor with values on is 16777216");
  CHECK(replay(mm, "[256,256]", "[256,256]").ok());  // exactly the limit
  CHECK(replay(mm, "[512,256]", "[256,256]").ok());
  CHECK(replay(mm, "[4096,4096]", "[4096,2]").ok());  // 2^25 multiply-adds, in its reads
  CHECK(replay_error(add, "[4096,1]", "[1,8192]") ==
        "mem.jsonl:5:1: action 2 (call): function 'f': op 0 (add): sizes [4096, 8192] span more "
        "than 16777216 elements, the limit for one tensor (a size of 0 counts as 1)");
}

TEST_CASE("program_json: bad function lines name the field") {
  const std::string ok =
      R"({"function":"f","mode":"forward","inputs":["a","b"],)"
      R"("ops":[{"op":"add","args":[0,1]},{"op":"full","args":[],"sizes":[2],"scalar":1}],)"
      R"("outputs":[2,3],"static_input_idxs":[0],"param_input_idxs":[]})";
  CHECK(function_via_text(Json::parse(ok)).ok());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = ok;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK(function_error(with(R"("args":[0,1])", R"("args":[0,5])")) ==
        "field 'ops[0].args[1]': value 5 is not defined before op 0");
  CHECK(function_error(with(R"("args":[0,1])", R"("args":[0])")) ==
        "field 'ops[0].args': 'add' takes 2 args, got 1");
  CHECK(function_error(with(R"("op":"add")", R"("op":"pow")")) ==
        "field 'ops[0].op': unknown op 'pow' (known: add, sub, mul, div, neg, relu, sum, mm, "
        "clone, full, add_, copy_, alias, slice, t, view, expand, relu_backward, sgd, sgd_plain, "
        "adam, adamw, exp, log, sigmoid, tanh, rsqrt, sqrt, reciprocal, amax, as_strided, "
        "generic, getitem)");
  // amax reads a sum's fields; as_strided its geometry, checked field by field.
  const std::string first = R"({"op":"add","args":[0,1]})";
  const std::string strided =
      R"({"op":"as_strided","args":[0],"sizes":[2,1],"strides":[1,2],"storage_offset":1})";
  const Result<FunctionDef> round = function_via_text(Json::parse(with(first, strided)));
  REQUIRE_MESSAGE(round.ok(), round.error().message);
  CHECK(function_to_json(*round)["ops"][0].dump() == strided);
  CHECK(function_via_text(
            Json::parse(with(first, R"({"op":"amax","args":[0],"dims":[0],"keepdim":true})")))
            .ok());
  CHECK(function_error(with(first, R"({"op":"as_strided","args":[0],"sizes":[2],"strides":[1,1],)"
                                   R"("storage_offset":0})")) ==
        "field 'ops[0].strides': 2 entries for 1 sizes");
  CHECK(function_error(with(first, R"({"op":"as_strided","args":[0],"sizes":[2],"strides":[1],)"
                                   R"("storage_offset":-1})")) ==
        "field 'ops[0].storage_offset': -1 is outside [0, 1099511627776]");
  CHECK(
      function_error(with(first, R"({"op":"as_strided","args":[0],"sizes":[2],"strides":[1]})")) ==
      "field 'ops[0].storage_offset': missing");
  // A sum's dims and keepdim, and the sizes of a view or an expand.
  const std::string first_op = R"({"op":"add","args":[0,1]})";
  CHECK(function_via_text(
            Json::parse(with(first_op, R"({"op":"sum","args":[0],"dims":[0],"keepdim":true})")))
            .ok());
  CHECK(function_error(with(first_op, R"({"op":"sum","args":[0],"dims":[]})")) ==
        "field 'ops[0].dims': empty; leave dims out to sum over every dim");
  CHECK(function_error(with(first_op, R"({"op":"sum","args":[0],"dims":[0,1,2,3,4,5,6,7,8]})")) ==
        "field 'ops[0].dims': 9 entries, the limit is 8");
  CHECK(function_error(with(first_op, R"({"op":"sum","args":[0],"keepdim":1})")) ==
        "field 'ops[0].keepdim': expected a boolean, got an integer");
  CHECK(starts_with(function_error(with(first_op, R"({"op":"add","args":[0,1],"dims":[0]})")),
                    "field 'ops[0].dims': unknown field"));
  CHECK(function_error(with(first_op, R"({"op":"view","args":[0]})")) ==
        "field 'ops[0].sizes': missing");
  CHECK(function_error(with(first_op, R"({"op":"expand","args":[0],"sizes":[-1,2]})")) ==
        "field 'ops[0].sizes[0]': negative size -1");
  CHECK(starts_with(function_error(with(R"("args":[0,1])", R"("args":[0,1],"scalar":2)")),
                    "field 'ops[0].scalar': unknown field"));
  CHECK(function_error(with(R"("scalar":1)", R"("scalar":1e40)")) ==
        "field 'ops[1].scalar': number out of float32 range");
  CHECK(function_error(with(R"("sizes":[2])", R"("sizes":[-1])")) ==
        "field 'ops[1].sizes[0]': negative size -1");
  CHECK(function_error(with(R"("outputs":[2,3])", R"("outputs":[2,4])")) ==
        "field 'outputs[1]': value 4 is not defined");
  CHECK(function_error(with(R"("static_input_idxs":[0])", R"("static_input_idxs":[2])")) ==
        "field 'static_input_idxs[0]': index 2 is not an input");
  CHECK(function_error(with(R"("static_input_idxs":[0])", R"("static_input_idxs":[1.5])")) ==
        "field 'static_input_idxs[0]': expected an integer, got a number with a fraction or "
        "exponent");
  // stack_traces: one string or null per output, each within the limit.
  const std::string traced =
      R"("param_input_idxs":[],"stack_traces":["File \"t.py\", line 3",null]})";
  const Result<FunctionDef> with_traces =
      function_via_text(Json::parse(with(R"("param_input_idxs":[]})", traced)));
  REQUIRE(with_traces.ok());
  CHECK(output_stack_trace(*with_traces, 0) == "File \"t.py\", line 3");
  CHECK(output_stack_trace(*with_traces, 1) == "[Could not find stack trace]");
  CHECK(function_to_json(*with_traces)["stack_traces"].dump() ==
        R"(["File \"t.py\", line 3",null])");
  CHECK(function_error(
            with(R"("param_input_idxs":[]})", R"("param_input_idxs":[],"stack_traces":["a"]})")) ==
        "field 'stack_traces': expected an array of 2 strings or nulls, one per output");
  CHECK(function_error(with(R"("param_input_idxs":[]})",
                            R"("param_input_idxs":[],"stack_traces":[1,null]})")) ==
        "field 'stack_traces[0]': expected a string of at most 4096 characters, or null");
  // mutating_use_stack_traces: the same, one per input.
  const Result<FunctionDef> with_mutation = function_via_text(
      Json::parse(with(R"("param_input_idxs":[]})",
                       R"("param_input_idxs":[],"mutating_use_stack_traces":[null,"m"]})")));
  REQUIRE(with_mutation.ok());
  CHECK(mutation_stack_trace(*with_mutation, {0, 1}) == "m");
  CHECK_FALSE(mutation_stack_trace(*with_mutation, {0}).has_value());
  CHECK(function_to_json(*with_mutation)["mutating_use_stack_traces"].dump() == R"([null,"m"])");
  CHECK(function_error(with(R"("param_input_idxs":[]})",
                            R"("param_input_idxs":[],"mutating_use_stack_traces":[]})")) ==
        "field 'mutating_use_stack_traces': expected an array of 2 strings or nulls, one per "
        "input");
  CHECK(function_error(with(R"("mode":"forward")", R"("mode":"eager")")) ==
        "field 'mode': unknown mode 'eager' (known: forward, backward, inference)");
  CHECK(function_error(with(R"("ops":[)", R"("ops":[3,)")) ==
        "field 'ops[0]': expected an object, got an integer");
  CHECK(function_error(with(R"(,"param_input_idxs":[])", "")) ==
        "field 'param_input_idxs': missing");

  CHECK(function_error(with(R"("sizes":[2])", R"("sizes":[2097152,1048576])")) ==
        "field 'ops[1].sizes': sizes [2097152, 1048576] span more than 1099511627776 elements, "
        "the limit for one tensor (a size of 0 counts as 1)");

  Json big = Json::parse(ok);
  big["ops"] = Json::array();
  for (std::size_t k = 0; k <= kMaxBodyOps; ++k)
    big["ops"].push_back(Json::parse(R"({"op":"neg","args":[0]})"));
  CHECK(function_via_text(big).error().message == "field 'ops': 4097 entries, the limit is 4096");
}

}  // namespace capsim
