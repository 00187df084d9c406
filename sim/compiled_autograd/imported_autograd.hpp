// ImportedAutograd: compiled autograd over graphs a recorder of real PyTorch
// walked (the `autograd_graph` and `compiled_backward` actions).
//
// `define` rebuilds an AutogradGraph from a RecordedGraph walk, with one
// tensor per recorded tensor (metadata over no memory: a capture never reads
// values, so a graph costs its nodes and nothing more) and
// a GraphRoot added with one edge into the root node, as autograd adds it.
// `compiled_backward` runs what PyTorch runs on loss.backward() under compiled
// autograd: Phase A (ordered_calls, keys, sizes), the cache over every backward
// of the run, and on a miss the functional capture (sim/compiled_autograd/runner.hpp).
// Its events are the cache decision, the capture, and a `ca_graph` with the
// captured graph's call targets in canonical names (sim/compiled_autograd/fx_target_names.hpp),
// which is what a recorded trace's `ca_graph` is compared with, and, given the
// release's form, the capture node for node (`fx_nodes`, in the form of
// release_form.hpp). No captured graph runs: a recorded
// graph has shapes, not values or node semantics. A recorded graph is a CPU
// graph (the recorder's compiled-autograd half runs on the CPU).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/compiled_autograd/collect.hpp"
#include "sim/compiled_autograd/imported_graph.hpp"
#include "sim/compiled_autograd/release_form.hpp"
#include "sim/core/events.hpp"

namespace capsim {

struct BackwardView;  // sim/compiled_autograd/runner.hpp

class ImportedAutograd {
 public:
  // `form`: the release's graph form, when the trace names a release.
  explicit ImportedAutograd(std::optional<CaGraphForm> form = std::nullopt);
  ~ImportedAutograd();
  ImportedAutograd(const ImportedAutograd&) = delete;
  ImportedAutograd& operator=(const ImportedAutograd&) = delete;

  // Errors name the node, the edge or the tensor: a dangling edge, an input
  // index out of range, an unknown tensor, a cycle, a name defined twice.
  Status define(const DefineAutogradGraph& walk);
  // The events of one backward, their `action` left 0 for the caller to set.
  // `observer` (optional) is shown the backward's graph and, on a miss, the
  // graph just captured, as the scenarios' runner shows them (render/).
  Result<std::vector<Event>> compiled_backward(
      const CompiledBackward& call,
      const std::function<void(const BackwardView&)>& observer = nullptr);

  std::uint64_t captures() const { return cache_.captures(); }

 private:
  struct Built;
  std::optional<CaGraphForm> form_;
  std::map<std::string, std::unique_ptr<Built>> graphs_;
  CompiledAutogradCache cache_;
  std::uint64_t backwards_ = 0;
};

}  // namespace capsim
