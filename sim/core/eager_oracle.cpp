// The eager oracle (see eager_oracle.hpp): the scratch memory, the plans kept per body and
// shape of inputs, and the outputs gathered as raw float bits.
#include "sim/core/eager_oracle.hpp"

#include <bit>

#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "sim/core/body_interpreter.hpp"
#include "sim/core/tensor_refs.hpp"

namespace capsim {

namespace {

bool row_major_contiguous(const TensorMeta& meta) {
  std::int64_t expected = 1;
  for (std::size_t d = meta.sizes.size(); d-- > 0;) {
    if (meta.sizes[d] != 1 && meta.strides[d] != expected) return false;
    expected *= meta.sizes[d];
  }
  return true;
}

// A tensor of 1-, 2- or 8-byte elements as 32-bit words, row-major: each
// element zero-extended to one word, or an 8-byte one as its low then its
// high word.
Result<ElementBits> gather_words(const DeviceMemory& memory, Address data, const TensorMeta& meta,
                                 std::uint64_t element) {
  const std::int64_t n = numel(meta);
  ElementBits out;
  const std::size_t rank = meta.sizes.size();
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += index[d] * meta.strides[d];
    std::uint64_t bits = 0;  // little-endian host, as the simulated device
    CAPSIM_TRY(memory.read(data + static_cast<std::uint64_t>(offset) * element,
                           std::span(reinterpret_cast<std::byte*>(&bits), element)));
    out.push_back(static_cast<std::uint32_t>(bits));
    if (element == 8) out.push_back(static_cast<std::uint32_t>(bits >> 32));
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < meta.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

Result<ElementBits> gather_bits(const DeviceMemory& memory, Address data, const TensorMeta& meta) {
  const std::int64_t n = numel(meta);
  const std::uint64_t element = element_bytes(meta);
  ElementBits out;
  if (element != 4) return gather_words(memory, data, meta, element);
  if (n > 0 && row_major_contiguous(meta)) {
    out.resize(static_cast<std::size_t>(n));
    CAPSIM_TRY(memory.read(data, std::as_writable_bytes(std::span(out))));
    return out;
  }
  out.reserve(static_cast<std::size_t>(n));
  const std::size_t rank = meta.sizes.size();
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += index[d] * meta.strides[d];
    std::uint32_t bits = 0;
    CAPSIM_TRY(memory.read(data + static_cast<std::uint64_t>(offset) * element,
                           std::as_writable_bytes(std::span(&bits, 1))));
    out.push_back(bits);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < meta.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

namespace {

bool same_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

// Every field of BodyOp that a launch depends on, floats by their bits (a
// fill of -0.0 is not one of 0.0, and a NaN scalar is itself). A field added
// to BodyOp must be added here.
bool same_op(const BodyOp& a, const BodyOp& b) {
  return a.kind == b.kind && a.args == b.args && a.sizes == b.sizes &&
         same_bits(a.scalar, b.scalar) && a.dims == b.dims && a.keepdim == b.keepdim &&
         a.start == b.start && a.end == b.end && same_bits(a.sgd.lr, b.sgd.lr) &&
         same_bits(a.sgd.momentum, b.sgd.momentum) && same_bits(a.sgd.dampening, b.sgd.dampening) &&
         same_bits(a.sgd.weight_decay, b.sgd.weight_decay) && a.sgd.nesterov == b.sgd.nesterov &&
         same_bits(a.adam.lr, b.adam.lr) && same_bits(a.adam.beta1, b.adam.beta1) &&
         same_bits(a.adam.beta2, b.adam.beta2) && same_bits(a.adam.eps, b.adam.eps) &&
         same_bits(a.adam.weight_decay, b.adam.weight_decay) && a.generic == b.generic &&
         a.index == b.index;
}

// A plan is kept per body and shape; past this many, all are dropped and
// made again as calls come (a program of that many distinct shapes runs
// them through the tensor store, as before plans existed).
constexpr std::size_t kMaxPlans = 256;

}  // namespace

// One input as the oracle sees it: its metadata and its storage, and which
// earlier input (if any) shares that storage.
struct EagerOracle::InputSeen {
  TensorMeta meta;
  StorageId storage;
  Address base = 0;
  std::uint64_t nbytes = 0;
  std::uint32_t group = 0;  // the index of the first input over the same storage
};

// What one run of a body did, for later calls with the same body and the
// same shape of inputs (eager_oracle.hpp). Addresses are in the scratch
// memory of the Scratch that holds the plan.
struct EagerOracle::Plan {
  const FunctionDef* def = nullptr;  // checked by pointer first, then by body
  std::size_t num_inputs = 0;
  std::vector<BodyOp> ops;
  std::vector<ValueIndex> outputs;
  std::vector<InputSeen> inputs;   // metadata, nbytes and group; not base or storage
  std::vector<Address> copies_to;  // per input: where its storage's copy lives
  std::vector<Step> steps;
  std::vector<TensorArg> results;  // each output's address and metadata

  bool matches(const FunctionDef& d, const std::vector<InputSeen>& seen) const {
    if (def != &d || num_inputs != d.num_inputs() || outputs != d.outputs ||
        ops.size() != d.ops.size() || inputs.size() != seen.size()) {
      return false;
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const InputSeen &a = inputs[i], &b = seen[i];
      if (a.group != b.group || a.nbytes != b.nbytes || !(a.meta == b.meta)) return false;
    }
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (!same_op(ops[k], d.ops[k])) return false;
    }
    return true;
  }
};

struct EagerOracle::Scratch {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  CpuBackend backend{memory};
  std::vector<Plan> plans;  // their addresses are in `memory`: they go with it
};

EagerOracle::EagerOracle() = default;
EagerOracle::~EagerOracle() = default;

std::size_t EagerOracle::plans() const {
  return scratch_ ? scratch_->plans.size() : 0;
}

Result<std::vector<ElementBits>> EagerOracle::outputs(const FunctionDef& def,
                                                      const TensorStore& store,
                                                      const DeviceMemory& memory,
                                                      std::span<const TensorId> inputs) {
  std::vector<InputSeen> seen;
  seen.reserve(inputs.size());
  for (TensorId id : inputs) {
    CAPSIM_TRY_ASSIGN(Tensor t, store.tensor(id));
    CAPSIM_TRY_ASSIGN(const Storage storage, store.storage(t.storage));
    auto group = static_cast<std::uint32_t>(seen.size());
    for (std::uint32_t j = 0; j < seen.size(); ++j) {
      if (seen[j].storage == t.storage) {
        group = seen[j].group;
        break;
      }
    }
    seen.push_back({std::move(t.meta), t.storage, storage.base, storage.nbytes, group});
  }
  if (!scratch_) scratch_ = std::make_unique<Scratch>();
  CAPSIM_CHECK(scratch_->store.live_tensors() == 0, "the oracle starts from an empty store");
  for (const Plan& plan : scratch_->plans) {
    if (!plan.matches(def, seen)) continue;
    Result<std::vector<ElementBits>> out = replay(*scratch_, plan, memory, seen);
    if (out) {
      ++planned_calls_;
      return out;
    }
    scratch_->plans.clear();  // and make it again, which says what went wrong
    break;
  }
  Result<Plan> plan = make_plan(*scratch_, def, seen);
  Result<std::vector<ElementBits>> out = plan ? replay(*scratch_, *plan, memory, seen)
                                              : Result<std::vector<ElementBits>>(plan.error());
  // A call that failed midway may leave tensors behind: start the next one
  // from a fresh scratch rather than from what it left.
  if (!out || scratch_->store.live_tensors() != 0) {
    scratch_.reset();
    return out;
  }
  if (scratch_->plans.size() == kMaxPlans) scratch_->plans.clear();
  scratch_->plans.push_back(std::move(*plan));
  return out;
}

Result<std::vector<ElementBits>> EagerOracle::replay(Scratch& s, const Plan& plan,
                                                     const DeviceMemory& memory,
                                                     const std::vector<InputSeen>& seen) {
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i].group != i || seen[i].nbytes == 0) continue;
    CAPSIM_TRY_ASSIGN(std::byte* const dst, s.memory.resolve(plan.copies_to[i], seen[i].nbytes));
    CAPSIM_TRY(memory.read(seen[i].base, std::span(dst, seen[i].nbytes)));
  }
  for (const Step& step : plan.steps) CAPSIM_TRY(s.backend.run_step(step));
  std::vector<ElementBits> values;
  values.reserve(plan.results.size());
  for (const TensorArg& r : plan.results) {
    CAPSIM_TRY_ASSIGN(ElementBits bits, gather_bits(s.memory, r.address, r.meta));
    values.push_back(std::move(bits));
  }
  return values;
}

Result<EagerOracle::Plan> EagerOracle::make_plan(Scratch& s, const FunctionDef& def,
                                                 const std::vector<InputSeen>& seen) {
  TensorRefs refs(s.store);
  std::vector<TensorId> held;  // released before returning
  Plan plan;
  plan.def = &def;
  plan.num_inputs = def.num_inputs();
  plan.ops = def.ops;
  plan.outputs = def.outputs;
  plan.inputs = seen;
  // One scratch storage per distinct input storage, so inputs that alias one
  // another (the same tensor passed twice, or two views of one base) alias in
  // the scratch run too, and in-place ops see each other's writes.
  std::vector<TensorId> buffers(seen.size()), copies;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const InputSeen& in = seen[i];
    if (in.group == i) {
      // Bytes, so that a storage of any dtype and size is copied whole.
      const auto bytes = static_cast<std::int64_t>(in.nbytes);
      CAPSIM_TRY_ASSIGN(const Tensor buffer, s.store.empty({bytes}, DType::kUInt8));
      refs.hold(buffer.id);
      held.push_back(buffer.id);
      buffers[i] = buffer.id;
      CAPSIM_TRY_ASSIGN(const Address to, s.store.data_address(buffer.id));
      plan.copies_to.push_back(to);
    } else {
      plan.copies_to.push_back(plan.copies_to[in.group]);
    }
    CAPSIM_TRY_ASSIGN(const Tensor view, s.store.view(buffers[in.group], in.meta));
    refs.hold(view.id);
    held.push_back(view.id);
    copies.push_back(view.id);
  }
  // Captured: the launches an eager run makes, in its order, with the
  // addresses it would use. The blocks go back to the scratch allocator
  // below, but its segments stay mapped, so replay() runs them there.
  StepProgram program;
  BodyEnv env{refs, s.backend, kDefaultPool, &program};
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> outputs, run_body(def, copies, env));
  held.insert(held.end(), outputs.begin(), outputs.end());
  for (TensorId o : outputs) {
    CAPSIM_TRY_ASSIGN(const TensorArg r, tensor_arg(s.store, o));
    plan.results.push_back(r);
  }
  for (TensorId id : held) CAPSIM_TRY(refs.drop(id));
  plan.steps = std::move(program.steps);
  return plan;
}

}  // namespace capsim
