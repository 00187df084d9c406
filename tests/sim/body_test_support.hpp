// Helpers for tests that run function bodies: a small simulated device with
// random tensors, and FunctionDefs written inline.
#pragma once

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "model/caching_allocator.hpp"
#include "sim/core/eager_oracle.hpp"

namespace capsim::testing {

struct Device {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  std::mt19937 rng{7};

  // A fresh contiguous tensor of `sizes` with values drawn from `rng`.
  TensorId tensor(const Dims& sizes) {
    const Tensor t = store.empty(sizes).value();
    std::vector<float> values(static_cast<std::size_t>(numel(t.meta)));
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    for (float& v : values) v = uniform(rng);
    if (!values.empty()) {
      REQUIRE(memory.write(store.data_address(t.id).value(), std::as_bytes(std::span(values))));
    }
    return t.id;
  }
  // A view of `base` with `sizes`, contiguous strides and `offset`.
  TensorId view(TensorId base, const Dims& sizes, std::int64_t offset) {
    TensorMeta meta = store.tensor(base).value().meta;
    meta.sizes = sizes;
    meta.strides = contiguous_strides(sizes);
    meta.storage_offset = offset;
    return store.view(base, meta).value().id;
  }
};

inline BodyOp op(BodyOpKind kind, std::vector<ValueIndex> args) {
  BodyOp o;
  o.kind = kind;
  o.args = std::move(args);
  return o;
}

inline FunctionDef def_of(std::size_t inputs, std::vector<BodyOp> ops,
                          std::vector<ValueIndex> outputs) {
  FunctionDef def;
  def.name = "f";
  for (std::size_t i = 0; i < inputs; ++i) def.input_names.push_back("in" + std::to_string(i));
  def.ops = std::move(ops);
  def.outputs = std::move(outputs);
  return def;
}

}  // namespace capsim::testing
