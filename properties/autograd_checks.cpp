// The compiled-autograd property checks (see autograd_checks.hpp).
#include "properties/autograd_checks.hpp"

#include <fmt/format.h>

#include <bit>

#include "sim/compiled_autograd/capture.hpp"

namespace capsim {

namespace {

// A program's backward, built and collected (Phase A) on its own device.
struct Collected {
  OwnedAutogradDevice dev;
  AutogradEngine engine{dev.device()};
  AutogradEngine::BackwardGraph bg;
  CollectedBackward backward;
};

Status collect(const AutogradProgram& p, float offset, Collected& out) {
  Result<Variable> loss = forward(out.engine, p, offset);
  if (!loss) return make_error("forward: " + loss.error().message);
  Result<AutogradEngine::BackwardGraph> bg = out.engine.backward_graph(*loss);
  if (!bg) return make_error("backward graph: " + bg.error().message);
  out.bg = std::move(bg).value();
  Result<CollectedBackward> c = collect_backward(out.bg.graph, out.bg.root, out.dev.store);
  if (!c) return make_error("phase A: " + c.error().message);
  out.backward = std::move(c).value();
  return {};
}

Result<Variable> ones_like_scalar(AutogradEngine& e) {
  const std::vector<float> one{1.0f};
  return e.constant({}, one);
}

}  // namespace

Result<std::vector<std::vector<std::uint32_t>>> leaf_grad_bits(const AutogradEngine& e) {
  std::vector<std::vector<std::uint32_t>> out;
  for (TensorId leaf : e.leaves_with_grad()) {
    CAPSIM_TRY_ASSIGN(const std::vector<float> values, e.read(*e.grad_of(leaf)));
    std::vector<std::uint32_t> bits;
    for (float f : values) bits.push_back(std::bit_cast<std::uint32_t>(f));
    out.push_back(std::move(bits));
  }
  return out;
}

CheckResult check_no_metadata_read(const AutogradProgram& p, CaptureMode mode) {
  Collected c;
  if (Status s = collect(p, 0.0f, c); !s) return s.error().message;
  Result<CaptureResult> r = capture_backward(c.bg.graph, c.backward, {mode, {}});
  if (!r) return "capture: " + r.error().message;
  if (r->reads.empty()) return std::nullopt;
  const MetadataRead& first = r->reads.front();
  return fmt::format("{} proxy metadata reads, the first the {} of {} (NodeCall {})",
                     r->reads.size(), first.field, first.node, first.call);
}

CheckResult check_independent_of_metadata(const AutogradProgram& p, CaptureMode mode) {
  Collected c;
  if (Status s = collect(p, 0.0f, c); !s) return s.error().message;
  Result<CaptureResult> r = capture_backward(c.bg.graph, c.backward, {mode, {}});
  if (!r) return "capture: " + r.error().message;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Result<CaptureResult> q = capture_backward(c.bg.graph, c.backward, {mode, {true, seed}});
    // The graphs themselves, not their text: equal graphs print equal text,
    // and writing four texts per case was a sixth of the property's time.
    if (!q || !(q->graph == r->graph)) {
      return fmt::format("with proxy metadata perturbed (seed {}) the captured graph differs",
                         seed);
    }
  }
  return std::nullopt;
}

CheckResult check_second_backward_hits(const AutogradProgram& p) {
  CompiledAutogradCache cache;
  for (float offset : {0.0f, 1.5f}) {
    Collected c;
    if (Status s = collect(p, offset, c); !s) return s.error().message;
    (void)cache.lookup(c.bg.graph, c.backward);
  }
  if (cache.captures() == 1 && cache.hits() == 1) return std::nullopt;
  return fmt::format("two backwards of one program: {} captures and {} hits, expected 1 and 1",
                     cache.captures(), cache.hits());
}

CheckResult check_runs_like_eager(const AutogradProgram& p, Fault fault) {
  // The ground truth: the eager engine's backward of the same forward.
  OwnedAutogradDevice eager_dev;
  AutogradEngine eager(eager_dev.device());
  Result<Variable> loss = forward(eager, p, 0.0f);
  if (!loss) return "forward: " + loss.error().message;
  Result<Variable> seed = ones_like_scalar(eager);
  if (!seed) return "grad_output: " + seed.error().message;
  if (auto ran = eager.backward(*loss, *seed); !ran) {
    return "eager backward: " + ran.error().message;
  }

  Collected c;
  if (Status s = collect(p, 0.0f, c); !s) return s.error().message;
  Result<CaptureResult> r = capture_backward(c.bg.graph, c.backward);
  if (!r) return "capture: " + r.error().message;
  Result<Variable> root = ones_like_scalar(c.engine);
  if (!root) return "grad_output: " + root.error().message;
  const TensorId roots[] = {root->tensor};
  RunOptions options;
  options.fault = fault;
  const Status ran = run_compiled_backward(c.engine, c.bg.graph, r->graph,
                                           make_call(c.bg, c.backward, roots), options);
  if (!ran) return "compiled backward: " + ran.error().message;
  auto got = leaf_grad_bits(c.engine);
  auto want = leaf_grad_bits(eager);
  if (!got) return "read grad: " + got.error().message;
  if (!want) return "read grad: " + want.error().message;
  if (*got == *want) return std::nullopt;
  return fmt::format("the compiled backward's grads of {} leaves differ from eager's", got->size());
}

}  // namespace capsim
