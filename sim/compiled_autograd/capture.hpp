// Compiled autograd, Phase B: the initial capture, functional and legacy.
//
// On a cache miss, `capture_backward` walks `ordered_calls` and records an
// FxGraph (docs/compiled-autograd.md, "Phase B"): placeholders `inputs`,
// `sizes`, `scalars` and `hooks`; per node its hooks, its op,
// `validate_outputs` and the fan-in adds; then `end_capture` (the
// final-callbacks stub, the output, `reorder_accumulate_grad_nodes` and
// `dce`).
//
// Every value a node produces is bound to a proxy whose metadata capsim can
// read only through one accessor, and each such read is a MetadataRead record
// naming the NodeCall, the node, the field and the mode. The functional
// capture (after PR 144707) proxies every node as an opaque op and reads
// nothing. The legacy capture (before it) runs the eager decisions on the
// proxies: validate_outputs compares shapes (inserting `sum_to_size`) and
// dtypes (inserting `to`), fan-in picks `add_` or `add` from strides and use
// counts, CopyBackwards and complex grads take `real`, and a non-traceable
// CppNode is rejected. Its graph therefore depends on proxy metadata, which a
// perturbation (`ProxyPerturbation`) changes; the functional graph must not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/fx_graph.hpp"
#include "model/rng.hpp"
#include "sim/compiled_autograd/capture_mode.hpp"
#include "sim/compiled_autograd/collect.hpp"

namespace capsim {

struct MetadataRead {
  std::uint32_t call = 0;  // NodeCall id
  std::string node;        // the node's name
  std::string field;       // "sizes", "strides", "dtype", "use_count", ...
  CaptureMode mode = CaptureMode::kFunctional;
};

// Replaces the metadata of every proxy value with seeded nonsense (sizes,
// strides, dtype, use counts): what a capture does must not depend on it.
struct ProxyPerturbation {
  bool enabled = false;
  std::uint64_t seed = 0;
};

struct CaptureOptions {
  CaptureMode mode = CaptureMode::kFunctional;
  ProxyPerturbation perturb;
};

struct CaptureResult {
  FxGraph graph;
  std::vector<MetadataRead> reads;
};

// The dummy shapes of PyTorch's allocate_dummy(), and of AOT outputs.
inline const Dims kDummySizes{0, 123456789};
inline const Dims kAotDummySizes{0, 0, 0, 0, 123};

Result<CaptureResult> capture_backward(const AutogradGraph& graph,
                                       const CollectedBackward& backward,
                                       const CaptureOptions& options = {});

}  // namespace capsim
