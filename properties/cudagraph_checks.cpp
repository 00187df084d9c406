// The cudagraph-tree property checks (see cudagraph_checks.hpp).
#include "properties/cudagraph_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "sim/core/decisions.hpp"

namespace capsim {

namespace {

const IntList& list_of(const Event& e, FieldKey key) {
  static const IntList kEmpty;
  const IntList* v = e.get_if<IntList>(key);
  return v != nullptr ? *v : kEmpty;
}

std::string where(const Event& e) {
  return fmt::format("[{}]", format_event(e));
}

}  // namespace

std::unique_ptr<World> run_generated(const GeneratedProgram& generated, WorldOptions options,
                                     Status& status) {
  std::size_t completed = 0;
  return run_generated(generated, std::move(options), status, completed);
}

std::unique_ptr<World> run_generated(const GeneratedProgram& generated, WorldOptions options,
                                     Status& status, std::size_t& completed) {
  options.seed = generated.seed;
  options.config.torch_profile = generated.torch_profile;
  apply_knobs(generated.knobs, generated.numel, options.config);
  auto world = std::make_unique<World>(options);
  completed = 0;
  status = world->run(generated.program, [&](std::size_t i) { completed = i + 1; });
  return world;
}

namespace {

// How one run ended: its status, the actions it completed, and whether a
// modelled PyTorch error came before the end.
struct RunEnding {
  Status status;
  std::size_t completed = 0;
  bool raised = false;
};

RunEnding ending_of(const World& world, Status status, std::size_t completed) {
  const std::vector<Event>& events = world.events();
  const bool raised = std::any_of(events.begin(), events.end(),
                                  [](const Event& e) { return e.kind == EventKind::kError; });
  return RunEnding{std::move(status), completed, raised};
}

CheckResult same_ending(const RunEnding& first, const RunEnding& second) {
  for (const RunEnding* r : {&first, &second}) {
    if (!r->status.ok() && !r->raised) return "bad input: " + r->status.error().message;
  }
  if (first.status.ok() && second.status.ok()) return std::nullopt;
  const auto text = [](const RunEnding& r) {
    return r.status.ok()
               ? std::string("ran to the end")
               : fmt::format("failed after {} actions: {}", r.completed, r.status.error().message);
  };
  if (first.status.ok() != second.status.ok() || first.completed != second.completed ||
      first.status.error().message != second.status.error().message) {
    return fmt::format("the two runs end differently: {}; then {}", text(first), text(second));
  }
  return std::nullopt;
}

}  // namespace

TwoRuns run_twice(const GeneratedProgram& generated, const GeneratedProgram& again,
                  const WorldOptions& options) {
  TwoRuns runs;
  Status s1, s2;
  std::size_t n1 = 0, n2 = 0;
  runs.first = run_generated(generated, options, s1, n1);
  runs.second = run_generated(again, options, s2, n2);
  runs.ending = same_ending(ending_of(*runs.first, s1, n1), ending_of(*runs.second, s2, n2));
  runs.completed = n1;
  return runs;
}

CheckResult check_replays_match_eager(const World& world) {
  const Counters& c = world.counters();
  if (c.replay_mismatches == 0) return std::nullopt;
  if (c.first_replay_mismatch && *c.first_replay_mismatch < world.events().size()) {
    return fmt::format("{} of {} replays differ from eager, first {}", c.replay_mismatches,
                       c.replay_checks, where(world.events()[*c.first_replay_mismatch]));
  }
  return fmt::format("{} of {} replays differ from eager", c.replay_mismatches, c.replay_checks);
}

CheckResult check_static_inputs_stable(const World& world) {
  const std::uint64_t v = world.counters().static_violations;
  if (v == 0) return std::nullopt;
  return fmt::format("{} replays read a static input that was freed or moved since recording", v);
}

namespace {

const Segment* piece_of(const World& world, const Event& e) {
  if (!e.has(F::fid)) return nullptr;
  return world.partition_piece(static_cast<FunctionId>(e.count(F::fid)),
                               e.text(F::function).value_or(""));
}

// What the generator knows of each input of the recording `e` made: the
// call's own knowledge, or for a graph partition the knowledge of the graph
// input each partition input is (none for one the code between partitions
// made).
std::vector<ArgKnowledge> recording_knowledge(const World& world, const Event& e,
                                              const GeneratedProgram& generated) {
  const std::vector<ArgKnowledge>& know = generated.knowledge.at(e.action);
  const Segment* piece = piece_of(world, e);
  if (piece == nullptr) return know;
  std::vector<ArgKnowledge> out;
  for (ValueIndex v : piece->inputs)
    out.push_back(v < know.size() ? know[v] : ArgKnowledge::kUnknown);
  return out;
}

// What check_copies learns from the recordings, for the copy-ins after them.
struct CopyLedger {
  std::map<std::uint64_t, IntList> copied;  // graph -> input_copy_idxs
  std::set<std::uint64_t> pieces;           // graphs of partitions: inputs of other sizes
};

// A recording: the inputs it copies (PyTorch's input_copy_idxs: the
// non-static inputs and, from 2.15, the managed inputs demoted to copies),
// against the generator's own view of which inputs the program made static
// (none for a saved regression, which is a program without it).
CheckResult check_recording_copies(const World& world, const Event& e,
                                   const GeneratedProgram& generated, CopyLedger& ledger) {
  // `static` and `non_static` partition the inputs; the demoted managed
  // ones are in `static` too (as in PyTorch) and copied all the same.
  const IntList& statics = list_of(e, F::static_);
  const IntList& non_static = list_of(e, F::non_static);
  IntList copied = non_static;
  const IntList& demoted = list_of(e, F::copied_managed);
  copied.insert(copied.end(), demoted.begin(), demoted.end());
  std::sort(copied.begin(), copied.end());
  ledger.copied[e.count(F::graph)] = copied;
  if (piece_of(world, e) != nullptr) ledger.pieces.insert(e.count(F::graph));
  if (generated.knowledge.empty()) return std::nullopt;
  const std::vector<ArgKnowledge> know = recording_knowledge(world, e, generated);
  if (statics.size() + non_static.size() != know.size()) {
    return fmt::format("recording has {} inputs, the call passed {} {}",
                       statics.size() + non_static.size(), know.size(), where(e));
  }
  for (std::uint32_t i = 0; i < know.size(); ++i) {
    const bool is_copied = std::count(copied.begin(), copied.end(), std::int64_t{i}) != 0;
    if (know[i] == ArgKnowledge::kStatic && is_copied) {
      return fmt::format("input {} was made static by the program but is copied {}", i, where(e));
    }
    if (know[i] == ArgKnowledge::kNonStatic && !is_copied) {
      return fmt::format("input {} is a plain eager tensor but is not copied {}", i, where(e));
    }
  }
  return std::nullopt;
}

// A copy-in: as many copies as its recording's inputs to copy, of the bytes
// the program's tensors have, and as the tree manager's node says when the
// graph is one of the manager the World holds (`current_manager`).
CheckResult check_copy_in(const World& world, const Event& e, bool current_manager,
                          const GeneratedProgram& generated, const CopyLedger& ledger) {
  const std::uint64_t graph = e.count(F::graph);
  const std::uint64_t copies = e.count(F::copies);
  auto it = ledger.copied.find(graph);
  if (it == ledger.copied.end()) return fmt::format("copy-in for an unrecorded graph {}", where(e));
  if (copies != it->second.size()) {
    return fmt::format("{} copies, the recording has {} non-static inputs {}", copies,
                       it->second.size(), where(e));
  }
  const std::uint64_t bytes =
      copies * static_cast<std::uint64_t>(generated.numel_of(e.action)) * kElementBytes;
  if (generated.numel != 0 && ledger.pieces.count(graph) == 0 && e.count(F::bytes) != bytes) {
    return fmt::format("{} bytes copied, {} expected {}", e.count(F::bytes), bytes, where(e));
  }
  if (const TreeManager* m = world.manager(); m != nullptr && current_manager &&
                                              graph < m->graphs().size() &&
                                              copies != m->graphs()[graph].input_copy_idxs.size()) {
    return fmt::format("{} copies, node {} has {} inputs to copy {}", copies, graph,
                       m->graphs()[graph].input_copy_idxs.size(), where(e));
  }
  return std::nullopt;
}

}  // namespace

CheckResult check_copies(const World& world, const GeneratedProgram& generated) {
  CopyLedger ledger;
  std::size_t replays = 0, copy_ins = 0;
  // A shutdown ends a tree manager and the next one numbers its graphs from
  // 0 again: only copy-ins after the last shutdown are graphs of the manager
  // the World holds at the end.
  std::size_t last_shutdown = 0;
  for (std::size_t k = 0; k < world.events().size(); ++k) {
    if (world.events()[k].kind == EventKind::kShutdown) last_shutdown = k + 1;
  }
  for (std::size_t k = 0; k < world.events().size(); ++k) {
    const Event& e = world.events()[k];
    if (!e.has(F::graph)) continue;
    CheckResult wrong;
    if (e.kind == EventKind::kRecord) {
      wrong = check_recording_copies(world, e, generated, ledger);
    } else if (e.kind == EventKind::kReplay) {
      ++replays;
    } else if (e.kind == EventKind::kCopyIn) {
      ++copy_ins;
      wrong = check_copy_in(world, e, k >= last_shutdown, generated, ledger);
    }
    if (wrong) return wrong;
  }
  if (replays != copy_ins) {
    return fmt::format("{} replays but {} copy-ins", replays, copy_ins);
  }
  return std::nullopt;
}

CheckResult check_pool(const World& world) {
  for (const Event& e : world.events()) {
    if (const std::optional<Decision> d = decision_of(e);
        d == Decision::kErrorPoolMissingBlocks || d == Decision::kErrorPoolUntracked) {
      return fmt::format("pool check failed {}", where(e));
    }
    if (e.kind == EventKind::kCheckpoint && e.count(F::pool_blocks_after) != e.count(F::live)) {
      return fmt::format("checkpoint left {} blocks for {} live outputs {}",
                         e.count(F::pool_blocks_after), e.count(F::live), where(e));
    }
  }
  return std::nullopt;
}

CheckResult check_finalizer_releases(const World& world) {
  for (const Event& e : world.events()) {
    if (e.kind == EventKind::kOptimizer && e.text(F::what) == "dropped" &&
        e.count(F::state_alive) != 0) {
      return fmt::format("{} state buffers outlive their optimizer {}", e.count(F::state_alive),
                         where(e));
    }
  }
  return std::nullopt;
}

CheckResult check_optimizer_state_static(const World& world) {
  struct Live {
    std::uint64_t params = 0;
    std::map<std::int64_t, Address> state_ptrs;  // input index -> first recorded pointer
  };
  std::map<std::string, Live, std::less<>> optimizers;  // by step function name
  for (const Event& e : world.events()) {
    if (e.kind == EventKind::kOptimizer && e.text(F::what) == "created") {
      optimizers[fmt::format("{}.step", e.get<std::string>(F::name))] =
          Live{e.count(F::params), {}};
    } else if (e.kind == EventKind::kOptimizer && e.text(F::what) == "dropped") {
      optimizers.erase(fmt::format("{}.step", e.get<std::string>(F::name)));
    } else if (e.kind == EventKind::kRecord) {
      auto it = optimizers.find(e.get<std::string>(F::function));
      if (it == optimizers.end()) continue;
      const IntList& statics = list_of(e, F::static_);
      // Each pointer, in the order of `statics`.
      static const AddressList kNone;
      const AddressList* ptrs = e.get_if<AddressList>(F::static_ptrs);
      const AddressList& listed = ptrs != nullptr ? *ptrs : kNone;
      if (listed.size() != statics.size()) {
        return fmt::format("{} static inputs but {} pointers {}", statics.size(), listed.size(),
                           where(e));
      }
      const IntList& demoted = list_of(e, F::copied_managed);
      for (std::size_t k = 0; k < statics.size(); ++k) {
        // Params and grads may move; a demoted managed input is copied.
        if (statics[k] < 0 || static_cast<std::uint64_t>(statics[k]) < 2 * it->second.params ||
            std::count(demoted.begin(), demoted.end(), statics[k]) != 0) {
          continue;
        }
        auto [first, fresh] = it->second.state_ptrs.emplace(statics[k], listed[k]);
        if (!fresh && first->second != listed[k]) {
          return fmt::format("state input {} moved from {} to {} {}", statics[k],
                             hex(first->second), hex(listed[k]), where(e));
        }
      }
    }
  }
  return std::nullopt;
}

CheckResult check_same_events(const World& a, const World& b) {
  const auto& x = a.events();
  const auto& y = b.events();
  const std::size_t n = std::min(x.size(), y.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (!(x[i] == y[i])) {
      return fmt::format("event {} differs: [{}] vs [{}]", i, format_event(x[i]),
                         format_event(y[i]));
    }
  }
  if (x.size() != y.size()) return fmt::format("{} events vs {}", x.size(), y.size());
  return std::nullopt;
}

}  // namespace capsim
