#include "sim/scenarios/autograd_scenarios.hpp"

#include <fmt/format.h>

#include <bit>
#include <span>

#include "model/digest.hpp"
#include "sim/autograd/compiled_autograd_run.hpp"

namespace capsim {

namespace {

std::vector<float> iota(std::int64_t n, float start = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i) * 0.25f;
  return v;
}

// FNV-1a 64 over the float32 bytes of every leaf's .grad, leaves in order.
Result<Digest> grads_digest(const AutogradEngine& engine) {
  std::uint64_t hash = fnv1a64({});  // the empty input: FNV-1a's offset basis
  for (TensorId leaf : engine.leaves_with_grad()) {
    CAPSIM_TRY_ASSIGN(const std::vector<float> g, engine.read(*engine.grad_of(leaf)));
    hash = fnv1a64(std::as_bytes(std::span(g)), hash);
  }
  return Digest{hash};
}

// Whether two engines that ran the same forward hold bitwise equal .grads.
Result<bool> same_grads(const AutogradEngine& a, const AutogradEngine& b) {
  const std::vector<TensorId> la = a.leaves_with_grad();
  if (la != b.leaves_with_grad()) return false;
  for (TensorId leaf : la) {
    CAPSIM_TRY_ASSIGN(const std::vector<float> x, a.read(*a.grad_of(leaf)));
    CAPSIM_TRY_ASSIGN(const std::vector<float> y, b.read(*b.grad_of(leaf)));
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::bit_cast<std::uint32_t>(x[i]) != std::bit_cast<std::uint32_t>(y[i])) return false;
    }
  }
  return true;
}

// A fresh engine per iteration, as a fresh forward builds a fresh graph. In
// functional mode each compiled backward is checked against an eager
// backward of the same forward on a second device.
Status iterations(int n, CaptureMode mode, bool dynamic, CaptureRunLog& log,
                  const std::function<Result<Variable>(AutogradEngine&, int)>& forward) {
  CompiledAutogradRunner runner(mode, dynamic);
  for (int i = 0; i < n; ++i) {
    OwnedAutogradDevice dev;
    AutogradEngine engine(dev.device());
    CAPSIM_TRY_ASSIGN(const Variable loss, forward(engine, i));
    CAPSIM_TRY(runner.backward(engine, loss, dev.store, log));
    if (mode != CaptureMode::kFunctional) continue;
    OwnedAutogradDevice eager_dev;
    AutogradEngine eager(eager_dev.device());
    CAPSIM_TRY_ASSIGN(const Variable eager_loss, forward(eager, i));
    CAPSIM_TRY_ASSIGN(const Tensor out, eager_dev.store.tensor(eager_loss.tensor));
    std::vector<float> ones(static_cast<std::size_t>(numel(out.meta.sizes)), 1.0f);
    CAPSIM_TRY_ASSIGN(const Variable grad, eager.constant(out.meta.sizes, ones));
    CAPSIM_TRY_ASSIGN(const BackwardResult ran, eager.backward(eager_loss, grad));
    (void)ran;
    CAPSIM_TRY_ASSIGN(const bool same, same_grads(engine, eager));
    if (!same) ++log.mismatches;
    CAPSIM_TRY_ASSIGN(const Digest digest, grads_digest(engine));
    log.emit(EventKind::kCaRun, {{F::backward, log.backwards - 1},
                                 {F::leaves, engine.leaves_with_grad().size()},
                                 {F::digest, digest}});
    log.lines.push_back(fmt::format("ran the compiled backward: grads of {} leaves {} eager",
                                    engine.leaves_with_grad().size(),
                                    same ? "bitwise equal to" : "DIFFER from"));
  }
  return {};
}

// x @ w -> relu -> sum: the tests' basic model.
Result<Variable> mlp(AutogradEngine& e, std::int64_t n) {
  CAPSIM_TRY_ASSIGN(const Variable w, e.leaf({n, n}, iota(n * n)));
  CAPSIM_TRY_ASSIGN(const Variable x, e.constant({n, n}, iota(n * n, -1.0f)));
  CAPSIM_TRY_ASSIGN(const Variable h, e.mm(x, w));
  CAPSIM_TRY_ASSIGN(const Variable r, e.relu(h));
  return e.sum(r);
}

// Plain ops, hooks and shapes.
void add_op_scenarios(std::vector<AutogradScenario>& s) {
  s.push_back({"basic", "test_compiled_autograd.py::test_basic / test_cache_hit",
               "mm, relu, sum three times with the same shapes: one capture, then hits", 1,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(3, m, false, log,
                                   [](AutogradEngine& e, int) { return mlp(e, 4); });
               }});
  s.push_back({"implicit_add", "test_compiled_autograd.py::test_implicit_add",
               "x*x + x: fan-in into one leaf is a torch.add in the graph", 1,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(2, m, false, log,
                                   [](AutogradEngine& e, int) -> Result<Variable> {
                                     CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                                     CAPSIM_TRY_ASSIGN(const Variable sq, e.mul(x, x));
                                     CAPSIM_TRY_ASSIGN(const Variable y, e.add(sq, x));
                                     return e.sum(y);
                                   });
               }});
  s.push_back({"tensor_grad_hook", "test_compiled_autograd.py::test_tensor_grad_hook1/2/3",
               "a tensor hook, a node pre-hook and a node post-hook are call_hook nodes", 1,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(2, m, false, log,
                                   [](AutogradEngine& e, int) -> Result<Variable> {
                                     CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                                     CAPSIM_TRY_ASSIGN(const Variable y, e.mul(x, x));
                                     CAPSIM_TRY(e.register_tensor_hook(y, 2.0f));
                                     CAPSIM_TRY(e.register_prehook(y.grad_fn->node, 3.0f));
                                     CAPSIM_TRY(e.register_posthook(y.grad_fn->node, 0.5f));
                                     return e.sum(y);
                                   });
               }});
  s.push_back({"dynamic_shapes", "test_compiled_autograd.py::test_dynamic_shapes",
               "sizes 4, 5, 6: the first change marks the size dynamic (2 captures), then hits", 2,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(3, m, false, log,
                                   [](AutogradEngine& e, int i) { return mlp(e, 4 + i); });
               }});
  s.push_back(
      {"torch_compile_api_dynamic_shapes",
       "test_compiled_autograd.py::test_torch_compile_api_dynamic_shapes",
       "dynamic=True: sizes 4, 5, 6 in one capture", 1, [](CaptureMode m, CaptureRunLog& log) {
         return iterations(3, m, true, log, [](AutogradEngine& e, int i) { return mlp(e, 4 + i); });
       }});
}

// Python and C++ autograd.Functions.
void add_custom_function_scenarios(std::vector<AutogradScenario>& s) {
  s.push_back({"custom_fn_saved_tensors", "test_compiled_autograd.py::test_custom_fn_saved_tensors",
               "a Python autograd.Function is lifted as call_backward", 1,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(
                     2, m, false, log, [](AutogradEngine& e, int) -> Result<Variable> {
                       CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                       CustomFunction fn;
                       fn.name = "MyFn";
                       CAPSIM_TRY_ASSIGN(const Variable y, e.apply(fn, std::vector<Variable>{x}));
                       return e.sum(y);
                     });
               }});
  auto cpp_node = [](bool traceable) {
    return [traceable](CaptureMode m, CaptureRunLog& log) {
      return iterations(2, m, false, log, [traceable](AutogradEngine& e, int) -> Result<Variable> {
        CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
        CustomFunction fn;
        fn.name = "CustomOpAutogradFunction";
        fn.kind = CustomFunctionKind::kCpp;
        fn.traceable = traceable;
        CAPSIM_TRY_ASSIGN(const Variable y, e.apply(fn, std::vector<Variable>{x}));
        return e.sum(y);
      });
    };
  };
  s.push_back({"autograd_cpp_node_basic", "test_compiled_autograd.py::test_autograd_cpp_node_basic",
               "a traceable C++ Function is ops.CppNode<name><k>", 1, cpp_node(true)});
  s.push_back({"autograd_cpp_node_non_traceable",
               "test_compiled_autograd.py::test_autograd_cpp_node_non_traceable "
               "(pre: test_non_traceable_autograd_cpp_node)",
               "a non-traceable C++ Function: captured after the refactor, an error before", 1,
               cpp_node(false)});
  s.push_back({"autograd_cpp_node_id", "test_compiled_autograd.py::test_autograd_cpp_node_id",
               "two different C++ Function classes do not share a graph: 2 captures", 2,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(
                     2, m, false, log, [](AutogradEngine& e, int i) -> Result<Variable> {
                       CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                       CustomFunction fn;
                       fn.name = i == 0 ? "CustomOpAutogradFunction" : "CustomOpAutogradFunction2";
                       fn.kind = CustomFunctionKind::kCpp;
                       CAPSIM_TRY_ASSIGN(const Variable y, e.apply(fn, std::vector<Variable>{x}));
                       return e.sum(y);
                     });
               }});
}

// An AOT region with a subclass output, CopySlices, CopyBackwards.
void add_region_and_view_scenarios(std::vector<AutogradScenario>& s) {
  s.push_back({"tensor_subclass_basic", "test_compiled_autograd.py::test_tensor_subclass_basic",
               "a TwoTensor through an AOT region: prologue, copied graph, make_subclass", 1,
               [](CaptureMode m, CaptureRunLog& log) {
                 return iterations(
                     1, m, false, log, [](AutogradEngine& e, int) -> Result<Variable> {
                       CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                       CAPSIM_TRY_ASSIGN(const Variable y, e.leaf({4}, iota(4, 2.0f)));
                       CAPSIM_TRY_ASSIGN(const Variable z, e.compiled_mul(x, y, true));
                       return e.sum(z);
                     });
               }});
  s.push_back(
      {"setitem", "test_autograd.py::test_setitem (wrapped; CopySlices)",
       "an in-place mul_ into a slice: CopySlices is prologue, inner op, epilogue", 1,
       [](CaptureMode m, CaptureRunLog& log) {
         return iterations(2, m, false, log, [](AutogradEngine& e, int) -> Result<Variable> {
           CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
           CAPSIM_TRY_ASSIGN(Variable base, e.clone(x));
           CAPSIM_TRY_ASSIGN(const Variable part, e.slice(base, 1, 3));
           CAPSIM_TRY_ASSIGN(const Variable two, e.constant({2}, std::vector<float>{2, 2}));
           CAPSIM_TRY(e.mul_(part, two));
           CAPSIM_TRY_ASSIGN(base, e.variable(base.tensor));
           return e.sum(base);
         });
       }});
  s.push_back(
      {"custom_fn_output_metadata", "test_compiled_autograd.py::test_custom_fn_output_metadata",
       "a float64 copy_ (CopyBackwards): no implicit _to_copy in the functional graph", 1,
       [](CaptureMode m, CaptureRunLog& log) {
         return iterations(1, m, false, log, [](AutogradEngine& e, int) -> Result<Variable> {
           CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
           CAPSIM_TRY_ASSIGN(Variable y, e.zeros({4}, DType::kFloat64));
           CAPSIM_TRY_ASSIGN(y, e.copy_(y, x));
           return e.sum(y);
         });
       }});
}

// In the order `capsim capture --list` prints them.
std::vector<AutogradScenario> make() {
  std::vector<AutogradScenario> s;
  add_op_scenarios(s);
  add_custom_function_scenarios(s);
  add_region_and_view_scenarios(s);
  return s;
}

}  // namespace

const std::vector<AutogradScenario>& builtin_autograd_scenarios() {
  static const std::vector<AutogradScenario> all = make();
  return all;
}

const AutogradScenario* find_autograd_scenario(const std::string& name) {
  for (const AutogradScenario& s : builtin_autograd_scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace capsim
