// capsim explain's words: every decision in the corpus has a rule, a re-record
// names the moved tensor and the action that moved it, --action filters, and
// a program is simulated first; what-if edits and their ranking.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "sim/core/decisions.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/analyses/what_if.hpp"

namespace capsim {
namespace {

const std::string kCorpus = std::string(CAPSIM_SOURCE_DIR) + "/data/corpus";

// Every decision that follows a raise simulated too.
const ProgramRunOptions kKeepGoing = [] {
  ProgramRunOptions how;
  how.on_raise = OnRaise::kKeepGoing;
  return how;
}();

// The edits auto found better, best first (what_if_auto reports every edit).
Result<std::vector<WhatIf>> auto_better(
    const ObservedRun& run, const std::function<void(std::size_t, std::size_t)>& on = {},
    const ProgramRunOptions& how = {}) {
  CAPSIM_TRY_ASSIGN(const std::vector<WhatIf> all, what_if_auto(run, on, how));
  return improving(all);
}

TEST_CASE("explain: every decision in every corpus trace has a rule") {
  std::size_t files = 0, explained = 0;
  for (const auto& dir : {kCorpus, kCorpus + "/torch/2.11.0", kCorpus + "/torch/2.15.0"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".jsonl") continue;
      Result<ObservedRun> run = observe_file(entry.path().string());
      REQUIRE_MESSAGE(run.ok(), entry.path().string());
      for (const Explanation& e : explain(*run, std::nullopt)) {
        INFO(entry.path().string(), ": ", e.event);
        CHECK(!e.rule.empty());
        CHECK(!e.what.empty());
        ++explained;
      }
      ++files;
    }
  }
  CHECK(files > 100);
  CHECK(explained > 300);
}

// The decisions table is the one list: each decision has its rule, its
// key once, and its row in docs/trace-format.md §6.1, so neither the docs
// nor explain can miss an id or reason the emitters take from the table.
TEST_CASE("explain: every decision has a rule and is documented in docs/trace-format.md §6.1") {
  std::ifstream in(std::string(CAPSIM_SOURCE_DIR) + "/docs/trace-format.md");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  const std::size_t from = doc.find("### 6.1 Enumerated values");
  const std::size_t to = doc.find("### 6.2", from);
  REQUIRE(from != std::string::npos);
  const std::string table = doc.substr(from, to - from);
  // The row of `kind.field`, from its start to the end of its line.
  const auto row = [&](const std::string& name) {
    const std::size_t at = table.find("| `" + name + "` |");
    return at == std::string::npos ? std::string() : table.substr(at, table.find('\n', at) - at);
  };
  std::set<std::string> keys;
  for (const DecisionInfo& d : decisions()) {
    const std::string key = decision_rule_key(d);
    INFO(key);
    CHECK(keys.insert(key).second);
    CHECK(!d.title.empty());
    CHECK(!d.rule.empty());
    // Explain's own keys, not values of a field: a first compile whose grads
    // are not static, a capture that recorded a graph, a function that only
    // warmed up.
    if (d.key.empty() || d.decision == Decision::kCompileGradsNotStatic ||
        d.kind == EventKind::kCaGraph || d.kind == EventKind::kWarmup) {
      continue;
    }
    // A value of a field: the event that carries it reads as this decision.
    CHECK(find_decision(d.kind, d.key) == d.decision);
    const bool by_id =
        d.kind == EventKind::kError || d.kind == EventKind::kSkip || d.kind == EventKind::kWarning;
    const std::string field = std::string(event_kind_name(d.kind)) + (by_id ? ".id" : ".reason");
    CHECK(row(field).find("`" + std::string(d.key) + "`") != std::string::npos);
  }
  CHECK(keys.size() == decisions().size());
}

TEST_CASE("explain: a re-record names the moved tensor and the action that moved it") {
  Result<ObservedRun> run =
      observe_file(kCorpus + "/rerecord_if_static_input_address_changed.jsonl");
  REQUIRE(run.ok());
  const std::vector<Explanation> all = explain(*run, std::size_t{12});
  REQUIRE(all.size() == 1);
  CHECK(all[0].event == "record:static_input_idx_mismatch");
  CHECK(all[0].inputs == std::vector<std::string>{"bias"});
  CHECK(all[0].what.find("action 10 (reassign_data)") != std::string::npos);
  CHECK(all[0].fix.find("in place") != std::string::npos);
  CHECK(explanation_text(all[0]).starts_with("action 12 (line 26): re-recorded"));
}

// A step over some of its optimizer's params names its inputs from the
// compile event's `step_params`, not from the function's name: renamed, the
// step still reads w1 and w1.grad (params w1, w2; only w1 had a grad).
TEST_CASE("explain: a partial optimizer step names its inputs from step_params") {
  const std::string path = kCorpus + "/compiled_optimizer_grad_none_guard.jsonl";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string renamed = text.str();
  for (std::size_t at; (at = renamed.find("opt.step[0]")) != std::string::npos;) {
    renamed.replace(at, 11, "opt.some");
  }
  const std::filesystem::path copy =
      std::filesystem::temp_directory_path() / "capsim_test_step_params.jsonl";
  std::ofstream(copy) << renamed;
  for (const std::string& file : {path, copy.string()}) {
    INFO(file);
    Result<ObservedRun> run = observe_file(file);
    REQUIRE(run.ok());
    const std::vector<Explanation> all = explain(*run, std::size_t{28});
    REQUIRE(all.size() == 1);
    CHECK(all[0].event == "record:no_child");
    CHECK(all[0].inputs == std::vector<std::string>{"w1.grad"});
    CHECK(all[0].what.find("static (baked in): w1, opt state") != std::string::npos);
  }
  std::filesystem::remove(copy);
}

TEST_CASE("explain: a program is simulated first, and copies name their inputs") {
  Result<ObservedRun> run = observe_file(std::string(CAPSIM_SOURCE_DIR) +
                                         "/data/programs/static_weight_copied_input.jsonl");
  REQUIRE(run.ok());
  CHECK(run->simulated);
  const std::vector<Explanation> all = explain(*run, std::nullopt);
  REQUIRE(all.size() >= 2);
  CHECK(all[1].event == "copy_in");
  CHECK(all[1].inputs == std::vector<std::string>{"x"});
  CHECK(all[1].line == 0);
}

TEST_CASE("explain: a recorded PyTorch capture cites the cache-miss rule its message names") {
  Result<ObservedRun> run = observe_file(kCorpus + "/torch/2.11.0/custom_function_redefined.jsonl");
  REQUIRE(run.ok());
  const std::vector<Explanation> all = explain(*run, std::nullopt);
  REQUIRE(all.size() == 3);
  CHECK(all[0].event == "ca_graph:first");
  CHECK(all[0].title == "compiled autograd captured its first graph");
  // The class made anew each step: the same miss recurs, so its fix applies.
  CHECK(all[1].title == "compiled autograd: a new graph");
  CHECK(all[1].what.find("ScaledByBackward") != std::string::npos);
  CHECK(all[1].fix.find("155105") != std::string::npos);
  const std::vector<FoldedExplanation> folded = fold_explanations(all);
  CHECK(folded.size() == 3);  // the two recaptures name different backwards
}

// Each recapture of a recorded run gets the rule of its cause: a grad that
// went from None to kept, a size that changed, another backward that later
// backwards reuse (a double backward's graph).
TEST_CASE("explain: a recorded recapture names its cause") {
  const auto rule_of_backward_1 = [](const std::string& file) {
    Result<ObservedRun> run = observe_file(kCorpus + "/torch/2.11.0/" + file);
    REQUIRE(run.ok());
    const std::vector<Explanation> all = explain(*run, std::nullopt);
    REQUIRE(all.size() >= 2);
    CHECK(all[0].event == "ca_graph:first");
    return all[1].title;
  };
  CHECK(rule_of_backward_1("zero_grad_keep.jsonl") == "compiled autograd: a grad's state changed");
  CHECK(rule_of_backward_1("static_shapes.jsonl") == "compiled autograd: changed sizes");
  CHECK(rule_of_backward_1("create_graph_double_backward.jsonl") ==
        "compiled autograd: another backward, captured once");
}

// dcgan (data/third_party/): as on a GPU, a read of the generator's output
// meets E1; the call that raised bound nothing, so the simulation stops at
// the first action that needs it, and says where a GPU run stops.
TEST_CASE("explain: as on a GPU, the simulation stops where an error left a name unmade") {
  Result<ObservedRun> run = observe_file(std::string(CAPSIM_SOURCE_DIR) +
                                         "/data/third_party/2.11.0/dcgan.compiled.jsonl");
  REQUIRE(run.ok());
  Result<ObservedRun> gpu = as_on_a_gpu(*run);
  REQUIRE_MESSAGE(gpu.ok(), gpu.error().message);
  REQUIRE(gpu->error_at.has_value());
  REQUIRE(gpu->stopped_at.has_value());
  CHECK(*gpu->error_at < *gpu->stopped_at);
  CHECK(*gpu->stopped_at < gpu->actions.size());
  CHECK(gpu->events.back().action <= *gpu->stopped_at);
  // A run without errors runs to its end.
  Result<ObservedRun> mnist = observe_file(std::string(CAPSIM_SOURCE_DIR) +
                                           "/data/third_party/2.11.0/mnist.compiled.jsonl");
  REQUIRE(mnist.ok());
  Result<ObservedRun> mnist_gpu = as_on_a_gpu(*mnist);
  REQUIRE(mnist_gpu.ok());
  CHECK_FALSE(mnist_gpu->stopped_at.has_value());
}

// mnist's test pass runs one batch: its inference graph is called once, so
// as on a GPU it only warms up. Every graph of the trace is explained: fwd0
// and bwd0 by their recordings, inf1 by its warmups; a function that records
// later is not.
TEST_CASE("explain: a function that only warmed up is explained once") {
  Result<ObservedRun> mnist = observe_file(std::string(CAPSIM_SOURCE_DIR) +
                                           "/data/third_party/2.11.0/mnist.compiled.jsonl");
  REQUIRE(mnist.ok());
  Result<ObservedRun> gpu = as_on_a_gpu(*mnist);
  REQUIRE(gpu.ok());
  std::vector<std::string> seen;
  for (const Explanation& e : explain(*gpu, std::nullopt)) {
    seen.push_back(e.function + " " + e.event);
    if (e.event == "warmup:never_recorded") {
      CHECK(e.what.find("'inf1' was called once and ran as a warmup") != std::string::npos);
      CHECK(e.fix.find("skip_cudagraph_warmup") != std::string::npos);
    }
  }
  CHECK(seen == std::vector<std::string>{"fwd0 record:no_child", "bwd0 record:no_child",
                                         "inf1 warmup:never_recorded"});
}

// dcgan's plain form as on a GPU: each capture is explained once, in
// PyTorch's recorded words (key size 39, not the simulation's own count), by
// its cause: the first, a grad's state, another backward of the GAN's step.
TEST_CASE("explain: as on a GPU, compiled autograd's captures quote PyTorch's words") {
  Result<ObservedRun> run =
      observe_file(std::string(CAPSIM_SOURCE_DIR) + "/data/third_party/2.11.0/dcgan.plain.jsonl");
  REQUIRE(run.ok());
  Result<ObservedRun> gpu = as_on_a_gpu(*run);
  REQUIRE_MESSAGE(gpu.ok(), gpu.error().message);
  std::vector<std::string> titles;
  for (const Explanation& e : explain(*gpu, std::nullopt)) {
    if (e.event.starts_with("ca_")) titles.push_back(e.title);
    CHECK(e.event.find("ca_cache_miss") == std::string::npos);
  }
  REQUIRE(titles.size() == 3);
  CHECK(titles[0] == "compiled autograd captured its first graph");
  CHECK(titles[1] == "compiled autograd: a grad's state changed");
  CHECK(titles[2] == "compiled autograd: another backward, captured once");
  const std::vector<Explanation> all = explain(*gpu, std::nullopt);
  CHECK(all[0].what.find("key size 39") != std::string::npos);
}

TEST_CASE("explain: identical paragraphs fold into one, with the others' actions") {
  Explanation a;
  a.action = 3;
  a.event = "record:no_child";
  a.what = "the same";
  Explanation b = a;
  b.action = 9;
  b.line = 40;
  Explanation c = a;
  c.action = 12;
  c.what = "another";
  const std::vector<FoldedExplanation> folded = fold_explanations({a, b, c});
  REQUIRE(folded.size() == 2);
  CHECK(folded[0].first.action == 3);
  CHECK(folded[0].again == std::vector<std::size_t>{9});
  CHECK(folded[1].again.empty());
  CHECK(folded_explanation_text(folded[0]).find("again:  1 more time, the same, at action 9") !=
        std::string::npos);
  CHECK(folded_explanation_text(folded[1]).find("again") == std::string::npos);
}

const std::string kPrograms = std::string(CAPSIM_SOURCE_DIR) + "/data/programs";

TEST_CASE("explain: guard=True guards the object: .data re-records, a new tensor recompiles") {
  Result<ObservedRun> run = observe_file(kPrograms + "/guarded_static_data_reassigned.jsonl");
  REQUIRE(run.ok());
  std::vector<std::pair<std::size_t, std::string>> decisions;
  for (const Explanation& e : explain(*run, std::nullopt))
    decisions.emplace_back(e.action, e.event);
  const auto has = [&](std::size_t action, const std::string& event) {
    return std::find(decisions.begin(), decisions.end(), std::pair{action, event}) !=
           decisions.end();
  };
  CHECK(has(6, "record:static_input_idx_mismatch"));  // y.data = new: the same object
  CHECK_FALSE(has(6, "compile:guard_failure"));
  CHECK(has(9, "compile:guard_failure"));  // another tensor bound to y
}

TEST_CASE("what-if: marking a persistent buffer static removes its copies, nothing else") {
  Result<ObservedRun> run = observe_file(kPrograms + "/persistent_buffer_copied.jsonl");
  REQUIRE(run.ok());
  Result<WhatIf> w = what_if(*run, "mark-static=state");
  REQUIRE(w.ok());
  CHECK(w->before.copies == 2);
  CHECK(w->before.copy_bytes == 512);
  CHECK(w->after.copies == 0);
  CHECK(w->after.rerecorded == 0);
  CHECK(w->after.replays == w->before.replays);
  Result<std::vector<WhatIf>> ranked = auto_better(*run);
  REQUIRE(ranked.ok());
  REQUIRE(ranked->size() == 1);
  CHECK(ranked->front().edit == "mark-static=state");
}

TEST_CASE("what-if: a tensor bound anew every step, marked static, re-records instead") {
  Result<ObservedRun> run = observe_file(kPrograms + "/static_weight_copied_input.jsonl");
  REQUIRE(run.ok());
  Result<WhatIf> w = what_if(*run, "mark-static=x");
  REQUIRE(w.ok());
  CHECK(w->after.copies == 0);
  CHECK(w->after.rerecorded == 1);
  // So auto, which ranks re-records before bytes, does not offer it.
  CHECK(auto_better(*run)->empty());
}

const std::string kCasebook = std::string(CAPSIM_SOURCE_DIR) + "/data/casebook";

TEST_CASE("what-if: cloning what an E1 touches ends the error, and auto finds it") {
  Result<ObservedRun> run = observe_file(kCasebook + "/issue_122192.jsonl");
  REQUIRE(run.ok());
  for (const std::string edit : {"clone=x", "clone=x@3"}) {
    INFO(edit);
    Result<WhatIf> w = what_if(*run, edit);
    REQUIRE(w.ok());
    CHECK(w->before.errors == 1);
    CHECK(w->after.errors == 0);
  }
  // Cloned after the first call only: the second call's output still dies.
  CHECK(what_if(*run, "clone=x@2")->after.errors == 1);
  // A detach shares the storage, so the output is overwritten all the same.
  CHECK(what_if(*run, "detach=x")->after.errors == 1);
  Result<std::vector<WhatIf>> ranked = auto_better(*run);
  REQUIRE(ranked.ok());
  REQUIRE(!ranked->empty());
  CHECK(ranked->front().edit == "clone=x");
}

TEST_CASE("what-if: a clone that ends W1 is worth the copies it adds (#138949)") {
  Result<ObservedRun> run = observe_file(kCasebook + "/issue_138949.jsonl");
  REQUIRE(run.ok());
  Result<std::vector<WhatIf>> ranked = auto_better(*run);
  REQUIRE(ranked.ok());
  REQUIRE(!ranked->empty());
  const WhatIf& best = ranked->front();
  CHECK(best.edit == "clone=obs");
  CHECK(best.before.warnings == 1);
  CHECK(best.after.warnings == 0);
  CHECK(best.after.replays > 0);
  CHECK(best.after.copy_bytes > best.before.copy_bytes);
}

TEST_CASE("what-if: a detach cuts the autograd graph, so backward of it raises G1") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "capsim-test-what-if-detach.jsonl";
  {
    std::ofstream out(path);
    out << R"({"type":"header","name":"detach"})"
           "\n"
        << R"({"type":"function","function":"sq","mode":"inference","inputs":["a"],)"
           R"("ops":[{"op":"mul","args":[0,0]},{"op":"sum","args":[1]}],"outputs":[2]})"
           "\n"
        << R"({"type":"action","action":"new_tensor","name":"w","sizes":[3],"requires_grad":true})"
           "\n"
        << R"({"type":"action","action":"eager_call","function":"sq","args":["w"],"outputs":["y"]})"
           "\n"
        << R"({"type":"action","action":"backward","tensor":"y"})"
           "\n";
  }
  Result<ObservedRun> run = observe_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(run.ok());
  Result<WhatIf> detached = what_if(*run, "detach=y@1");
  REQUIRE(detached.ok());
  CHECK(detached->before.errors == 0);
  CHECK(detached->after.errors == 1);
  // A clone records CloneBackward: the graph stays, and the backward runs.
  CHECK(what_if(*run, "clone=y@1")->after.errors == 0);
}

TEST_CASE("explain: a compiled optimizer step whose grads are not static names them") {
  Result<ObservedRun> run =
      observe_file(kCorpus + "/torch/2.11.0/launcher_compiled_optimizer.jsonl");
  REQUIRE(run.ok());
  CHECK_FALSE(run->header.config.cudagraphs);  // recorded on a CPU
  std::vector<Explanation> steps;
  for (Explanation& e : explain(*run, std::nullopt)) {
    if (e.event == "compile:grads_not_static") steps.push_back(std::move(e));
  }
  // Adam's grads are not marked; SGD's are (head_weight.grad, head_bias.grad).
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].function == "opt.step");
  CHECK(steps[0].inputs == std::vector<std::string>{"model_0_weight.grad", "model_0_bias.grad",
                                                    "model_2_weight.grad", "model_2_bias.grad"});
  CHECK(steps[0].what.find("(196 bytes per step)") != std::string::npos);

  // The what-if asks what a GPU would do. The script dies at SGD's second
  // step (E1: its momentum buffers were made inside the first step's graph),
  // before any replay copies, as a real run would ...
  const std::string all =
      "mark-static=model_0_weight.grad,model_0_bias.grad,"
      "model_2_weight.grad,model_2_bias.grad";
  Result<WhatIf> died = what_if(*run, all);
  REQUIRE(died.ok());
  CHECK(died->as_on_a_gpu);
  CHECK(died->before.errors == 1);
  CHECK(died->before.copy_bytes == 0);
  // ... so the copies show past the error: marking all four ends them.
  Result<WhatIf> w = what_if(*run, all, kKeepGoing);
  REQUIRE(w.ok());
  CHECK(w->before.copy_bytes == 196);
  CHECK(w->after.copies == 0);
  CHECK(w->after.rerecorded == 0);
  Result<std::vector<WhatIf>> ranked = auto_better(*run, {}, kKeepGoing);
  REQUIRE(ranked.ok());
  REQUIRE(!ranked->empty());
  CHECK(ranked->front().edit == all);
  // With CUDA graphs off, as recorded, nothing is copied to save.
  Result<WhatIf> off = what_if(*run, "config cudagraphs=false");
  REQUIRE(off.ok());
  CHECK(off->after.copies == 0);
  CHECK(off->after.recorded == 0);
}

TEST_CASE("explain: a run recorded without CUDA graphs is explained as on a GPU") {
  Result<ObservedRun> run = observe_file(kCorpus + "/torch/2.11.0/launcher_reduce_overhead.jsonl");
  REQUIRE(run.ok());
  CHECK_FALSE(run->header.config.cudagraphs);  // recorded on a CPU: nothing to explain
  CHECK(explain(*run, std::nullopt).empty());
  Result<ObservedRun> gpu = as_on_a_gpu(*run);
  REQUIRE(gpu.ok());
  CHECK(gpu->as_on_a_gpu);
  CHECK_FALSE(gpu->header.config.cudagraphs);  // the header still says how the run went
  std::vector<std::string> seen;
  for (const Explanation& e : explain(*gpu, std::nullopt)) {
    seen.push_back(fmt::format("{}@{} {}", e.event, e.action, fmt::join(e.inputs, ",")));
  }
  // The forward and the backward record at the second step; each replay
  // copies the step's fresh inputs (x and y, then the loss's grad); the
  // predictions kept and read at the end were overwritten but the last, and
  // the first read of one raises: the script dies there. The two evaluation
  // graphs only ever warm up.
  INFO(fmt::format("{}", fmt::join(seen, " | ")));
  CHECK(seen == std::vector<std::string>{"record:no_child@24 t3,t4", "record:no_child@29 t5",
                                         "copy_in@42 t3,t4", "copy_in@47 t5",
                                         "warmup:never_recorded@59 ", "warmup:never_recorded@65 ",
                                         "error:E1@67 "});
  CHECK(gpu->error_at == 67u);
  CHECK(gpu->stop == RunStop::kRaise);
  CHECK(gpu->stopped_at == 68u);
  // Kept going, the second read raises too, beyond a real run.
  Result<ObservedRun> on = as_on_a_gpu(*run, kKeepGoing);
  REQUIRE(on.ok());
  const std::vector<Explanation> all = explain(*on, std::nullopt);
  REQUIRE(all.size() == seen.size() + 1);
  CHECK_FALSE(all[all.size() - 2].beyond_real_run);
  CHECK(all.back().event == "error:E1");
  CHECK(all.back().beyond_real_run);
  CHECK(all.back().title.find("(beyond a real run, which dies at action 67)") != std::string::npos);
}

TEST_CASE("what-if auto: outputs kept across steps are cloned together") {
  Result<ObservedRun> run = observe_file(kCorpus + "/torch/2.11.0/launcher_reduce_overhead.jsonl");
  REQUIRE(run.ok());
  Result<std::vector<WhatIf>> ranked = auto_better(*run);
  REQUIRE(ranked.ok());
  REQUIRE(ranked->size() == 2);
  // The run dies at the first read of a kept output (67). Both clones
  // together end every E1 and rank first; a clone of the first read's output
  // alone moves the death to the second read (a later death is still
  // better); a clone of the second's alone leaves the run dying at the first.
  CHECK(ranked->front().edit == "clone=inf1_7_0,inf2_8_0");
  CHECK(ranked->front().before.errors == 1);
  CHECK(ranked->front().before.died_at == 67u);
  CHECK(ranked->front().after.errors == 0);
  CHECK_FALSE(ranked->front().after.died_at.has_value());
  CHECK((*ranked)[1].edit == "clone=inf1_7_0");
  CHECK((*ranked)[1].after.errors == 1);
  CHECK((*ranked)[1].after.died_at == 69u);  // the clone's action comes before it
  Result<std::vector<WhatIf>> kept = auto_better(*run, {}, kKeepGoing);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 3);  // kept going, each clone ends one E1 of two
  CHECK(kept->front().before.errors == 2);
  Result<WhatIf> placed = what_if(*run, "clone=inf1_7_0,inf2_8_0@67");
  REQUIRE_FALSE(placed.ok());
  CHECK(placed.error().message ==
        "field '--what-if': 'clone=inf1_7_0,inf2_8_0@67': '@N' applies to one name; leave it "
        "out to rebind several");
  CHECK(what_if(*run, "clone=inf1_7_0,,inf2_8_0").error().message ==
        "field '--what-if': 'clone=inf1_7_0,,inf2_8_0': expected a tensor's name between commas");
  CHECK(what_if(*run, "clone=inf1_7_0,nope").error().message ==
        "field '--what-if': 'clone=inf1_7_0,nope': no action binds a tensor named 'nope'");
}

TEST_CASE("what-if auto: a run without CUDA graphs takes its edits from the GPU simulation") {
  // persistent_buffer_copied, run without CUDA graphs: it copies nothing,
  // but as on a GPU its buffer is copied at every replay.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "capsim_test_cpu_buffer.jsonl";
  {
    std::ifstream in(kPrograms + "/persistent_buffer_copied.jsonl");
    std::ofstream out(path);
    std::string line;
    std::getline(in, line);
    out << R"({"type":"header","name":"cpu_buffer","config":{"cudagraphs":false}})"
        << "\n";
    while (std::getline(in, line)) out << line << "\n";
  }
  Result<ObservedRun> run = observe_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(run.ok());
  CHECK(std::none_of(run->events.begin(), run->events.end(),
                     [](const Event& e) { return e.kind == EventKind::kCopyIn; }));
  Result<std::vector<WhatIf>> ranked = auto_better(*run);
  REQUIRE(ranked.ok());
  REQUIRE(ranked->size() == 1);
  CHECK(ranked->front().edit == "mark-static=state");
  CHECK(ranked->front().as_on_a_gpu);
  CHECK(ranked->front().after.copies == 0);
}

// A program whose one large tensor turns values off (auto) is explained with
// values off; each edit must run so too. Before, what-ifs ran with values on:
// `--what-if mark-static=state` failed at the values limit (exit 2) and auto
// dropped the edit and answered that nothing improves the run.
TEST_CASE("what-if: edits run as the original did (values off, auto), and none is dropped") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "capsim_test_large_unused.jsonl";
  {
    std::ifstream in(kPrograms + "/persistent_buffer_copied.jsonl");
    std::ofstream out(path);
    std::string line;
    for (int header_and_function = 0; header_and_function < 2; ++header_and_function) {
      std::getline(in, line);
      out << line << "\n";
    }
    out << R"({"type":"action","action":"new_tensor","name":"unused","sizes":[33554432]})"
        << "\n";
    while (std::getline(in, line)) out << line << "\n";
  }
  Result<ObservedRun> run = observe_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(run.ok());
  Result<WhatIf> w = what_if(*run, "mark-static=state");
  REQUIRE(w.ok());
  CHECK_FALSE(w->refused);
  CHECK(w->outcome == WhatIfOutcome::kImproved);
  CHECK(w->before.copies == 2);
  CHECK(w->after.copies == 0);
  Result<std::vector<WhatIf>> all = what_if_auto(*run);
  REQUIRE(all.ok());
  REQUIRE(!all->empty());
  CHECK(all->front().edit == "mark-static=state");
  CHECK(all->front().outcome == WhatIfOutcome::kImproved);
  // Values on, as asked: the original itself cannot run, an error.
  ProgramRunOptions on;
  on.values = ValuesMode::kOn;
  Result<WhatIf> refused = what_if(*run, "mark-static=state", on);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("the limit for one tensor with values on") !=
        std::string::npos);
}

TEST_CASE("what-if auto: every edit tried is reported, the worse and the refused too") {
  Result<ObservedRun> run = observe_file(kPrograms + "/static_weight_copied_input.jsonl");
  REQUIRE(run.ok());
  Result<std::vector<WhatIf>> all = what_if_auto(*run);
  REQUIRE(all.ok());
  // mark-static=x ends the copies but re-records: worse, and reported so.
  const auto x = std::find_if(all->begin(), all->end(),
                              [](const WhatIf& w) { return w.edit == "mark-static=x"; });
  REQUIRE(x != all->end());
  CHECK(x->outcome == WhatIfOutcome::kWorse);
  CHECK(what_if_text(*x).starts_with("what-if mark-static=x: worse: "));
  CHECK(what_if_json(*x)["outcome"] == "worse");
  // An edit whose program cannot run says so, with why, in every form.
  WhatIf refused = *x;
  refused.refused = "the edited program: action 3: out of simulated device memory";
  refused.outcome = WhatIfOutcome::kNotSimulated;
  CHECK(what_if_text(refused) ==
        "what-if mark-static=x: could not be simulated: the edited program: action 3: out of "
        "simulated device memory");
  CHECK(what_if_json(refused)["outcome"] == "could not be simulated");
  CHECK_FALSE(what_if_json(refused).contains("after"));
}

TEST_CASE("what-if: bad edits name the field") {
  Result<ObservedRun> run = observe_file(kPrograms + "/static_weight_copied_input.jsonl");
  REQUIRE(run.ok());
  for (const auto& [edit, why] : std::vector<std::pair<std::string, std::string>>{
           {"mark-static=nope", "no action binds a tensor named 'nope'"},
           {"mark-static=x,", "expected a tensor's name between commas"},
           {"mark-static=x,nope", "no action binds a tensor named 'nope'"},
           {"mark-step-begin@99", "action 99 is past the last action (6)"},
           {"config bogus=1", "field 'config.bogus'"},
           {"torch=1.0", "no torch profile"},
           {"set-to-none=false", "no zero_grad(set_to_none=True)"},
           {"clone=nope", "no action binds a tensor named 'nope'"},
           {"clone=x@0", "no action at or before 0 binds a tensor named 'x'"},
           {"detach=x@99", "action 99 is past the last action (6)"},
           {"detach=x@", "expected an action index"},
           {"clone=w.grad", "not a .grad"},
           {"frobnicate", "unknown edit"}}) {
    Result<WhatIf> w = what_if(*run, edit);
    INFO(edit);
    REQUIRE(!w.ok());
    CHECK(w.error().message.find("field '--what-if'") != std::string::npos);
    CHECK(w.error().message.find(why) != std::string::npos);
  }
}

}  // namespace
}  // namespace capsim
