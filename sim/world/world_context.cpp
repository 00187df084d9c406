#include "sim/world/world_context.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cassert>
#include <cmath>
#include <span>

#include "model/dtype_values.hpp"
#include "model/rng.hpp"

namespace capsim {

namespace {
// The bits `dtype` stores for `value` (a fill, or a draw in [-1, 1) when
// `drawn`): floats converted (the half types rounded to nearest even, as
// PyTorch rounds), an integer truncated (a draw maps to [0, 16); a fill is
// one check_fill_fits let through, so it fits), bool nonzero (a draw:
// >= 0), complex64 as (value, 0).
std::uint64_t stored_bits(DType dtype, float value, bool drawn) {
  switch (dtype) {
    case DType::kFloat32: return std::bit_cast<std::uint32_t>(value);
    case DType::kFloat64: return std::bit_cast<std::uint64_t>(static_cast<double>(value));
    case DType::kBFloat16: return bfloat16_bits(value);
    case DType::kFloat16: return float16_bits(value);
    case DType::kComplex64: return std::bit_cast<std::uint32_t>(value);
    case DType::kBool: return drawn ? (value >= 0.0f ? 1 : 0) : (value != 0.0f ? 1 : 0);
    case DType::kInt64:
    case DType::kInt32:
    case DType::kInt8:
    case DType::kUInt8: {
      const float v = drawn ? std::floor((value + 1.0f) * 8.0f) : std::trunc(value);
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    }
  }
  return 0;
}
}  // namespace

Result<TensorId> WorldContext::fresh_tensor(const Dims& sizes, std::optional<float> fill,
                                            std::int64_t offset, DType dtype,
                                            const std::optional<Dims>& strides) {
  // Values on, the tensor is filled: held to kMaxValueElements. Values off,
  // only its address is made: held to the shape limit.
  const bool values = sim.memory.backed();
  const std::int64_t limit = values ? kMaxValueElements : kMaxTensorElements;
  if (offset < 0 || offset > limit) {
    return make_error(fmt::format("offset: {} is outside [0, {}]", offset, limit));
  }
  // PyTorch raises at such a fill whatever the values mode (the readers
  // refuse it first, naming the line; a program built in code meets it here).
  if (fill) CAPSIM_TRY(check_fill_fits(dtype, *fill));
  CAPSIM_TRY_ASSIGN(TensorMeta meta, contiguous_meta(sizes, dtype));
  if (strides) {
    assert(strides->size() == sizes.size());  // the reader checked
    meta.strides = *strides;
  }
  // The elements the tensor reaches, filled: numel when contiguous.
  const std::int64_t n = needed_size(meta.sizes, meta.strides);
  if (n > limit - offset) {
    Error e =
        make_error(fmt::format("sizes {}: the tensor spans {} elements{}, the limit for one "
                               "tensor with values {} is {}",
                               sizes, n, offset ? fmt::format(" past offset {}", offset) : "",
                               values ? "on" : "off", limit - offset));
    if (values) e.kind = ErrorKind::values_limit;
    return e;
  }
  // Values on, every element is computed and read (a read digests numel
  // elements, a kernel visits each): the count is held to the limit as well
  // as the span, or a stride of 0 lets 2^40 elements through on a storage of
  // one. Checked before anything is allocated or filled.
  if (values && !check_value_sizes(sizes)) {
    return values_limit(make_error(fmt::format(
        "sizes {}: more than {} elements (a stride of 0 shares their storage, not their work), "
        "the limit for one tensor with values on",
        sizes, kMaxValueElements)));
  }
  TensorMeta view_meta = meta;
  view_meta.storage_offset = offset;
  Tensor t;
  if (n > 0) {
    // One storage of offset + n elements, as the buffer below, made in one step.
    CAPSIM_TRY_ASSIGN(t, store.empty_strided(view_meta));
  } else {
    // A tensor of no elements still takes a storage of `offset` elements.
    CAPSIM_TRY_ASSIGN(const Tensor buffer, store.empty({n + offset}, dtype));
    CAPSIM_TRY_ASSIGN(t, store.view(buffer.id, view_meta));
    CAPSIM_TRY(store.release(buffer.id));
  }
  sim.refs.hold(t.id);
  if (!values) return t.id;  // nothing to fill, and no draws taken
  if (n > 0 && dtype == DType::kFloat32) {
    std::vector<float> values(static_cast<std::size_t>(n));
    for (float& v : values) v = fill ? *fill : rng.uniform(-1.0f, 1.0f);
    CAPSIM_TRY_ASSIGN(const Address at, store.data_address(t.id));
    CAPSIM_TRY(sim.memory.write(at, std::as_bytes(std::span(values))));
  } else if (n > 0) {
    const std::size_t element = dtype_element_bytes(dtype);
    std::vector<std::byte> bytes(static_cast<std::size_t>(n) * element);
    for (std::size_t e = 0; e < static_cast<std::size_t>(n); ++e) {
      const std::uint64_t bits = stored_bits(dtype, fill ? *fill : rng.uniform(-1.0f, 1.0f), !fill);
      for (std::size_t b = 0; b < element; ++b) {
        bytes[e * element + b] = static_cast<std::byte>(bits >> (8 * b));  // little-endian
      }
    }
    CAPSIM_TRY_ASSIGN(const Address at, store.data_address(t.id));
    CAPSIM_TRY(sim.memory.write(at, bytes));
  }
  return t.id;
}

bool WorldContext::raise_if_poisoned(const std::vector<std::uint64_t>& used) {
  std::vector<TensorId> tensors;
  for (std::uint64_t o : used) tensors.push_back(objects.at(o).tensor);
  return sim.raise_if_overwritten(tensors);
}

Status WorldContext::bind_outputs(const std::vector<TensorId>& outputs,
                                  const std::vector<std::string>& names,
                                  const FunctionDef* compiled) {
  if (names.size() > outputs.size()) {
    for (TensorId t : outputs) CAPSIM_TRY(sim.refs.drop(t));
    return make_error(
        fmt::format("outputs: {} names for {} outputs", names.size(), outputs.size()));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (i < names.size() && !names[i].empty()) {
      const bool saved = compiled != nullptr && compiled->mode == CompilationMode::kForward &&
                         !user_visible_output(*compiled, static_cast<std::uint32_t>(i));
      const std::uint64_t o =
          saved ? objects.new_saved_object(outputs[i]) : objects.new_object(outputs[i]);
      CAPSIM_TRY(objects.bind(names[i], o));
      CAPSIM_TRY_ASSIGN(const Address ptr, store.data_address(outputs[i]));
      sim.emit(EventKind::kOutput, {{F::name, names[i]}, {F::ptr, DevicePtr{ptr}}});
    } else {
      CAPSIM_TRY(sim.refs.drop(outputs[i]));
    }
  }
  return {};
}

std::size_t WorldContext::live_storages_of(const std::vector<TensorId>& tensors) const {
  std::size_t n = 0;
  for (TensorId t : tensors) {
    auto tensor = store.tensor(t);
    if (tensor && sim.refs.storage_live(tensor->storage)) ++n;
  }
  return n;
}

}  // namespace capsim
