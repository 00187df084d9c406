// Random autograd programs (see autograd_programs.hpp).
#include "properties/autograd_programs.hpp"

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

Result<Variable> forward(AutogradEngine& e, const AutogradProgram& p, float offset) {
  std::vector<Variable> vars;
  for (int i = 0; i < p.leaves; ++i) {
    const std::vector<float> v{1.0f + offset, -2.0f, 3.0f + static_cast<float>(i), 0.5f};
    CAPSIM_TRY_ASSIGN(Variable leaf, e.leaf({4}, v));
    vars.push_back(leaf);
  }
  const std::vector<float> two{2.0f, 2.0f};
  for (const AutogradStep& s : p.steps) {
    const Variable a = vars[s.a % vars.size()];
    const Variable b = vars[s.b % vars.size()];
    switch (static_cast<AutogradStepKind>(s.kind)) {
      case AutogradStepKind::kMul: {
        CAPSIM_TRY_ASSIGN(Variable v, e.mul(a, b));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kAdd: {
        CAPSIM_TRY_ASSIGN(Variable v, e.add(a, b));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kRelu: {
        CAPSIM_TRY_ASSIGN(Variable v, e.relu(a));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kClone: {
        CAPSIM_TRY_ASSIGN(Variable v, e.clone(a));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kCopySlices: {
        CAPSIM_TRY_ASSIGN(const Variable base, e.clone(a));
        CAPSIM_TRY_ASSIGN(const Variable part, e.slice(base, 1, 3));
        CAPSIM_TRY_ASSIGN(const Variable c, e.constant({2}, two));
        CAPSIM_TRY(e.mul_(part, c));
        CAPSIM_TRY_ASSIGN(Variable v, e.variable(base.tensor));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kCopyBackwards: {
        CAPSIM_TRY_ASSIGN(Variable wide, e.zeros({4}, DType::kFloat64));
        CAPSIM_TRY_ASSIGN(wide, e.copy_(wide, a));
        CAPSIM_TRY_ASSIGN(Variable v, e.to(wide, DType::kFloat32));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kPyFunction:
      case AutogradStepKind::kCppFunction: {
        CustomFunction fn;
        fn.name = s.kind == static_cast<int>(AutogradStepKind::kPyFunction) ? "MyFn" : "MyCppFn";
        fn.kind = s.kind == static_cast<int>(AutogradStepKind::kPyFunction)
                      ? CustomFunctionKind::kPython
                      : CustomFunctionKind::kCpp;
        CAPSIM_TRY_ASSIGN(Variable v, e.apply(fn, std::vector<Variable>{a}));
        vars.push_back(v);
        break;
      }
      case AutogradStepKind::kAot:
      case AutogradStepKind::kAotSubclass: {
        CAPSIM_TRY_ASSIGN(
            Variable v,
            e.compiled_mul(a, b, s.kind == static_cast<int>(AutogradStepKind::kAotSubclass)));
        vars.push_back(v);
        break;
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
