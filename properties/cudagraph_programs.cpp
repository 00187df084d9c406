// Lowering of ProgramPlans to valid Programs: functions (cudagraph_function_lowering.cpp)
// and the actions that call them within the contract.
#include "properties/cudagraph_programs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "model/check.hpp"
#include "properties/cudagraph_function_lowering.hpp"
#include "properties/cudagraph_programs_newer.hpp"
#include "sim/core/function_builder.hpp"

namespace capsim {

namespace {

// The program being generated: its actions so far with their knowledge, and
// the counter that names the fresh tensors they make.
struct ProgramDraft {
  GeneratedProgram g;
  std::size_t next_fresh = 0;

  NewTensor tensor(std::string name, std::int64_t offset = 0,
                   std::int64_t numel = kDefaultNumel) const {
    NewTensor t;
    t.name = std::move(name);
    t.sizes = {numel == kDefaultNumel ? g.numel : numel};
    t.offset = offset;
    return t;
  }
  void add(Action a, std::vector<ArgKnowledge> k = {}, std::int64_t numel = kDefaultNumel) {
    g.program.actions.push_back(std::move(a));
    g.knowledge.push_back(std::move(k));
    g.numel_at.push_back(numel);
  }
  std::string fresh_eager(std::vector<std::string>& temps, std::int64_t offset = 0,
                          std::int64_t numel = kDefaultNumel) {
    const std::string name = fmt::format("x{}", next_fresh++);
    add(tensor(name, offset, numel));
    temps.push_back(name);
    return name;
  }
};

// The name of param `i` of a program of `params` params.
std::string param_name(std::uint32_t i, std::uint32_t params) {
  return fmt::format("p{}", i % params);
}

// The program's functions: the plan's first four, or a default one when it
// has none.
std::vector<LoweredFunction> lower_functions(const ProgramPlan& plan, std::uint32_t params,
                                             std::int64_t numel) {
  std::vector<LoweredFunction> functions;
  std::size_t index = 0;
  for (const FunctionPlan& fp : plan.functions) {
    if (functions.size() == 4) break;
    functions.push_back(lower_function(fp, index++, params, numel, plan.torch_profile));
  }
  if (functions.empty()) {
    functions.push_back(lower_function(FunctionPlan{}, 0, params, numel, plan.torch_profile));
  }
  return functions;
}

// The optimizer over the params `plan` masks in (p0 when it masks none).
CreateOptimizer make_optimizer(const OptimizerPlan& plan, std::uint32_t params) {
  CreateOptimizer c;
  c.name = "opt";
  c.kind = plan.kind;
  for (std::uint32_t i = 0; i < params; ++i) {
    if ((plan.param_mask >> i) & 1u) c.params.push_back(fmt::format("p{}", i));
  }
  if (c.params.empty()) c.params.push_back("p0");
  if (plan.momentum) c.sgd.momentum = 0.9f;
  return c;
}

// An unaligned static input is demoted when its function's key compiles,
// and the choice sticks for every later call of that key (and a guard
// failure compiles it afresh), so the generator only knows that such a slot
// may be either, in every call of the function.
void forget_demoted_slots(GeneratedProgram& g,
                          const std::vector<std::pair<std::size_t, std::size_t>>& call_functions,
                          const std::set<std::pair<std::size_t, std::size_t>>& demoted_slots) {
  for (const auto& [action, function] : call_functions) {
    for (std::size_t j = 0; j < g.knowledge[action].size(); ++j) {
      if (demoted_slots.count({function, j}) != 0) {
        g.knowledge[action][j] = ArgKnowledge::kUnknown;
      }
    }
  }
}

// Params, marked tensors and c0 are made up front, whether or not a call
// takes them. Those that nothing uses are dropped (with their mark_static
// and del), so that a shrunk counterexample shows only what matters.
void drop_unused_tensors(GeneratedProgram& g) {
  std::set<std::string> used;
  auto use = [&used](const std::vector<std::string>& names) {
    used.insert(names.begin(), names.end());
  };
  for (const Action& a : g.program.actions) {
    std::visit(
        [&](const auto& x) {
          using A = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<A, Call>) {
            use(x.args);
            use(x.outputs);
            use(x.consume);
          } else if constexpr (std::is_same_v<A, EagerCall>) {
            use(x.args);
            use(x.outputs);
          } else if constexpr (std::is_same_v<A, Read> || std::is_same_v<A, ReassignData>) {
            used.insert(x.name);
          } else if constexpr (std::is_same_v<A, AccumulateGrad>) {
            used.insert(x.param);
            used.insert(x.grad);
          } else if constexpr (std::is_same_v<A, CreateOptimizer>) {
            use(x.params);
          }
        },
        a);
  }
  auto unused = [&used](const Action& a) {
    return std::visit(
        [&](const auto& x) {
          using A = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<A, NewTensor> || std::is_same_v<A, MarkStatic> ||
                        std::is_same_v<A, Del>) {
            return used.count(x.name) == 0;
          }
          return false;
        },
        a);
  };
  std::vector<Action> actions;
  std::vector<std::vector<ArgKnowledge>> knowledge;
  std::vector<std::int64_t> numel_at;
  for (std::size_t i = 0; i < g.program.actions.size(); ++i) {
    if (unused(g.program.actions[i])) continue;
    actions.push_back(std::move(g.program.actions[i]));
    knowledge.push_back(std::move(g.knowledge[i]));
    numel_at.push_back(g.numel_at[i]);
  }
  g.program.actions = std::move(actions);
  g.knowledge = std::move(knowledge);
  g.numel_at = std::move(numel_at);
}

// The first call that takes one of `names`, if any.
std::optional<std::size_t> first_call_taking(const Program& program,
                                             const std::set<std::string>& names) {
  for (std::size_t i = 0; i < program.actions.size(); ++i) {
    if (const auto* c = std::get_if<Call>(&program.actions[i]);
        c != nullptr && std::any_of(c->args.begin(), c->args.end(),
                                    [&names](const auto& a) { return names.count(a) != 0; })) {
      return i;
    }
  }
  return std::nullopt;
}

// One optimizer.step(): a grad accumulated into each of `optimizer`'s params,
// the step over params, grads and state, then zero_grad as `step` plans.
// `stepped` says whether the optimizer has taken a step since it was made.
void lower_optimizer_step(ProgramDraft& d, const StepPlan& step, const OptimizerPlan& plan,
                          const CreateOptimizer& optimizer, bool& stepped) {
  const std::vector<std::string>& opt_params = optimizer.params;
  for (std::size_t i = 0; i < opt_params.size(); ++i) {
    const std::string g = fmt::format("g{}", d.next_fresh++);
    d.add(d.tensor(g));
    d.add(AccumulateGrad{opt_params[i], g});
    d.add(Del{g});
    if (step.mark_grads) d.add(MarkStatic{opt_params[i] + ".grad", false});
  }
  const std::size_t n = opt_params.size();
  // Adam's state exists from the first step; SGD's momentum buffer from the
  // second (the first step makes it), and never without momentum.
  std::size_t per = 3;
  if (plan.kind == OptimizerKind::kSgd) per = plan.momentum && stepped ? 1 : 0;
  stepped = true;
  std::vector<ArgKnowledge> know(n, ArgKnowledge::kStatic);
  know.insert(know.end(), n, ArgKnowledge::kUnknown);  // grads: marked or not
  know.insert(know.end(), n * per, ArgKnowledge::kStatic);
  d.add(OptimizerStep{"opt"}, know);
  ++d.g.optimizer_steps;
  if (step.zero_grad % 3 != 0) {
    ZeroGrad z;
    z.name = "opt";
    z.set_to_none = step.zero_grad % 3 == 1;
    d.add(z);
  }
}

// What the generator learns about tensor names as it lowers calls, which the
// knowledge of later slots depends on.
struct AliasFacts {
  std::set<std::pair<std::size_t, std::size_t>> demoted_slots;  // (function, slot)
  std::set<std::string> maybe_unaligned;  // names whose data pointer may be unaligned
  std::set<std::string> older_inputs;     // outputs passed on after their step
};

// A call's arguments, lowered slot by slot.
struct CallArgs {
  std::vector<std::string> names;
  std::vector<ArgKnowledge> know;
  std::vector<std::string> temps;  // made for this call, deleted after it
  bool may_raise = false;          // an input may be an overwritten output (E1)
};

// A mutating body gets params[base], params[base + 1], ...: pairwise
// distinct. The base is the pick of the first param slot.
std::uint32_t param_base(const LoweredFunction& f, const CallPlan& call) {
  for (std::size_t j = 0; j < f.slots.size(); ++j) {
    if (f.slots[j] == SlotKind::kParam) return j < call.args.size() ? call.args[j].pick : 0;
  }
  return 0;
}

// Chooses the arguments of one call within a step, slot by slot, from the
// tensors the program has so far; the tensors made for them go into `draft`.
struct CallArgLowering {
  ProgramDraft& draft;
  AliasFacts& facts;
  const std::vector<std::string>& marked;         // persistent marked tensors
  const std::vector<std::string>& older_outputs;  // kept outputs of earlier steps, alive
  const std::vector<std::string>& step_outputs;   // kept outputs of this step, sizes {numel}
  std::uint32_t params;

  void marked_arg(const LoweredFunction& f, std::size_t function_index, std::size_t j,
                  const ArgPlan& ap, std::uint32_t marked_slot, CallArgs& out) {
    const bool persistent =
        ap.source % 2 == 0 && !marked.empty() && (!f.mutates || marked_slot < marked.size());
    if (persistent) {
      out.names.push_back(marked[(f.mutates ? marked_slot : ap.pick) % marked.size()]);
      out.know.push_back(ArgKnowledge::kStatic);
      return;
    }
    // The unaligned-static fault: remove_unaligned_input_idxs demotes it when
    // its key compiles, and a later call of that key keeps the compiled
    // choice, so the generator cannot tell which.
    const std::int64_t offset = ap.static_offset % 4;
    const std::string name = fmt::format("m{}", draft.next_fresh++);
    draft.add(draft.tensor(name, offset));
    draft.add(MarkStatic{name, ap.pick % 2 == 1});
    out.temps.push_back(name);
    out.names.push_back(name);
    if (offset != 0) {
      ++draft.g.unaligned_statics;
      facts.demoted_slots.insert({function_index, j});
      facts.maybe_unaligned.insert(name);
    }
    out.know.push_back(ArgKnowledge::kStatic);
  }

  // Static (count_tangents) whatever it gets; 16-byte aligned unless an
  // output aliases an unaligned static input.
  void saved_arg(const LoweredFunction& f, std::size_t function_index, std::size_t j,
                 const ArgPlan& ap, CallArgs& out) {
    const std::uint32_t source = f.mutates ? 3 : ap.source % 3;
    if (source == 0 && !step_outputs.empty()) {
      out.names.push_back(step_outputs[ap.pick % step_outputs.size()]);
      if (facts.maybe_unaligned.count(out.names.back()) != 0) {
        facts.demoted_slots.insert({function_index, j});
      }
      ++draft.g.managed_candidates;
    } else if (source == 2 && !marked.empty()) {
      out.names.push_back(marked[ap.pick % marked.size()]);
    } else if (source != 3) {
      out.names.push_back("c0");
    } else {
      out.names.push_back(draft.fresh_eager(out.temps));
    }
    out.know.push_back(ArgKnowledge::kStatic);
  }

  // A mutating body, or a call of another size, gets a fresh eager tensor.
  void data_arg(const LoweredFunction& f, std::int64_t grow, std::int64_t numel, const ArgPlan& ap,
                CallArgs& out) {
    const std::uint32_t source = f.mutates || grow != 0 ? 0 : ap.source % 4;
    if (source == 2 && !step_outputs.empty()) {
      out.names.push_back(step_outputs[ap.pick % step_outputs.size()]);
      ++draft.g.managed_candidates;
      out.know.push_back(ArgKnowledge::kUnknown);
    } else if (source == 3 && !older_outputs.empty()) {
      out.names.push_back(older_outputs[ap.pick % older_outputs.size()]);
      facts.older_inputs.insert(out.names.back());
      ++draft.g.older_outputs;
      out.may_raise = true;
      out.know.push_back(ArgKnowledge::kUnknown);
    } else if (source == 1) {
      out.names.push_back("c0");
      out.know.push_back(ArgKnowledge::kNonStatic);
    } else {
      const std::int64_t offset = ap.offset % 4;
      out.names.push_back(draft.fresh_eager(out.temps, offset, numel));
      out.know.push_back(ArgKnowledge::kNonStatic);
      // Not 16-byte aligned: harmless here, but an output that returns or
      // views it (an eager fallback's `return v2`) may feed a static slot,
      // which remove_unaligned_input_idxs then demotes at compile.
      if (offset != 0) facts.maybe_unaligned.insert(out.names.back());
    }
  }

  // The arguments of a call of `f`, the program's function `function_index`,
  // in slot order; tensors made for them are added as they are chosen.
  CallArgs lower(const CallPlan& call, const LoweredFunction& f, std::size_t function_index,
                 std::int64_t grow, std::int64_t numel) {
    CallArgs out;
    std::uint32_t param_slot = 0, marked_slot = 0;
    const std::uint32_t base = param_base(f, call);
    for (std::size_t j = 0; j < f.slots.size(); ++j) {
      const ArgPlan ap = j < call.args.size() ? call.args[j] : ArgPlan{};
      switch (f.slots[j]) {
        case SlotKind::kParam:
          // Distinct params for a mutating body (slots never outnumber params).
          out.names.push_back(param_name(f.mutates ? base + param_slot : ap.pick, params));
          ++param_slot;
          out.know.push_back(ArgKnowledge::kStatic);
          break;
        case SlotKind::kMarked:
          marked_arg(f, function_index, j, ap, marked_slot, out);
          ++marked_slot;
          break;
        case SlotKind::kSaved: saved_arg(f, function_index, j, ap, out); break;
        case SlotKind::kData: data_arg(f, grow, numel, ap, out); break;
      }
    }
    return out;
  }
};

// Lowers a ProgramPlan to the actions of its Program, step by step and call
// by call, with the generator's knowledge of every call's inputs.
class ProgramLowering {
 public:
  explicit ProgramLowering(const ProgramPlan& plan) : plan_(plan) {
    GeneratedProgram& g = draft_.g;
    g.seed = plan.seed;
    g.swarm_off = plan.swarm_off;
    g.torch_profile = plan.torch_profile;
    g.knobs = plan.knobs;
    g.numel = 4 + plan.numel % 13;
    params_ = 1 + plan.params % 3;
  }

  GeneratedProgram run() {
    GeneratedProgram& g = draft_.g;
    functions_ = lower_functions(plan_, params_, g.numel);
    for (const LoweredFunction& f : functions_) g.program.functions.push_back(f.def);

    for (std::uint32_t i = 0; i < params_; ++i) {
      NewTensor t = draft_.tensor(fmt::format("p{}", i));
      t.parameter = true;
      draft_.add(t);
    }
    for (std::size_t i = 0; i < plan_.marked_guards.size() && i < 2; ++i) {
      const std::string name = fmt::format("s{}", i);
      draft_.add(draft_.tensor(name));
      draft_.add(MarkStatic{name, plan_.marked_guards[i]});
      marked_.push_back(name);
    }
    draft_.add(draft_.tensor("c0"));
    if (plan_.optimizer) {
      optimizer_ = make_optimizer(*plan_.optimizer, params_);
      draft_.add(*optimizer_);
    }
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) lower_step(plan_.steps[s], s);
    lower_moving_slice();
    forget_demoted_slots(g, call_functions_, facts_.demoted_slots);
    drop_unused_tensors(g);
    if (const auto end = first_call_taking(g.program, facts_.older_inputs)) g.contract_end = *end;
    return std::move(g);
  }

 private:
  // ProgramPlan::moving_slice_steps (cudagraph_programs_newer.hpp).
  void lower_moving_slice() {
    GeneratedProgram& g = draft_.g;
    for (PlannedAction& a : moving_slice_program(plan_.moving_slice_steps, plan_.torch_profile,
                                                 g.numel, g.program.functions)) {
      g.calls += std::holds_alternative<Call>(a.action);
      draft_.add(std::move(a.action), std::move(a.knowledge), a.numel);
    }
  }

  void lower_step(const StepPlan& step, std::size_t s) {
    ++draft_.g.steps;
    if (step.mark_step) {
      draft_.add(MarkStepBegin{});
      ++draft_.g.mark_steps;
    }
    std::vector<std::string> step_outputs;  // kept outputs of sizes {numel}
    for (std::size_t c = 0; c < step.calls.size(); ++c) {
      lower_call(step.calls[c], c == 0, s, step_outputs);
    }
    if (step.running_backward) draft_.add(SetToRunningBackward{});
    if (step.optimizer_step && plan_.optimizer) {
      lower_optimizer_step(draft_, step, *plan_.optimizer, *optimizer_, optimizer_stepped_);
    }
    for (auto it = dels_.begin(); it != dels_.end();) {
      if (it->first <= s) {
        draft_.add(Del{it->second});
        deleted_.insert(it->second);
        std::erase(older_outputs_, it->second);
        it = dels_.erase(it);
      } else {
        ++it;
      }
    }
    if (step.reassign_after) reassign(*step.reassign_after);
    if (step.drop_optimizer && optimizer_) {
      draft_.add(DropOptimizer{optimizer_->name});
      draft_.add(*optimizer_);
      optimizer_stepped_ = false;
      ++draft_.g.optimizer_drops;
    }
    // What this step kept and did not delete may be used later, by the
    // kept-across-a-generation fault only.
    for (std::string& name : step_outputs) {
      if (deleted_.count(name) == 0) older_outputs_.push_back(std::move(name));
    }
  }

  void reassign(std::uint32_t i) {
    ReassignData r;
    r.name = param_name(i, params_);
    draft_.add(r);
    ++draft_.g.reassigns;
  }

  // Names the outputs `call` keeps in `c` ("" for the others), notes which
  // may be unaligned or used later in the step, and schedules their dels.
  // Returns the kept names, in output order.
  std::vector<std::string> bind_outputs(const CallPlan& call, const LoweredFunction& f,
                                        bool may_raise, std::int64_t grow, std::size_t s, Call& c,
                                        std::vector<std::string>& step_outputs) {
    // An output may alias an unaligned input, static (a recording bakes the
    // unaligned address in) or not (a returned input), and then so may a
    // static slot it feeds.
    const bool unaligned_in =
        std::any_of(c.args.begin(), c.args.end(),
                    [this](const std::string& a) { return facts_.maybe_unaligned.count(a) != 0; });
    std::vector<std::string> kept;
    for (std::size_t k = 0; k < f.output_full.size(); ++k) {
      // A call that may raise binds nothing: Python skips the assignment.
      if (!may_raise && ((call.keep_mask >> k) & 1u)) {
        const std::string name = fmt::format("o{}", next_output_++);
        c.outputs.push_back(name);
        kept.push_back(name);
        if (unaligned_in) facts_.maybe_unaligned.insert(name);
        if (f.output_full[k] && grow == 0) step_outputs.push_back(name);
        if (call.hold < 4) dels_.emplace(s + call.hold, name);
      } else {
        c.outputs.push_back("");
      }
    }
    return kept;
  }

  void lower_call(const CallPlan& call, bool first, std::size_t s,
                  std::vector<std::string>& step_outputs) {
    if (call.reassign_before) reassign(*call.reassign_before);
    const std::size_t function_index = call.function % functions_.size();
    const LoweredFunction& f = functions_[function_index];
    // The size-change fault: every input is a fresh tensor of another size.
    const std::int64_t grow = f.resizable() ? call.grow % 4 : 0;
    const std::int64_t numel = grow != 0 ? draft_.g.numel + grow : kDefaultNumel;
    CallArgLowering lowering{draft_, facts_, marked_, older_outputs_, step_outputs, params_};
    const CallArgs args = lowering.lower(call, f, function_index, grow, numel);
    Call c;
    c.function = f.def.name;
    c.args = args.names;
    if (grow != 0) {
      c.int_key = {numel};
      ++draft_.g.size_changes;
    }
    // Only the first call of a step may start a torch.compile invocation.
    if (!first) c.new_invocation = false;
    const std::vector<std::string> kept =
        bind_outputs(call, f, args.may_raise, grow, s, c, step_outputs);
    call_functions_.emplace_back(draft_.g.program.actions.size(), function_index);
    draft_.add(c, args.know, numel);
    ++draft_.g.calls;
    for (const std::string& t : args.temps) draft_.add(Del{t});
    if (call.read && !kept.empty()) draft_.add(Read{kept.front()});
  }

  const ProgramPlan& plan_;
  ProgramDraft draft_;
  std::uint32_t params_ = 1;
  std::vector<LoweredFunction> functions_;
  std::vector<std::string> marked_;
  std::optional<CreateOptimizer> optimizer_;
  bool optimizer_stepped_ = false;  // the optimizer has taken a step since it was made
  std::multimap<std::size_t, std::string> dels_;  // step -> kept output to delete
  std::set<std::string> deleted_;
  std::vector<std::string> older_outputs_;  // kept outputs of earlier steps, alive
  std::vector<std::pair<std::size_t, std::size_t>> call_functions_;  // action -> function
  AliasFacts facts_;
  std::size_t next_output_ = 0;
};

}  // namespace

GeneratedProgram lower(const ProgramPlan& plan) {
  return ProgramLowering(plan).run();
}

GeneratedProgram within_contract(GeneratedProgram generated) {
  if (!generated.contract_end) return generated;
  const std::size_t n = *generated.contract_end;
  return first_actions(std::move(generated), n);
}

GeneratedProgram first_actions(GeneratedProgram generated, std::size_t n) {
  CAPSIM_CHECK(n <= generated.program.actions.size());
  generated.program.actions.resize(n);
  generated.knowledge.resize(std::min(n, generated.knowledge.size()));
  generated.numel_at.resize(std::min(n, generated.numel_at.size()));
  if (generated.contract_end && *generated.contract_end >= n) generated.contract_end.reset();
  return generated;
}

}  // namespace capsim
