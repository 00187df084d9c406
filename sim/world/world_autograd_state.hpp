// WorldAutograd's state, which its three files share (world_autograd.cpp,
// world_compiled_autograd.cpp, world_capture.cpp); include only from those.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/fx_graph.hpp"
#include "sim/autograd/autograd_engine.hpp"
#include "sim/compiled_autograd/collect.hpp"
#include "sim/world/world_autograd.hpp"

namespace capsim {

// A compiled-autograd capture lowered to a tree-manager function.
struct WorldAutograd::LoweredBackward {
  std::unique_ptr<FunctionDef> def;
  std::vector<std::uint32_t> grad_of;  // per output: the call input it is the grad of
};

// Autograd over the World's own tensors (world_autograd.cpp). The engine
// works on the World's device and default pool, but owns nothing between
// actions: what it makes is handed to the TensorRefs at once, and the graph's
// own references (the tensors its nodes save) are holds there too, so that
// one reference count decides every lifetime, as in PyTorch.
struct WorldAutograd::State {
  explicit State(AutogradDevice device) : engine(device) {}
  AutogradEngine engine;
  // Per node: the tensors it saved, held until a backward without
  // retain_graph frees them.
  std::map<AutogradNodeId, std::vector<TensorId>> saved_holds;
  // Leaves that require grad, by tensor: the object whose .grad they fill.
  std::map<TensorId, std::uint64_t> leaf_objects;
  // Compiled autograd: the cache over every compiled backward, and per cache
  // entry its latest capture and, where it lowers, its tree-manager function.
  CompiledAutogradCache cache;
  // The legacy capture's own cache (a negative control's model, never
  // lowered), so that its entries never meet the functional ones.
  CompiledAutogradCache legacy_cache;
  std::uint64_t backwards = 0;
  struct Entry {
    FxGraph captured;
    std::string name;  // CompiledAutograd<n>, after the capture
    // Per set of call sizes (the DYNAMIC slots' values), the capture lowered
    // and specialized to them: the tree manager keys its recordings by them.
    std::map<std::vector<std::int64_t>, LoweredBackward> functions;
    std::string why_not;  // the lowering's error: the capture does not lower
  };
  std::map<std::uint64_t, Entry> entries;
};

}  // namespace capsim
