#include "sim/world/world.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "model/digest.hpp"
#include "sim/core/body_interpreter.hpp"
#include "sim/core/eager_oracle.hpp"
#include "sim/core/messages.hpp"

namespace capsim {

namespace {

// float16 bits as the float they stand for (normal, subnormal, inf, NaN).
float half_value(std::uint32_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  }
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // exact
  return sign != 0 ? -magnitude : magnitude;
}

// A tensor's elements (gather_bits' words: one per element, two for an
// 8-byte one) as floats: what a `read` shows of any dtype. complex64 shows
// its real part; an integer or bool its value.
std::vector<float> float_values(const ElementBits& bits, DType dtype) {
  std::vector<float> out;
  const bool wide = dtype_element_bytes(dtype) == 8;
  for (std::size_t i = 0; i < bits.size(); i += wide ? 2 : 1) {
    const std::uint32_t w = bits[i];
    const std::uint64_t pair = wide ? (std::uint64_t{bits[i + 1]} << 32) | w : w;
    switch (dtype) {
      case DType::kFloat32:
      case DType::kComplex64: out.push_back(std::bit_cast<float>(w)); break;
      case DType::kFloat64: out.push_back(static_cast<float>(std::bit_cast<double>(pair))); break;
      case DType::kFloat16: out.push_back(half_value(w)); break;
      case DType::kBFloat16: out.push_back(std::bit_cast<float>(w << 16)); break;
      case DType::kInt64: out.push_back(static_cast<float>(static_cast<std::int64_t>(pair))); break;
      case DType::kInt32: out.push_back(static_cast<float>(static_cast<std::int32_t>(w))); break;
      case DType::kInt8: out.push_back(static_cast<float>(static_cast<std::int8_t>(w))); break;
      case DType::kUInt8: out.push_back(static_cast<float>(w & 0xffu)); break;
      case DType::kBool: out.push_back(w != 0 ? 1.0f : 0.0f); break;
    }
  }
  return out;
}

DeviceMemoryOptions memory_options(const WorldOptions& o) {
  DeviceMemoryOptions m;
  m.poison_freed = o.config.poison_freed;
  CAPSIM_CHECK(o.memory_budget_bytes > 0 && o.memory_budget_bytes <= kMaxMemoryBudget,
               "memory budget out of range");
  m.capacity_bytes = o.memory_budget_bytes;
  m.backed = o.values;
  CAPSIM_CHECK(o.values || (!o.verify_replays && o.mirror == nullptr && !o.device_evidence),
               "values off checks no values");
  return m;
}

// Bad input: a call with another number of arguments than `def` has inputs.
Status check_arity(const FunctionDef& def, std::size_t args) {
  if (args == def.num_inputs()) return {};
  return make_error(
      fmt::format("function '{}' takes {} inputs, got {}", def.name, def.num_inputs(), args));
}

}  // namespace

World::World(WorldOptions options)
    : options_(options),
      memory_(memory_options(options_)),
      allocator_(memory_),
      store_(allocator_),
      refs_(store_),
      backend_(memory_),
      rng_(options_.seed),
      ctx_{memory_, allocator_, refs_, backend_, options_.config, events_, counters_, generations_},
      objects_(refs_),
      context_{ctx_, store_, objects_, rng_, oracle_, options_, *this},
      plain_(context_),
      optimizers_(context_),
      autograd_(context_) {
  ctx_.verify_replays = options_.verify_replays;
  ctx_.oracle = &oracle_;
  CAPSIM_CHECK_FAULT_SITE(options_.fault, FaultSite::kTree);
  CAPSIM_CHECK(options_.max_held_events <= kMaxEvents, "the limit only goes down");
  ctx_.fault = options_.fault;
  ctx_.device_evidence = options_.device_evidence;
  backend_.set_mirror(options_.mirror);
}

World::~World() = default;

Status World::begin(const Program& program) {
  if (program.actions.size() > kMaxActions) {
    return make_error(
        fmt::format("program: {} actions, the limit is {}", program.actions.size(), kMaxActions));
  }
  decltype(functions_by_name_) by_name;
  for (const FunctionDef& def : program.functions) {
    CAPSIM_TRY(validate(def));
    const TorchProfileRules& rules = profile_rules(options_.config.torch_profile);
    if (!def.input_storage_mutations.empty() && !rules.input_storage_mutation_skip) {
      // Before 2.13 Inductor cudagraphed such a graph; what its replays do
      // to the rebound input is not modelled.
      return make_error(fmt::format(
          "function '{}': input_storage_mutations: a set_ on a graph input is modelled from 2.13 "
          "(the '{}' profile's releases, {}, cudagraph the graph anyway)",
          def.name, rules.name, rules.releases));
    }
    if (def.warmups_marked_incomplete > 0 && !rules.has_mark_warmup_incomplete) {
      return make_error(fmt::format(
          "function '{}': warmups_marked_incomplete: torch.compiler."
          "cudagraph_mark_warmup_incomplete() exists from 2.14 (not in the '{}' profile's "
          "releases, {})",
          def.name, rules.name, rules.releases));
    }
    if (!by_name.emplace(def.name, &def).second) {
      return make_error(fmt::format("function '{}': defined twice", def.name));
    }
  }
  program_ = &program;
  functions_by_name_ = std::move(by_name);
  return {};
}

Status World::run_action(std::size_t index, const Action& action) {
  CAPSIM_CHECK(program_ != nullptr, "run_action before begin");
  if (index >= kMaxRunActions) {
    return make_error(fmt::format("action {}: the limit is {} actions", index, kMaxRunActions));
  }
  ctx_.action = static_cast<std::uint32_t>(index);
  Status s = step(action);
  if (!s) {
    return with_context(fmt::format("action {} ({})", index, action_name(action)), s.error());
  }
  // Checked after the action: emit cannot fail, and one action's events
  // stay far below the assertion's margin (sim/core/events.hpp).
  if (events_.size() > options_.max_held_events) {
    return make_error(fmt::format(
        "action {} ({}): the run holds {} events, more than the {} a run may keep at once "
        "(docs/trace-format.md §8)",
        index, action_name(action), events_.size(), options_.max_held_events));
  }
  return {};
}

Status World::run(const Program& program, const std::function<void(std::size_t)>& after) {
  CAPSIM_TRY(begin(program));
  for (std::size_t i = 0; i < program.actions.size(); ++i) {
    CAPSIM_TRY(run_action(i, program.actions[i]));
    if (after) after(i);
  }
  return {};
}

Status World::step(const Action& action) {
  return std::visit(
      [&](const auto& a) -> Status {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, NewTensor>) return do_new_tensor(a);
        if constexpr (std::is_same_v<A, MarkStatic>) return do_mark_static(a);
        if constexpr (std::is_same_v<A, Call>) return do_call(a);
        if constexpr (std::is_same_v<A, EagerCall>) return do_eager_call(a);
        if constexpr (std::is_same_v<A, Del>) return objects_.unbind(a.name);
        if constexpr (std::is_same_v<A, Read>) return do_read(a);
        if constexpr (std::is_same_v<A, ReassignData>) return do_reassign(a);
        if constexpr (std::is_same_v<A, MarkStepBegin>) {
          --generations_.mark_step_counter;
          return Status{};
        }
        if constexpr (std::is_same_v<A, SetToRunningBackward>) {
          if (manager_) manager_->set_to_running_backward();
          return Status{};
        }
        if constexpr (std::is_same_v<A, AccumulateGrad>) return autograd_.accumulate_grad(a);
        if constexpr (std::is_same_v<A, CreateOptimizer>) return optimizers_.create(a);
        if constexpr (std::is_same_v<A, OptimizerStep>) return optimizers_.step(a);
        if constexpr (std::is_same_v<A, ZeroGrad>) return optimizers_.zero_grad(a);
        if constexpr (std::is_same_v<A, ClearGrads>) return optimizers_.clear_grads(a);
        if constexpr (std::is_same_v<A, DropOptimizer>) return do_drop_optimizer(a);
        if constexpr (std::is_same_v<A, Reset>) return do_reset();
        if constexpr (std::is_same_v<A, RunCaptureScenario>) {
          return autograd_.run_capture_scenario(a);
        }
        if constexpr (std::is_same_v<A, DefineAutogradGraph>) {
          return autograd_.define_autograd_graph(a);
        }
        if constexpr (std::is_same_v<A, CompiledBackward>) return autograd_.compiled_backward(a);
        if constexpr (std::is_same_v<A, Backward>) return autograd_.backward(a);
      },
      action);
}

// --- Queries -------------------------------------------------------------------

Result<const FunctionDef*> World::function(const std::string& name) const {
  CAPSIM_CHECK(program_ != nullptr);
  // An index, not a scan: a call looks its function up once per call.
  if (auto it = functions_by_name_.find(name); it != functions_by_name_.end()) return it->second;
  return make_error(fmt::format("unknown function '{}'", name));
}

Result<TensorId> World::tensor_id(const std::string& name) const {
  CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(name));
  return objects_.at(o).tensor;
}

bool World::has(const std::string& name) const {
  return objects_.lookup(name).ok();
}

Result<Address> World::data_ptr(const std::string& name) const {
  CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(name));
  return store_.data_address(objects_.at(o).tensor);
}

Result<std::vector<float>> World::values(const std::string& name) const {
  CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(name));
  const TensorArg arg = held_tensor_arg(store_, objects_.at(o).tensor);
  CAPSIM_TRY_ASSIGN(const ElementBits bits, gather_bits(memory_, arg.address, arg.meta));
  if (arg.meta.dtype != DType::kFloat32) return float_values(bits, arg.meta.dtype);
  std::vector<float> out(bits.size());
  // memcpy's pointers must not be null, and an empty vector's may be (a
  // zero-element read; found by fuzz_trace_reader under UBSan).
  if (!bits.empty()) std::memcpy(out.data(), bits.data(), bits.size() * sizeof(float));
  return out;
}

std::size_t World::pool_live_blocks() const {
  // The config picks one API for the World's life: the tree manager's pool
  // or the plain captures' (a tree pool exists only without plain_api).
  const std::optional<PoolId> pool = options_.config.plain_api ? plain_.pool() : tree_pool_;
  return pool ? allocator_.live_blocks(*pool).size() : 0;
}

PoolBytes World::pool_bytes() const {
  const std::optional<PoolId> pool = options_.config.plain_api ? plain_.pool() : tree_pool_;
  if (!pool) return {};
  return PoolBytes{allocator_.allocated_bytes(*pool), allocator_.reserved_bytes(*pool)};
}

std::size_t World::live_storages_of(const std::vector<TensorId>& tensors) const {
  return context_.live_storages_of(tensors);
}

// --- Simple actions ------------------------------------------------------------

Status World::do_new_tensor(const NewTensor& a) {
  CAPSIM_TRY_ASSIGN(const TensorId t,
                    context_.fresh_tensor(a.sizes, a.fill, a.offset, a.dtype, a.strides));
  const std::uint64_t object = objects_.new_object(t, a.parameter);
  if (a.requires_grad) CAPSIM_TRY(autograd_.adopt_leaf(t, object));
  return objects_.bind(a.name, object);
}

Status World::do_mark_static(const MarkStatic& a) {
  CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(a.name));
  objects_.at(o).static_guard =
      a.guard.value_or(profile_rules(options_.config.torch_profile).mark_static_guard_default);
  return {};
}

Status World::do_read(const Read& a) {
  CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(a.name));
  if (context_.raise_if_poisoned({o})) return {};
  if (!options_.values) {  // the read happened; what it saw is not modelled
    CAPSIM_TRY_ASSIGN(const Tensor t, store_.tensor(objects_.at(o).tensor));
    ctx_.emit(EventKind::kRead, {{F::name, a.name}, {F::numel, numel(t.meta)}});
    return {};
  }
  CAPSIM_TRY_ASSIGN(const std::vector<float> v, values(a.name));
  std::string shown = "[";
  for (std::size_t i = 0; i < v.size() && i < 4; ++i) {
    if (i) shown += ',';
    shown += fmt::format("{}", v[i]);
  }
  shown += v.size() > 4 ? ",...]" : "]";
  ctx_.emit(EventKind::kRead, {{F::name, a.name},
                               {F::numel, v.size()},
                               {F::digest, Digest{fnv1a64(std::as_bytes(std::span(v)))}},
                               {F::values, shown}});
  return {};
}

Status World::do_reassign(const ReassignData& a) {
  CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(a.name));
  PyObject& object = objects_.at(o);
  CAPSIM_TRY_ASSIGN(const Tensor old, store_.tensor(object.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId fresh,
                    context_.fresh_tensor(old.meta.sizes, a.fill, 0, old.meta.dtype));
  const TensorId previous = objects_.swap_tensor(o, fresh);
  CAPSIM_TRY(autograd_.retarget_leaf(previous, fresh));
  return refs_.drop(previous);
}

Status World::move_to_fresh_copy(std::uint64_t object) {
  PyObject& o = objects_.at(object);
  CAPSIM_TRY_ASSIGN(const Tensor old, store_.tensor(o.tensor));
  CAPSIM_TRY_ASSIGN(const TensorId fresh,
                    context_.fresh_tensor(old.meta.sizes, 0.0f, 0, old.meta.dtype));
  // fresh has old's sizes, so the copy cannot be refused.
  const KernelLaunch copy =
      CAPSIM_MUST(launch_copy(held_tensor_arg(store_, fresh), held_tensor_arg(store_, o.tensor)));
  CAPSIM_TRY(backend_.run_step(Step{copy, {}}));
  const TensorId previous = objects_.swap_tensor(object, fresh);
  CAPSIM_TRY(autograd_.retarget_leaf(previous, fresh));
  return refs_.drop(previous);
}

Status World::do_eager_call(const EagerCall& a) {
  CAPSIM_TRY_ASSIGN(const FunctionDef* def, function(a.function));
  CAPSIM_TRY(check_arity(*def, a.args.size()));
  std::vector<std::uint64_t> objects;
  std::vector<TensorId> inputs;
  for (const std::string& name : a.args) {
    CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(name));
    objects.push_back(o);
    inputs.push_back(objects_.at(o).tensor);
  }
  if (context_.raise_if_poisoned(objects)) return {};
  if (!a.no_grad && autograd_.requires_grad(inputs)) {
    return autograd_.eager_call(*def, inputs, a.outputs);
  }
  BodyEnv env{refs_, backend_, kDefaultPool, nullptr};
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> outputs, run_body(*def, inputs, env));
  return context_.bind_outputs(outputs, a.outputs);
}

// --- Compiled calls --------------------------------------------------------------

TreeManager& World::ensure_manager() {
  if (!manager_) {
    auto pool = allocator_.create_pool();
    CAPSIM_CHECK(pool.ok(), "pool limit reached");
    tree_pool_ = *pool;
    manager_ = std::make_unique<TreeManager>(ctx_, *pool);
    ++managers_created_;
  }
  return *manager_;
}

Status World::shutdown_manager(const char* reason) {
  if (!manager_) return {};
  CAPSIM_TRY(manager_->shutdown());
  ctx_.emit(EventKind::kShutdown, {{F::reason, reason}});
  manager_.reset();
  compiled_.clear();
  cudagraphed_keys_.clear();
  warned_dynamic_.clear();
  warned_rerecord_limit_.clear();
  live_cudagraphified_ = 0;
  return {};
}

void World::forget_compiled(const FunctionDef& def) {
  const std::size_t dead = compiled_.erase(&def);
  CAPSIM_CHECK(dead <= live_cudagraphified_);
  live_cudagraphified_ -= dead;
}

Status World::do_drop_optimizer(const DropOptimizer& a) {
  CAPSIM_TRY(optimizers_.drop(a));
  // TreeManagerContainer: the last cudagraphified function died with it.
  if (manager_ && live_cudagraphified_ == 0) {
    CAPSIM_TRY(shutdown_manager("last_cudagraphified_function_died"));
  }
  return {};
}

Status World::do_reset() {
  CAPSIM_TRY(shutdown_manager("dynamo_reset"));
  compiled_.clear();
  generations_.mark_step_counter = 0;
  return {};
}

Result<std::vector<DynamoArg>> World::dynamo_args(const std::vector<std::uint64_t>& args) const {
  std::vector<DynamoArg> out;
  out.reserve(args.size());
  for (std::uint64_t a : args) {
    const PyObject& o = objects_.at(a);
    CAPSIM_TRY_ASSIGN(const Address ptr, store_.data_address(o.tensor));
    const Tensor* t = store_.find(o.tensor);
    CAPSIM_CHECK(t != nullptr, "a bound name's tensor is in the store");
    out.push_back({ptr, o.parameter, o.static_guard, a, complex_memory_overlap(t->meta)});
  }
  return out;
}

Status World::do_call(const Call& a) {
  CAPSIM_TRY_ASSIGN(const FunctionDef* def, function(a.function));
  // A call lets go only of names it was handed (the caller's `del x` after
  // passing x); any other name would be deleted behind the program's back.
  for (const std::string& name : a.consume) {
    if (std::find(a.args.begin(), a.args.end(), name) == a.args.end()) {
      return make_error(fmt::format(
          "field 'consume': '{}' is not one of the call's args (a call consumes only names it "
          "is passed)",
          name));
    }
  }
  std::vector<std::uint64_t> args;
  for (const std::string& name : a.args) {
    CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(name));
    args.push_back(o);
  }
  const bool invocation = a.new_invocation.value_or(def->mode != CompilationMode::kBackward);
  return call_compiled(*def, args, a.outputs, a.int_key, invocation, a.consume);
}

Status World::call_compiled(const FunctionDef& def, const std::vector<std::uint64_t>& args,
                            const std::vector<std::string>& outputs,
                            const std::vector<std::int64_t>& int_key, bool new_invocation,
                            const std::vector<std::string>& consume) {
  if (options_.config.plain_api) {
    CAPSIM_TRY(check_arity(def, args.size()));
    if (new_invocation) ++generations_.generation;
    if (context_.raise_if_poisoned(args)) return {};
    CAPSIM_TRY_ASSIGN(std::vector<TensorId> outs, plain_.call(def, args));
    return context_.bind_outputs(outs, outputs, &def);
  }
  CAPSIM_TRY_ASSIGN(auto outs, run_compiled(def, args, int_key, new_invocation, consume));
  if (!outs) return {};
  return context_.bind_outputs(*outs, outputs, &def);
}

Result<World::Outputs> World::call_unbound(const FunctionDef& def,
                                           const std::vector<std::uint64_t>& args) {
  if (!options_.config.plain_api) return run_compiled(def, args, {}, true, {});
  CAPSIM_TRY(check_arity(def, args.size()));
  ++generations_.generation;
  if (context_.raise_if_poisoned(args)) return Outputs{};
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outs, plain_.call(def, args));
  return Outputs{std::move(outs)};
}

Result<World::Outputs> World::run_compiled(const FunctionDef& def,
                                           const std::vector<std::uint64_t>& args,
                                           const std::vector<std::int64_t>& int_key,
                                           bool new_invocation,
                                           const std::vector<std::string>& consume) {
  CAPSIM_CHECK(!options_.config.plain_api, "the plain API binds its outputs itself");
  CAPSIM_TRY(check_arity(def, args.size()));
  if (new_invocation) ++generations_.generation;
  if (context_.raise_if_poisoned(args)) return Outputs{};
  if (options_.all_eager) {
    // The input list holds one reference each, as the tree path's does.
    std::vector<TensorId> inputs;
    for (std::uint64_t a : args) {
      inputs.push_back(objects_.at(a).tensor);
      refs_.hold(inputs.back());
    }
    for (const std::string& name : consume) CAPSIM_TRY(objects_.unbind(name));
    BodyEnv env{refs_, backend_, kDefaultPool, nullptr};
    CAPSIM_TRY_ASSIGN(std::vector<TensorId> outs, run_body(def, inputs, env));
    for (TensorId t : inputs) CAPSIM_TRY(refs_.drop(t));
    return Outputs{std::move(outs)};
  }

  // Dynamo's cache: the first entry whose int key and guards match.
  CAPSIM_TRY_ASSIGN(const std::vector<DynamoArg> seen, dynamo_args(args));
  const CompileCache::Lookup lookup = compiled_.find(&def, int_key, seen);
  const CompiledEntry* found = lookup.hit;
  if (found == nullptr) {
    if (lookup.recompile) {
      ++counters_.recompiles;
      ctx_.emit(EventKind::kCompile, {{F::function, def.name},
                                      {F::recompile, true},
                                      {F::reason, decision_key(Decision::kCompileGuardFailure)}});
    }
    const bool another_size = !lookup.recompile && !int_key.empty() && compiled_.has_entries(&def);
    CompiledEntry& fresh = compiled_.insert(&def, int_key, seen);
    compile(def, seen, int_key, fresh, another_size);
    found = &fresh;
  } else if (found->kind == EntryKind::kRaises) {
    // The failed compile left no entry behind: Dynamo compiles, and raises, again.
    emit_compile_skip(def, *found);
  }
  const CompiledEntry& entry = *found;

  // The input list: one reference each.
  std::vector<TensorId> inputs;
  for (std::uint64_t a : args) {
    inputs.push_back(objects_.at(a).tensor);
    refs_.hold(inputs.back());
  }
  return run_entry(def, entry, inputs, consume);
}

std::vector<std::pair<std::string, TensorId>> World::bound_names() const {
  return objects_.bound_names();
}

}  // namespace capsim
