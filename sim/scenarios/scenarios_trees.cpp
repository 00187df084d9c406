// Built-in scenarios, part 1: warmup, recording, generations, checkpoints and
// liveness (test/inductor/test_cudagraph_trees.py). Each mirrors one test; the
// expectations are the numbers that test asserts.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

ProgramScenario run_simple() {
  ProgramScenario s;
  s.name = "run_simple";
  s.mirrors = "test_cudagraph_trees.py::test_run_simple";
  s.description = "two input sizes give two FunctionIds, two roots and no children";
  ProgramWriter p(s);
  p.function(cube("foo", kInference));
  p.add(tensor("a", {4, 4}, 1.0f));
  p.add(tensor("b", {5, 5}, 0.0f));
  for (int i = 0; i < 2; ++i) p.add(with_key(call("foo", {"a"}, {""}), {4}));
  for (int i = 0; i < 2; ++i) p.add(with_key(call("foo", {"b"}, {""}), {5}));
  s.expect = [](const World& w, const auto&) {
    auto e = root_children_are(w, {0, 0});
    e.push_back({"graphs recorded", 2, graphs(w)});
    e.push_back({"warmups", 2, static_cast<std::int64_t>(w.counters().warmups)});
    return e;
  };
  return s;
}

ProgramScenario end_recording_early() {
  ProgramScenario s;
  s.name = "end_recording_early";
  s.mirrors = "test_cudagraph_trees.py::test_end_recording_early";
  s.description = "a recording ends once its outputs die: a later function starts a new root";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo_part1", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    p.function(f.returns({f.mul(f.mul(x, x), x)}));
  }
  {
    FunctionBuilder f("foo_part2", kInference, {"primals_1", "primals_2"});
    p.function(f.returns({f.add(f.input(0), f.input(1))}));
  }
  {
    FunctionBuilder f("foo2", kInference, {"primals_1"});
    p.function(f.returns({f.add(f.input(0), f.full({4}, 4.0f))}));
  }
  p.add(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 4; ++i) {
    p.add(call("foo_part1", {"x"}, {"y"}));
    p.add(consuming(call_same("foo_part2", {"x", "y"}, {"out"}), {"y"}));
    p.add(Del{"out"});
    if (i == 3) break;
    // The test steps GenerationTracker back: foo2 runs in the same generation.
    p.add(call_same("foo2", {"x"}, {"out2"}));
    p.add(Del{"out2"});
  }
  s.expect = [](const World& w, const auto&) { return root_children_are(w, {1, 0}); };
  return s;
}

ProgramScenario execution_into_recording() {
  ProgramScenario s;
  s.name = "execution_into_recording";
  s.mirrors = "test_cudagraph_trees.py::test_execution_into_recording";
  s.description =
      "a new branch after replay: its warmup output holds 1 pool block, its recording 1, "
      "replay outputs 0";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo_prefix", kInference, {"primals_1"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  {
    FunctionBuilder f("foo_neg_branch", kInference, {"primals_1"});
    p.function(f.returns({f.sub(f.input(0), f.full({4, 4}, 10.0f))}));
  }
  {
    FunctionBuilder f("foo_pos_branch", kInference, {"primals_1"});
    p.function(f.returns({f.add(f.input(0), f.full({4, 4}, 10.0f))}));
  }
  {
    FunctionBuilder f("add_one_", kInference, {"x"});
    p.function(f.returns({f.add_(f.input(0), f.full({4, 4}, 1.0f))}));
  }
  auto foo = [&](const char* branch, const char* out, bool keep) {
    p.add(call("foo_prefix", {"inp"}, {"y"}));
    p.add(consuming(call_same(branch, {"y"}, {keep ? out : ""}), {"y"}));
  };
  p.add(tensor("inp", {4, 4}, 0.0f));
  foo("foo_neg_branch", "", false);
  foo("foo_neg_branch", "", false);
  p.add(eager("add_one_", {"inp"}, {""}));
  foo("foo_pos_branch", "out_warmup", true);
  p.probe(live_blocks);
  foo("foo_pos_branch", "out_live", true);
  p.probe(live_blocks);
  p.add(Del{"out_warmup"});
  p.probe(live_blocks);
  p.add(Del{"out_live"});
  p.probe(live_blocks);
  foo("foo_pos_branch", "out", true);
  p.add(Read{"out"});
  p.probe(live_blocks);
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    return std::vector<Expectation>{{"live blocks after the branch's warmup", 1, probe[0]},
                                    {"live blocks after its recording", 1, probe[1]},
                                    {"live blocks after del out_warmup", 1, probe[2]},
                                    {"live blocks after del out_live", 0, probe[3]},
                                    {"live blocks with a replayed output held", 0, probe[4]},
                                    {"graphs recorded", 3, graphs(w)},
                                    {"checkpoints", 2, checkpoints(w)}};
  };
  return s;
}

ProgramScenario dynamic_warmup() {
  ProgramScenario s;
  s.name = "dynamic_warmup";
  s.mirrors = "test_cudagraph_trees.py::test_dynamic_warmup";
  s.description = "each int key is its own FunctionId: warmup and record per size, body runs twice";
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"x"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  p.add(tensor("x2", {2}, 1.0f));
  p.add(tensor("x3", {3}, 1.0f));
  for (int i = 0; i < 3; ++i) p.add(with_key(call_same("f", {"x2"}, {""}), {2}));
  for (int i = 0; i < 3; ++i) p.add(with_key(call_same("f", {"x3"}, {""}), {3}));
  s.expect = [](const World& w, const auto&) {
    const auto& c = w.counters();
    return std::vector<Expectation>{{"body runs (warmups + recordings)", 4,
                                     static_cast<std::int64_t>(c.warmups + c.graphs_recorded)},
                                    {"replays", 2, static_cast<std::int64_t>(c.replays)},
                                    {"FunctionIds", 2, events_of(w, EventKind::kCompile)}};
  };
  return s;
}

ProgramScenario unaligned_static_parameter() {
  ProgramScenario s;
  s.name = "unaligned_static_parameter";
  s.mirrors = "test_cudagraph_trees.py::test_unaligned_static_parameter";
  s.description = "a static input at data_ptr % 16 != 0 is demoted and copied";
  s.options.config.skip_cudagraph_warmup = false;
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1"});
    f.static_inputs({0});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  for (int i = 0; i < 3; ++i) {
    {
      NewTensor t = tensor("inp", {19}, 1.0f);
      t.offset = 1;  // ones(20)[1:]
      p.add(t);
    }
    p.add(call_same("foo", {"inp"}, {"out"}));
    p.add(Del{"out"});
  }
  s.expect = [](const World& w, const auto&) {
    const GraphNode* node =
        w.manager() && !w.manager()->graphs().empty() ? &w.manager()->graphs().front() : nullptr;
    std::int64_t static_ptrs = -1;
    if (node) {
      static_ptrs =
          std::count_if(node->static_input_data_ptrs.begin(), node->static_input_data_ptrs.end(),
                        [](const auto& p) { return p.has_value(); });
    }
    return std::vector<Expectation>{{"static_input_data_ptrs that are not None", 0, static_ptrs},
                                    {"graphs recorded", 1, graphs(w)}};
  };
  return s;
}

ProgramScenario live_outputs_multiple_graphs() {
  ProgramScenario s;
  s.name = "live_outputs_multiple_graphs";
  s.mirrors = "test_cudagraph_trees.py::test_live_outputs_multiple_graphs";
  s.description = "a new branch after replay costs one checkpoint to warm up and one to record";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo_part1", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    const ValueIndex x3 = f.add(f.add(x, x), x);
    p.function(f.returns({x3, f.add(x3, f.full({5}, 1.0f))}));
  }
  {
    FunctionBuilder f("foo_part2", kInference, {"primals_1"});
    p.function(f.returns({f.mul(f.input(0), f.input(0))}));
  }
  {
    FunctionBuilder f("foo_branch", kInference, {"primals_1"});
    p.function(f.returns({f.add(f.input(0), f.full({5}, 1.0f))}));
  }
  p.add(tensor("zeros", {5}, 0.0f));
  p.add(tensor("ones", {5}, 1.0f));
  // foo(x): the graph break after part 1; z.sum() > 0 decides the branch.
  auto foo = [&](const char* inp, bool branch, const char* out) {
    p.add(call("foo_part1", {inp}, {"x3", "y"}));
    p.add(consuming(call_same("foo_part2", {"x3"}, {"z"}), {"x3"}));
    p.add(Del{"z"});
    if (branch) {
      p.add(consuming(call_same("foo_branch", {"y"}, {out}), {"y"}));
    } else {
      p.add(Del{"y"});
    }
  };
  foo("zeros", false, "");
  foo("zeros", false, "");
  p.probe(checkpoints);
  foo("ones", true, "");
  foo("ones", true, "out");
  p.probe(live_blocks);
  p.add(Del{"out"});
  p.probe(live_blocks);
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    return std::vector<Expectation>{{"checkpoints before the branch", 0, probe[0]},
                                    {"live blocks with out held", 1, probe[1]},
                                    {"live blocks after del out", 0, probe[2]},
                                    {"checkpoints", 2, checkpoints(w)}};
  };
  return s;
}

// foo(x) = (x + 1, x + 2), cudagraphified directly (no torch.compile entry).
FunctionDef two_outputs(const std::string& name, Dims sizes) {
  FunctionBuilder f(name, kInference, {"primals_1"});
  const ValueIndex x = f.input(0);
  return f.returns({f.add(x, f.full(sizes, 1.0f)), f.add(x, f.full(sizes, 2.0f))});
}

ProgramScenario tensor_dies_between_checkpoint() {
  ProgramScenario s;
  s.name = "tensor_dies_between_checkpoint";
  s.mirrors = "test_cudagraph_trees.py::test_tensor_dies_between_checkpoint";
  s.description = "an output that died since the recording is freed by the checkpoint";
  s.options.config.skip_cudagraph_warmup = true;
  ProgramWriter p(s);
  p.function(two_outputs("foo", {4}));
  p.function(cube("foo2", kInference));
  p.add(tensor("inp", {4}, 1.0f));
  p.add(call_same("foo", {"inp"}, {""}));
  p.add(call_same("foo", {"inp"}, {""}));
  p.add(call_same("foo", {"inp"}, {"out1", "out2"}));
  p.add(Del{"out2"});
  p.probe(checkpoints);
  p.add(consuming(call_same("foo2", {"out1"}, {"x"}), {"out1"}));
  p.probe(checkpoints);
  p.probe(live_blocks);
  p.add(Del{"x"});
  p.probe(live_blocks);
  s.expect = [](const World&, const std::vector<std::int64_t>& probe) {
    return std::vector<Expectation>{{"checkpoints before foo2", 0, probe[0]},
                                    {"checkpoints after foo2", 1, probe[1]},
                                    {"live blocks with x held", 1, probe[2]},
                                    {"live blocks after del x", 0, probe[3]}};
  };
  return s;
}

ProgramScenario checkpoint_shared_output_storage_deallocation() {
  ProgramScenario s;
  s.name = "checkpoint_shared_output_storage_deallocation";
  s.mirrors = "test_cudagraph_trees.py::test_checkpoint_shared_output_storage_deallocation";
  s.description = "two outputs over one storage are one block, freed when both die";
  s.options.config.skip_cudagraph_warmup = true;
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    f.add(x, f.full({2}, 1.0f));  // x_tmp, unused
    p.function(f.returns({f.slice(x, 0, 1), f.slice(x, 1, 2)}));
  }
  {
    FunctionBuilder f("foo2", kInference, {"primals_1"});
    const ValueIndex y = f.mul(f.input(0), f.input(0));
    p.function(f.returns({f.alias(y), f.alias(y)}));
  }
  p.add(tensor("inp", {2}, 1.0f));
  p.add(call_same("foo", {"inp"}, {""}));
  p.add(call_same("foo", {"inp"}, {""}));
  p.add(call_same("foo", {"inp"}, {"x1", "x2"}));
  p.add(call_same("foo2", {"x1"}, {""}));
  p.probe(checkpoints);
  p.probe([](const World& w) {
    return static_cast<std::int64_t>(w.data_ptr("x1").value() + kElementBytes ==
                                     w.data_ptr("x2").value());
  });
  p.probe(live_blocks);
  p.add(Del{"x1"});
  p.probe(live_blocks);
  p.add(Del{"x2"});
  p.probe(live_blocks);
  s.expect = [](const World&, const std::vector<std::int64_t>& probe) {
    return std::vector<Expectation>{{"checkpoints", 1, probe[0]},
                                    {"x1 and x2 share a storage", 1, probe[1]},
                                    {"live blocks with x1 and x2", 1, probe[2]},
                                    {"live blocks after del x1", 1, probe[3]},
                                    {"live blocks after del x2", 0, probe[4]}};
  };
  return s;
}

ProgramScenario tensor_no_longer_in_pool() {
  ProgramScenario s;
  s.name = "tensor_no_longer_in_pool";
  s.mirrors = "test_cudagraph_trees.py::test_tensor_no_longer_in_pool";
  s.description = "a managed input replaced by an eager tensor: a sibling recording, 1 checkpoint";
  s.options.config.skip_cudagraph_warmup = true;
  ProgramWriter p(s);
  p.function(two_outputs("foo", {4}));
  p.function(cube("foo2", kInference));
  p.add(tensor("inp", {4}, 1.0f));
  p.add(call_same("foo", {"inp"}, {"x1", "x2"}));
  p.add(call_same("foo2", {"x1"}, {""}));
  p.add(Del{"x1"});
  p.add(Del{"x2"});
  p.add(call_same("foo", {"inp"}, {"x1", "x2"}));
  p.probe(checkpoints);
  p.add(tensor("zeros_like_x1", {4}, 0.0f));
  p.add(call_same("foo2", {"zeros_like_x1"}, {""}));
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    auto e = root_children_are(w, {2});
    e.push_back({"checkpoints after replaying foo", 0, probe[0]});
    e.push_back({"checkpoints", 1, checkpoints(w)});
    return e;
  };
  return s;
}

ProgramScenario checkpointing_resets_persistent_refs() {
  ProgramScenario s;
  s.name = "checkpointing_resets_persistent_refs";
  s.mirrors = "test_cudagraph_trees.py::test_checkpointing_resets_persistent_refs";
  s.description = "a cached output is the same object every replay until a checkpoint";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1"});
    p.function(f.returns({f.mm(f.input(0), f.input(0))}));
  }
  {
    FunctionBuilder f("foo2", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    p.function(f.returns({f.slice(x, 0, 1), f.mm(x, x)}));
  }
  for (int i = 0; i < 3; ++i) {
    p.add(tensor("inp", {20, 20}));
    p.add(call("foo", {"inp"}, {""}));
  }
  p.probe(checkpoints);
  p.add(tensor("inp", {20, 20}));
  p.add(call("foo", {"inp"}, {"out"}));
  p.probe([](const World& w) { return tensor_id(w, "out"); });
  p.add(Del{"out"});
  p.add(tensor("inp", {20, 20}));
  p.add(call("foo", {"inp"}, {"out"}));
  p.probe([](const World& w) { return tensor_id(w, "out"); });
  p.add(Del{"out"});
  for (int i = 0; i < 2; ++i) {
    p.add(tensor("inp", {20, 20}));
    p.add(call("foo", {"inp"}, {"out"}));
    // The test steps GenerationTracker back, so foo2 runs in foo's generation.
    p.add(call_same("foo2", {"out"}, {"out_alias", "out2"}));
    p.add(Del{"out_alias"});
    p.probe(live_blocks);
    p.add(Del{"out"});
    p.probe(live_blocks);
    p.add(Del{"out2"});
    p.probe(live_blocks);
    p.probe(checkpoints);
  }
  p.add(tensor("inp", {20, 20}));
  p.add(call("foo", {"inp"}, {"new_out"}));
  p.probe([](const World& w) { return tensor_id(w, "new_out"); });
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    std::vector<Expectation> e{{"checkpoints after 3 calls", 0, probe[0]},
                               {"same object on the next replay", probe[1], probe[2]}};
    for (int i = 0; i < 2; ++i) {
      const std::size_t b = 3 + 4 * static_cast<std::size_t>(i);
      e.push_back({"live blocks after del out_alias", 2, probe[b]});
      e.push_back({"live blocks after del out", 1, probe[b + 1]});
      e.push_back({"live blocks after del out2", 0, probe[b + 2]});
      e.push_back({"checkpoints (i+1)", i + 1, probe[b + 3]});
    }
    e.push_back({"a new object after the checkpoints", 1, probe[11] != probe[1]});
    const bool aliased = w.manager() && !w.manager()->graphs().empty() &&
                         !w.manager()->graphs()[0].unaliased_in_all_paths[0];
    e.push_back({"root output 0 aliased in some path", 1, aliased});
    return e;
  };
  return s;
}

}  // namespace

void add_tree_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(run_simple());
  out.push_back(end_recording_early());
  out.push_back(execution_into_recording());
  out.push_back(dynamic_warmup());
  out.push_back(unaligned_static_parameter());
  out.push_back(live_outputs_multiple_graphs());
  out.push_back(tensor_dies_between_checkpoint());
  out.push_back(checkpoint_shared_output_storage_deallocation());
  out.push_back(tensor_no_longer_in_pool());
  out.push_back(checkpointing_resets_persistent_refs());
}

}  // namespace capsim
