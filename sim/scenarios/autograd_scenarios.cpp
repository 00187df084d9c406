// The built-in compiled-autograd scenarios of `capsim capture` (see autograd_scenarios.hpp):
// plain ops and hooks, custom functions, and the AOT region with CopySlices and CopyBackwards.
#include "sim/scenarios/autograd_scenarios.hpp"

#include <fmt/format.h>

namespace capsim {

namespace {

using Forward = std::function<Result<Variable>(AutogradEngine&, int)>;

std::vector<float> iota(std::int64_t n, float start = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i) * 0.25f;
  return v;
}

AutogradScenario scenario(std::string name, std::string mirrors, std::string description,
                          std::uint64_t expected_captures, int backwards, Forward forward,
                          bool dynamic = false) {
  AutogradScenario s;
  s.name = std::move(name);
  s.mirrors = std::move(mirrors);
  s.description = std::move(description);
  s.expected_captures = expected_captures;
  s.backwards = backwards;
  s.dynamic = dynamic;
  s.forward = std::move(forward);
  return s;
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
  s.push_back(scenario("basic", "test_compiled_autograd.py::test_basic / test_cache_hit",
                       "mm, relu, sum three times with the same shapes: one capture, then hits", 1,
                       3, [](AutogradEngine& e, int) { return mlp(e, 4); }));
  s.push_back(scenario("implicit_add", "test_compiled_autograd.py::test_implicit_add",
                       "x*x + x: fan-in into one leaf is a torch.add in the graph", 1, 2,
                       [](AutogradEngine& e, int) -> Result<Variable> {
                         CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                         CAPSIM_TRY_ASSIGN(const Variable sq, e.mul(x, x));
                         CAPSIM_TRY_ASSIGN(const Variable y, e.add(sq, x));
                         return e.sum(y);
                       }));
  s.push_back(scenario("tensor_grad_hook", "test_compiled_autograd.py::test_tensor_grad_hook1/2/3",
                       "a tensor hook, a node pre-hook and a node post-hook are call_hook nodes", 1,
                       2, [](AutogradEngine& e, int) -> Result<Variable> {
                         CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                         CAPSIM_TRY_ASSIGN(const Variable y, e.mul(x, x));
                         CAPSIM_TRY(e.register_tensor_hook(y, 2.0f));
                         CAPSIM_TRY(e.register_prehook(y.grad_fn->node, 3.0f));
                         CAPSIM_TRY(e.register_posthook(y.grad_fn->node, 0.5f));
                         return e.sum(y);
                       }));
  s.push_back(
      scenario("dynamic_shapes", "test_compiled_autograd.py::test_dynamic_shapes",
               "sizes 4, 5, 6: the first change marks the size dynamic (2 captures), then hits", 2,
               3, [](AutogradEngine& e, int i) { return mlp(e, 4 + i); }));
  s.push_back(scenario(
      "torch_compile_api_dynamic_shapes",
      "test_compiled_autograd.py::test_torch_compile_api_dynamic_shapes",
      "dynamic=True: sizes 4, 5, 6 in one capture", 1, 3,
      [](AutogradEngine& e, int i) { return mlp(e, 4 + i); },
      /*dynamic=*/true));
}

// A C++ torch::autograd::Function named `name`, once over a leaf.
Result<Variable> cpp_node(AutogradEngine& e, std::string name, bool traceable) {
  CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
  CustomFunction fn;
  fn.name = std::move(name);
  fn.kind = CustomFunctionKind::kCpp;
  fn.traceable = traceable;
  CAPSIM_TRY_ASSIGN(const Variable y, e.apply(fn, std::vector<Variable>{x}));
  return e.sum(y);
}

// Python and C++ autograd.Functions.
void add_custom_function_scenarios(std::vector<AutogradScenario>& s) {
  s.push_back(scenario("custom_fn_saved_tensors",
                       "test_compiled_autograd.py::test_custom_fn_saved_tensors",
                       "a Python autograd.Function is lifted as call_backward", 1, 2,
                       [](AutogradEngine& e, int) -> Result<Variable> {
                         CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                         CustomFunction fn;
                         fn.name = "MyFn";
                         CAPSIM_TRY_ASSIGN(const Variable y, e.apply(fn, std::vector<Variable>{x}));
                         return e.sum(y);
                       }));
  s.push_back(scenario(
      "autograd_cpp_node_basic", "test_compiled_autograd.py::test_autograd_cpp_node_basic",
      "a traceable C++ Function is ops.CppNode<name><k>", 1, 2,
      [](AutogradEngine& e, int) { return cpp_node(e, "CustomOpAutogradFunction", true); }));
  s.push_back(scenario(
      "autograd_cpp_node_non_traceable",
      "test_compiled_autograd.py::test_autograd_cpp_node_non_traceable "
      "(pre: test_non_traceable_autograd_cpp_node)",
      "a non-traceable C++ Function: captured after the refactor, an error before", 1, 2,
      [](AutogradEngine& e, int) { return cpp_node(e, "CustomOpAutogradFunction", false); }));
  s.push_back(scenario(
      "autograd_cpp_node_id", "test_compiled_autograd.py::test_autograd_cpp_node_id",
      "two different C++ Function classes do not share a graph: 2 captures", 2, 2,
      [](AutogradEngine& e, int i) {
        return cpp_node(e, i == 0 ? "CustomOpAutogradFunction" : "CustomOpAutogradFunction2", true);
      }));
}

// An AOT region with a subclass output, CopySlices, CopyBackwards.
void add_region_and_view_scenarios(std::vector<AutogradScenario>& s) {
  s.push_back(scenario("tensor_subclass_basic",
                       "test_compiled_autograd.py::test_tensor_subclass_basic",
                       "a TwoTensor through an AOT region: prologue, copied graph, make_subclass",
                       1, 1, [](AutogradEngine& e, int) -> Result<Variable> {
                         CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                         CAPSIM_TRY_ASSIGN(const Variable y, e.leaf({4}, iota(4, 2.0f)));
                         CAPSIM_TRY_ASSIGN(const Variable z, e.compiled_mul(x, y, true));
                         return e.sum(z);
                       }));
  s.push_back(
      scenario("setitem", "test_autograd.py::test_setitem (wrapped; CopySlices)",
               "an in-place mul_ into a slice: CopySlices is prologue, inner op, epilogue", 1, 2,
               [](AutogradEngine& e, int) -> Result<Variable> {
                 CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
                 CAPSIM_TRY_ASSIGN(Variable base, e.clone(x));
                 CAPSIM_TRY_ASSIGN(const Variable part, e.slice(base, 1, 3));
                 CAPSIM_TRY_ASSIGN(const Variable two, e.constant({2}, std::vector<float>{2, 2}));
                 CAPSIM_TRY(e.mul_(part, two));
                 CAPSIM_TRY_ASSIGN(base, e.variable(base.tensor));
                 return e.sum(base);
               }));
  s.push_back(scenario(
      "custom_fn_output_metadata", "test_compiled_autograd.py::test_custom_fn_output_metadata",
      "a float64 copy_ (CopyBackwards): no implicit _to_copy in the functional graph", 1, 1,
      [](AutogradEngine& e, int) -> Result<Variable> {
        CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4)));
        CAPSIM_TRY_ASSIGN(Variable y, e.zeros({4}, DType::kFloat64));
        CAPSIM_TRY_ASSIGN(y, e.copy_(y, x));
        return e.sum(y);
      }));
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
