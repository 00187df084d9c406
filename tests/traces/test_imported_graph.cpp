// Recorded autograd graphs (the autograd_graph and compiled_backward actions):
// the JSON form round-trips, a World captures them as compiled autograd does,
// replay compares the captured targets structurally, and bad graphs are
// refused with the node that is wrong.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/compiled_autograd/fx_target_names.hpp"
#include "sim/world/world.hpp"
#include "tests/traces/trace_test_support.hpp"
#include "traces/format/program_json.hpp"

namespace capsim {
namespace {

const std::string kHeader =
    R"({"seq":0,"type":"header","format":"capsim-trace","version":1,"producer":"pytorch",)"
    R"("capsim_version":"0.1.0","name":"mul_sum","seed":0,"config":{"inline_inbuilt_nn_modules":true,)"
    R"("cudagraph_support_input_mutation":true,"cudagraph_unexpected_rerecord_limit":128,)"
    R"("skip_cudagraph_warmup":false,"force_cudagraphs_warmup":false,"slow_path_cudagraph_asserts":true,)"
    R"("zero_grad_static_error":false,"plain_api":false,"poison_freed":false},"observes":["ca_graph"]})";

// (x * y).sum() with x, y of 4 elements, as PyTorch 2.11 walks it.
std::string graph_action(int seq, int index, const std::string& name) {
  return R"({"seq":)" + std::to_string(seq) + R"(,"type":"action","index":)" +
         std::to_string(index) + R"(,"action":"autograd_graph","name":")" + name +
         R"(","root":0,"tensors":[{"name":"t0","sizes":[4],"dtype":"float32","requires_grad":true},)"
         R"({"name":"t1","sizes":[4],"dtype":"float32","requires_grad":true}],"nodes":[)"
         R"({"name":"SumBackward0","kind":"functional","inputs":[{"sizes":[],"dtype":"float32"}],"next":[[1,0]],"saved_sizes":[4]},)"
         R"({"name":"MulBackward0","kind":"functional","inputs":[{"sizes":[4],"dtype":"float32"}],"next":[[2,0],[3,0]],"saved":["t0","t1"]},)"
         R"({"name":"AccumulateGrad","kind":"AccumulateGrad","inputs":[{"sizes":[4],"dtype":"float32"}],"next":[],"variable":"t0"},)"
         R"({"name":"AccumulateGrad","kind":"AccumulateGrad","inputs":[{"sizes":[4],"dtype":"float32"}],"next":[],"variable":"t1"}]})";
}

std::string backward_action(int seq, int index, const std::string& graph) {
  return R"({"seq":)" + std::to_string(seq) + R"(,"type":"action","index":)" +
         std::to_string(index) + R"(,"action":"compiled_backward","graph":")" + graph +
         R"(","dynamic":true})";
}

// The autograd_graph action named `name`, edited as JSON first, then read:
// the action, or the reader's error.
Result<Action> edited_graph(const std::string& name, const std::function<void(Json&)>& edit) {
  Json j = Json::parse(graph_action(1, 0, name));
  for (const char* k : {"seq", "type", "index"}) j.erase(k);
  edit(j);
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, ""));
  return action_from_json(r);
}

// The ca_graph `captured` of each backward of `graphs` (edited as above).
std::vector<std::string> captured_of(const std::vector<std::function<void(Json&)>>& graphs,
                                     bool dynamic) {
  Program p;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const std::string name = "g" + std::to_string(i);
    auto a = edited_graph(name, graphs[i]);
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    p.actions.push_back(*a);
    p.actions.push_back(CompiledBackward{name, dynamic});
  }
  World world(WorldOptions{});
  REQUIRE(world.run(p).ok());
  std::vector<std::string> captured;
  for (const Event& e : world.events()) {
    if (e.kind == EventKind::kCaGraph) captured.push_back(e.printed(F::captured).value_or("?"));
  }
  return captured;
}

// PyTorch 2.11's captured targets for that graph, as the recorder writes them.
const std::string kTorchTargets =
    R"(["operator.getitem","operator.getitem","operator.getitem","operator.getitem",)"
    R"("operator.getitem","operator.getitem","operator.getitem",)"
    R"("torch._dynamo.external_utils.unwrap_maybe_dynamic_int",)"
    R"("torch._dynamo.external_utils.unwrap_maybe_dynamic_int",)"
    R"("torch._dynamo.external_utils.unwrap_maybe_dynamic_int",)"
    R"("torch._dynamo.external_utils.unwrap_maybe_dynamic_int",)"
    R"("torch._dynamo.compiled_autograd.ops.validate_outputs","operator.getitem",)"
    R"("torch._dynamo.compiled_autograd.ops.SumBackward0","operator.getitem",)"
    R"("torch._dynamo.compiled_autograd.ops.validate_outputs","operator.getitem",)"
    R"("torch._dynamo.compiled_autograd.ops.MulBackward0","operator.getitem","operator.getitem",)"
    R"("torch._dynamo.compiled_autograd.ops.validate_outputs","operator.getitem",)"
    R"("torch._dynamo.external_utils.call_accumulate_grad","operator.getitem",)"
    R"("torch._dynamo.external_utils.call_accumulate_grad",)"
    R"("torch._dynamo.external_utils.FakeCompiledAutogradEngine._exec_final_callbacks_stub"])";

std::string event(int seq, int action, const std::string& fields) {
  return R"({"seq":)" + std::to_string(seq) + R"(,"type":"event","action":)" +
         std::to_string(action) + R"(,"event":"ca_graph",)" + fields + "}";
}

std::string two_backwards(const std::string& targets) {
  return test::join_lines({kHeader, graph_action(1, 0, "g0"), backward_action(2, 1, "g0"),
                           event(3, 1, R"("backward":0,"captured":true,"targets":)" + targets),
                           graph_action(4, 2, "g1"), backward_action(5, 3, "g1"),
                           event(6, 3, R"("backward":1,"captured":false)")});
}

TEST_CASE("recorded graph: canonical FX target names") {
  CHECK(canonical_fx_target("torch._dynamo.compiled_autograd.ops.MulBackward0") ==
        "ops.MulBackward0");
  CHECK(canonical_fx_target("torch__dynamo_compiled_autograd_ops_MulBackward0") ==
        "ops.MulBackward0");
  CHECK(canonical_fx_target("torch._dynamo.compiled_autograd.ops.validate_outputs") ==
        "validate_outputs");
  CHECK(canonical_fx_target("torch._dynamo.external_utils.call_hook") == "call_hook");
  CHECK(canonical_fx_target("ops.MulBackward0") == "ops.MulBackward0");  // capsim's own
  CHECK(!canonical_fx_target("operator.getitem"));
  CHECK(!canonical_fx_target("torch._dynamo.external_utils.unwrap_maybe_dynamic_int"));
}

TEST_CASE("recorded graph: canonical dataflow reaches through dropped calls") {
  // validate_outputs -> getitem -> MulBackward0 -> getitem, getitem ->
  // accumulate(unwrap(getitem)) : the getitems and the unwrap drop out.
  const std::vector<std::string> targets{"torch._dynamo.compiled_autograd.ops.validate_outputs",
                                         "operator.getitem",
                                         "torch._dynamo.compiled_autograd.ops.MulBackward0",
                                         "operator.getitem",
                                         "operator.getitem",
                                         "unwrap_maybe_dynamic_int",
                                         "torch._dynamo.external_utils.call_accumulate_grad"};
  const std::vector<std::vector<std::uint32_t>> uses{{}, {0}, {1}, {2}, {2}, {}, {3, 5, 4}};
  const CanonicalCalls c = canonical_calls(targets, uses);
  CHECK(c.targets == std::vector<std::string>{"validate_outputs", "ops.MulBackward0",
                                              "torch.ops.inductor.accumulate_grad_.default"});
  CHECK(c.uses == std::vector<std::vector<std::uint32_t>>{{}, {0}, {1}});
  // Canonical form is a fixed point.
  CHECK(canonical_calls(c.targets, c.uses) == c);
}

TEST_CASE("recorded graph: the actions round-trip through JSON byte for byte") {
  for (const std::string& line : {graph_action(1, 0, "g0"), backward_action(2, 1, "g0")}) {
    CAPTURE(line);
    Json j = Json::parse(line);
    for (const char* k : {"seq", "type", "index"}) j.erase(k);
    auto r = ObjectReader::of(j, "");
    REQUIRE(r.ok());
    auto action = action_from_json(*r);
    REQUIRE_MESSAGE(action.ok(), action.error().message);
    CHECK(action_to_json(*action).dump() == j.dump());
  }
}

TEST_CASE("recorded graph: a capture, then a cache hit; PyTorch's targets match capsim's") {
  const auto report = test::replay_text(two_backwards(kTorchTargets));
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  const std::string why =
      report->divergence ? report->divergence->recorded + "\n" + report->divergence->predicted : "";
  INFO(why);
  CHECK(!report->divergence);
  CHECK(report->events_matched == 2);
}

TEST_CASE("recorded graph: negative control, a missing call is a divergence at targets") {
  std::string targets = kTorchTargets;
  const std::string mul = R"("torch._dynamo.compiled_autograd.ops.MulBackward0",)";
  targets.erase(targets.find(mul), mul.size());
  const auto report = test::replay_text(two_backwards(targets));
  REQUIRE(report.ok());
  REQUIRE(report->divergence);
  CHECK(report->divergence->line == 4);
  CHECK(report->divergence->field == "targets");
}

TEST_CASE("recorded graph: a different graph shape misses the cache (dynamic=false)") {
  const auto same = [](Json&) {};
  const auto larger = [](Json& j) {  // a larger x and y: static sizes change
    for (auto& t : j["tensors"]) t["sizes"] = {5};
    for (int n = 1; n < 4; ++n) j["nodes"][n]["inputs"][0]["sizes"] = {5};
    j["nodes"][0]["saved_sizes"] = {5};
  };
  CHECK(captured_of({same, larger}, false) == std::vector<std::string>{"true", "true"});
  CHECK(captured_of({same, larger}, true) == std::vector<std::string>{"true", "false"});
}

TEST_CASE("recorded graph: a leaf's .grad, defined or None, is part of AccumulateGrad's key") {
  // zero_grad(set_to_none=False): the second backward finds .grad defined
  // and captures again; the third hits.
  const auto none = [](Json&) {};
  const auto defined = [](Json& j) {
    for (auto& t : j["tensors"]) t["grad_defined"] = true;
  };
  CHECK(captured_of({none, defined, defined}, true) ==
        std::vector<std::string>{"true", "true", "false"});
}

// A TensorList argument (torch.cat's): its sizes as one list per tensor, and
// needs_input_grad's one range over its edges, round-trip and are checked.
TEST_CASE("recorded graph: a TensorList's size lists and input ranges") {
  const auto with_lists = [](const Json& ranges, const Json& lists) {
    return edited_graph("g0", [&](Json& j) {
      Json& mul = j["nodes"][1];
      mul["input_ranges"] = ranges;
      mul["saved_sizes"] = {2, 2, 4};
      mul["saved_values"] = Json::array({Json{{"const", "2"}}, Json{{"symint_lists", lists}},
                                         Json{{"tensor", "t0"}}, Json{{"tensor", "t1"}}});
    });
  };
  const Result<Action> ok = with_lists({2}, Json::array({{2, 2}, {4}}));
  REQUIRE_MESSAGE(ok.ok(), ok.error().message);
  const Json written = action_to_json(*ok);
  CHECK(written["nodes"][1]["input_ranges"] == Json::array({2}));
  CHECK(written["nodes"][1]["saved_values"][1]["symint_lists"] == Json::array({{2, 2}, {4}}));
  CHECK(with_lists({3}, Json::array({{2, 2}, {4}})).error().message ==
        "field 'nodes[1].input_ranges': spans 3 edges, the node has 2");
  CHECK(with_lists({2}, Json::array({2, 2})).error().message ==
        "field 'nodes[1].saved_values[1].symint_lists[0]': expected an array of sizes");
}

TEST_CASE("recorded graph: bad graphs are refused with the node that is wrong") {
  auto run_with = [](const std::function<void(Json&)>& edit) {
    auto a = edited_graph("g0", edit);
    if (!a.ok()) return a.error().message;
    World world(WorldOptions{});
    Program p;
    p.actions.push_back(*a);
    p.actions.push_back(CompiledBackward{"g0", true});
    const Status s = world.run(p);
    return s.ok() ? std::string() : s.error().message;
  };
  CHECK(run_with([](Json& j) {
          j["nodes"][1]["next"][0] = {9, 0};
        }).find("node 1 output 0: edge into node 9") != std::string::npos);
  CHECK(run_with([](Json& j) {
          j["nodes"][1]["saved"][0] = "nope";
        }).find("node 1: tensor 'nope'") != std::string::npos);
  CHECK(run_with([](Json& j) {
          j["nodes"][0]["kind"] = "GraphRoot";
        }).find("field 'nodes[0].kind'") != std::string::npos);
  CHECK(run_with([](Json& j) {
          j["nodes"][2]["next"] = {{0, 0}};
        }).find("cycle") != std::string::npos);
  CHECK(run_with([](Json& j) {
          j["nodes"][2].erase("variable");
        }).find("node 2 (AccumulateGrad): 'variable'") != std::string::npos);
  CHECK(run_with([](Json& j) { j["nodes"][1]["bogus"] = 1; }).find("field 'nodes[1].bogus'") !=
        std::string::npos);
  World world(WorldOptions{});
  Program p;
  p.actions.push_back(CompiledBackward{"nowhere", true});
  const Status s = world.run(p);
  REQUIRE(!s.ok());
  CHECK(s.error().message.find("autograd graph 'nowhere'") != std::string::npos);
}

}  // namespace
}  // namespace capsim
