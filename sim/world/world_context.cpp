#include "sim/world/world_context.hpp"

#include <fmt/format.h>

#include <span>

#include "model/rng.hpp"

namespace capsim {

Result<TensorId> WorldContext::fresh_tensor(const Dims& sizes, std::optional<float> fill,
                                            std::int64_t offset) {
  if (offset < 0 || offset > 64) {
    return make_error(fmt::format("offset: {} is outside [0, 64]", offset));
  }
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, contiguous_meta(sizes));
  const std::int64_t n = numel(meta);
  CAPSIM_TRY_ASSIGN(const Tensor buffer, store.empty({n + offset}));
  TensorMeta view_meta = meta;
  view_meta.storage_offset = offset;
  CAPSIM_TRY_ASSIGN(const Tensor t, store.view(buffer.id, view_meta));
  CAPSIM_TRY(store.release(buffer.id));
  sim.refs.hold(t.id);
  if (n > 0) {
    std::vector<float> values(static_cast<std::size_t>(n));
    for (float& v : values) v = fill ? *fill : rng.uniform(-1.0f, 1.0f);
    CAPSIM_TRY_ASSIGN(const Address at, store.data_address(t.id));
    CAPSIM_TRY(sim.memory.write(at, std::as_bytes(std::span(values))));
  }
  return t.id;
}

bool WorldContext::raise_if_poisoned(const std::vector<std::uint64_t>& used) {
  std::vector<TensorId> tensors;
  for (std::uint64_t o : used) tensors.push_back(objects.at(o).tensor);
  return sim.raise_if_overwritten(tensors);
}

Status WorldContext::bind_outputs(const std::vector<TensorId>& outputs,
                                  const std::vector<std::string>& names) {
  if (names.size() > outputs.size()) {
    for (TensorId t : outputs) CAPSIM_TRY(sim.refs.drop(t));
    return make_error(
        fmt::format("outputs: {} names for {} outputs", names.size(), outputs.size()));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (i < names.size() && !names[i].empty()) {
      const std::uint64_t o = objects.new_object(outputs[i]);
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
