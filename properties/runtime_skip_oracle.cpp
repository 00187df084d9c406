// The run-time skip oracle (runtime_skip_oracle.hpp): docs/cudagraph-trees.md
// §2.3 steps 3, 4 and 7 (the mutation gate, the early exits, the re-record
// path), §4 and §4.1, each condition as the doc words it, each release by
// name as the "Version profiles" table gives it. Deliberately independent
// of sim/trees/: nothing here calls the World or reads a profile switch.
#include "properties/runtime_skip_oracle.hpp"

#include <algorithm>
#include <optional>

#include "properties/skip_oracle.hpp"

namespace capsim {

namespace {

// §2.5: "cudagraph_or_error (2.9 on): ... raises a RuntimeError after it has
// logged"; "the mutation gate and E5 raise once" (§4.1: so does E9).
bool raises(const CudagraphConfig& c) {
  return c.cudagraph_or_error && c.torch_profile >= TorchProfile::k2_9;
}

// "Version profiles": inline_inbuilt_nn_modules "as set" up to 2.11, "always
// True" from 2.12.
bool inlining(const CudagraphConfig& c) {
  return c.torch_profile >= TorchProfile::k2_12 || c.inline_inbuilt_nn_modules;
}

// "the re-record limit (exceed_rerecord_limit) applies": classic to 2.11
// "only with inline_inbuilt_nn_modules=False", 2.12 "never", 2.13 on
// "always".
bool rerecord_limit_applies(const CudagraphConfig& c) {
  if (c.torch_profile == TorchProfile::k2_12) return false;
  return c.torch_profile >= TorchProfile::k2_13 || !inlining(c);
}

// "failed sibling checks that count toward it": "static and managed
// pointers" up to 2.11 (2.12: "counted, never enforced"); from 2.13
// "managed pointers and live outputs expected dead; not static pointers".
bool static_mismatch_counts(const CudagraphConfig& c) {
  return c.torch_profile <= TorchProfile::k2_12;
}

// "managed-input demotion (cudagraph_managed_input_rerecord_limit=5,
// _action="copy" or "skip")": 2.15 only.
std::optional<std::int64_t> managed_limit(const CudagraphConfig& c) {
  if (c.torch_profile != TorchProfile::k2_15) return std::nullopt;
  return c.cudagraph_managed_input_rerecord_limit;
}

RuntimeVerdict none(std::string why) {
  return RuntimeVerdict{RuntimeVerdict::Kind::kNone, {}, {}, false, false, std::move(why)};
}

RuntimeVerdict logged(Decision id, Decision reason, std::string why, const CudagraphConfig& c) {
  return RuntimeVerdict{
      RuntimeVerdict::Kind::kLogged, id, reason, raises(c), false, std::move(why)};
}

RuntimeVerdict silent(Decision reason, std::string why) {
  return RuntimeVerdict{RuntimeVerdict::Kind::kSilent, {}, reason, false, false, std::move(why)};
}

// Whether an output of `def` is input `i` or a view of it.
bool output_aliases(const FunctionDef& def, std::uint32_t i) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  for (ValueIndex v : def.outputs) {
    while (v >= n && body_op_is_view(def.ops[v - n].kind)) v = def.ops[v - n].args.at(0);
    if (v == i) return true;
  }
  return false;
}

// §2.3 step 3, invariant 17: a call runs eagerly when g "mutates an input
// that is neither in its static set nor a cudagraph-recorded tensor of the
// current path"; S1 is logged "once per FunctionID" (the first such call),
// every such call runs eagerly (`eager reason=mutated_inputs`).
bool gate_blocks(const FunctionDef& g, const RuntimeCall& c, const CudagraphConfig& config) {
  for (std::uint32_t i : written_inputs(g)) {
    if (static_input(g, i, config)) continue;
    const bool managed = i == 0 && c.row.has_value();  // a row of src's output on the path
    if (!managed) return true;
  }
  return false;
}

// One recording of g under src's graph: the row its managed-pointer check
// wants (none: a is copied in, a fresh tensor's placeholder or a demoted
// input) and the param its static-pointer check wants.
struct Child {
  std::optional<std::uint32_t> checked_row;
  std::uint32_t param = 0;
};

// The edge (src's graph, g): its children in insertion order and its counts.
struct Edge {
  std::vector<Child> children;
  std::int64_t rerecords = 0;        // num_rerecord, once per call (§4)
  std::int64_t managed_changes = 0;  // the managed input's changes (§4.1)
  bool demoted = false;
  std::optional<Decision> dead;  // E5 or E9: every later call runs eagerly
  Decision dead_reason = Decision::kEagerRerecordLimit;
};

// Whether a copy may replace g's managed input 0 (§4.1: "the function
// mutates no input, the index is not a static input, and no output of that
// recording aliases the input").
bool demotable(const FunctionDef& g, const CudagraphConfig& config) {
  return written_inputs(g).empty() && !static_input(g, 0, config) && !output_aliases(g, 0);
}

// §2.3 step 7 and §4.1 on the re-record path: no child passed its checks.
RuntimeVerdict rerecord(const RuntimeCall& c, bool counted, bool can_demote,
                        const CudagraphConfig& config, Edge& e) {
  RuntimeVerdict v = none("re-records under src's graph");
  const Child& newest = e.children.back();
  const std::optional<std::int64_t> limit = managed_limit(config);
  if (limit && can_demote && !e.demoted && newest.checked_row && c.row != newest.checked_row &&
      ++e.managed_changes >= *limit) {
    if (config.cudagraph_managed_input_rerecord_action == ManagedInputAction::kSkip) {
      e.dead = Decision::kSkipManagedInputLimit;
      e.dead_reason = Decision::kEagerManagedInputLimit;
      return logged(*e.dead, e.dead_reason, "the managed input's pointer changed up to the limit",
                    config);
    }
    e.demoted = true;
    v.demotes = true;
  }
  if (counted && rerecord_limit_applies(config) &&
      ++e.rerecords > config.cudagraph_unexpected_rerecord_limit) {
    e.dead = Decision::kSkipRerecordLimit;
    e.dead_reason = Decision::kEagerRerecordLimit;
    RuntimeVerdict l =
        logged(*e.dead, e.dead_reason, "the call crosses the re-record limit", config);
    l.demotes = v.demotes;
    return l;
  }
  e.children.push_back(Child{e.demoted ? std::nullopt : c.row, c.param});
  return v;
}

// The `step`-th call of g, every call after src: src warms up at the first,
// records a root at the second (g records under it, recording after
// recording), and replays from the third, so g's edge is (src's graph, g).
RuntimeVerdict edge_call(const RuntimeCall& c, std::size_t step, bool can_demote,
                         const CudagraphConfig& config, Edge& e) {
  if (step == 0) return none("warms up");
  if (step == 1) {
    e.children.push_back(Child{c.row, c.param});
    return none("records under src's recording");
  }
  // Step 4: "later calls for that (parent, fid) take the early exit silently".
  if (e.dead) return silent(e.dead_reason, decision_key(*e.dead) + " was logged before");
  // Step 7, §4: per child, the managed pointers, then the static ones
  // (re-record mode); the first child whose checks pass replays.
  bool counted = false;
  for (const Child& child : e.children) {
    if (child.checked_row && c.row != child.checked_row) {
      counted = true;  // CudagraphManagedIdxMismatch: counted in every release
      continue;
    }
    if (child.param != c.param) {
      counted = counted || static_mismatch_counts(config);  // StaticInputIdxMismatch
      continue;
    }
    return none("replays a child");
  }
  return rerecord(c, counted, can_demote, config, e);
}

}  // namespace

std::vector<RuntimeVerdict> documented_runtime_skips(const RuntimeProgram& program) {
  const FunctionDef& g = runtime_g(program);
  const CudagraphConfig& config = program.config;
  std::vector<RuntimeVerdict> out;
  if (documented_skip(g, false, config).kind != SkipVerdict::Kind::kNone) {
    for (std::size_t k = 0; k < program.calls.size(); ++k) {
      out.push_back(
          {RuntimeVerdict::Kind::kCompileTime, {}, {}, false, false, "skipped at compile"});
    }
    return out;
  }
  const bool edge = std::all_of(program.calls.begin(), program.calls.end(),
                                [](const RuntimeCall& c) { return c.after_src; });
  const bool can_demote = demotable(g, config);
  bool s1_logged = false;
  Edge e;
  for (std::size_t k = 0; k < program.calls.size(); ++k) {
    const RuntimeCall& c = program.calls[k];
    if (gate_blocks(g, c, config)) {
      const bool first = !std::exchange(s1_logged, true);
      out.push_back(
          first ? logged(Decision::kSkipMutatedInputs, Decision::kEagerMutatedInputs,
                         "g writes a plain input", config)
                : silent(Decision::kEagerMutatedInputs, "g writes a plain input; S1 was logged"));
      continue;
    }
    // Without src in every step, the lowering set both limits past the calls.
    out.push_back(edge ? edge_call(c, k, can_demote, config, e) : none("no limit within reach"));
  }
  return out;
}

}  // namespace capsim
