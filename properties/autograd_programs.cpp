// Random autograd programs (see autograd_programs.hpp).
#include "properties/autograd_programs.hpp"

#include <optional>
#include <sstream>

namespace capsim {

const char* autograd_step_name(AutogradStepKind s) {
  switch (s) {
#define CAPSIM_NAME_(e, name) \
  case AutogradStepKind::e: return name;
    CAPSIM_AUTOGRAD_STEP_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
    default: return "?";
  }
}

std::ostream& operator<<(std::ostream& os, const AutogradProgram& p) {
  os << "leaves=" << p.leaves << "; ";
  for (const AutogradStep& s : p.steps) {
    os << autograd_step_name(static_cast<AutogradStepKind>(s.kind)) << "(v" << s.a << ", v" << s.b
       << "); ";
  }
  return os << "loss = sum(every variable)";
}

std::string describe(const AutogradProgram& p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

namespace {

// The variable one step makes, or none for a step that only registers a hook.
Result<std::optional<Variable>> run_step(AutogradEngine& e, const AutogradStep& s,
                                         const Variable& a, const Variable& b) {
  using Made = std::optional<Variable>;
  const auto kind = static_cast<AutogradStepKind>(s.kind);
  switch (kind) {
    case AutogradStepKind::kMul: {
      CAPSIM_TRY_ASSIGN(Variable v, e.mul(a, b));
      return Made(v);
    }
    case AutogradStepKind::kAdd: {
      CAPSIM_TRY_ASSIGN(Variable v, e.add(a, b));
      return Made(v);
    }
    case AutogradStepKind::kRelu: {
      CAPSIM_TRY_ASSIGN(Variable v, e.relu(a));
      return Made(v);
    }
    case AutogradStepKind::kClone: {
      CAPSIM_TRY_ASSIGN(Variable v, e.clone(a));
      return Made(v);
    }
    case AutogradStepKind::kCopySlices: {
      const std::vector<float> two{2.0f, 2.0f};
      CAPSIM_TRY_ASSIGN(const Variable base, e.clone(a));
      CAPSIM_TRY_ASSIGN(const Variable part, e.slice(base, 1, 3));
      CAPSIM_TRY_ASSIGN(const Variable c, e.constant({2}, two));
      CAPSIM_TRY(e.mul_(part, c));
      CAPSIM_TRY_ASSIGN(Variable v, e.variable(base.tensor));
      return Made(v);
    }
    case AutogradStepKind::kCopyBackwards: {
      CAPSIM_TRY_ASSIGN(Variable wide, e.zeros({4}, DType::kFloat64));
      CAPSIM_TRY_ASSIGN(wide, e.copy_(wide, a));
      CAPSIM_TRY_ASSIGN(Variable v, e.to(wide, DType::kFloat32));
      return Made(v);
    }
    case AutogradStepKind::kPyFunction:
    case AutogradStepKind::kCppFunction: {
      const bool python = kind == AutogradStepKind::kPyFunction;
      CustomFunction fn;
      fn.name = python ? "MyFn" : "MyCppFn";
      fn.kind = python ? CustomFunctionKind::kPython : CustomFunctionKind::kCpp;
      CAPSIM_TRY_ASSIGN(Variable v, e.apply(fn, std::vector<Variable>{a}));
      return Made(v);
    }
    case AutogradStepKind::kAot:
    case AutogradStepKind::kAotSubclass: {
      CAPSIM_TRY_ASSIGN(Variable v, e.compiled_mul(a, b, kind == AutogradStepKind::kAotSubclass));
      return Made(v);
    }
    case AutogradStepKind::kTensorHook: CAPSIM_TRY(e.register_tensor_hook(a, 2.0f)); break;
    case AutogradStepKind::kPreHook:
      if (a.grad_fn) CAPSIM_TRY(e.register_prehook(a.grad_fn->node, 0.5f));
      break;
    case AutogradStepKind::kPostHook:
      if (a.grad_fn) CAPSIM_TRY(e.register_posthook(a.grad_fn->node, 3.0f));
      break;
    default: break;
  }
  return Made();
}

}  // namespace

Result<Variable> forward(AutogradEngine& e, const AutogradProgram& p, float offset) {
  std::vector<Variable> vars;
  for (int i = 0; i < p.leaves; ++i) {
    const std::vector<float> v{1.0f + offset, -2.0f, 3.0f + static_cast<float>(i), 0.5f};
    CAPSIM_TRY_ASSIGN(Variable leaf, e.leaf({4}, v));
    vars.push_back(leaf);
  }
  for (const AutogradStep& s : p.steps) {
    const Variable a = vars[s.a % vars.size()];
    const Variable b = vars[s.b % vars.size()];
    CAPSIM_TRY_ASSIGN(const std::optional<Variable> made, run_step(e, s, a, b));
    if (made) vars.push_back(*made);
  }
  // loss = sum of every variable, so that every node is reachable and leaves
  // get fan-in.
  Variable total = vars.front();
  for (std::size_t i = 1; i < vars.size(); ++i) {
    CAPSIM_TRY_ASSIGN(total, e.add(total, vars[i]));
  }
  return e.sum(total);
}

}  // namespace capsim
