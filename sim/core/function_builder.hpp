// FunctionBuilder: writes a FunctionDef the way one writes the Python body.
//
//   FunctionBuilder f("foo", CompilationMode::kInference, {"x"});
//   auto y = f.mul(f.input(0), f.input(0));
//   FunctionDef def = f.returns({f.mul(y, f.input(0))});
//
// Used by the built-in scenarios, the tests and the property generators.
#pragma once

#include <string>
#include <vector>

#include "sim/core/function_def.hpp"

namespace capsim {

class FunctionBuilder {
 public:
  FunctionBuilder(std::string name, CompilationMode mode, std::vector<std::string> input_names) {
    def_.name = std::move(name);
    def_.mode = mode;
    def_.input_names = std::move(input_names);
  }

  ValueIndex input(std::uint32_t i) const { return i; }
  ValueIndex add(ValueIndex a, ValueIndex b) { return op(BodyOpKind::kAdd, {a, b}); }
  ValueIndex sub(ValueIndex a, ValueIndex b) { return op(BodyOpKind::kSub, {a, b}); }
  ValueIndex mul(ValueIndex a, ValueIndex b) { return op(BodyOpKind::kMul, {a, b}); }
  ValueIndex neg(ValueIndex a) { return op(BodyOpKind::kNeg, {a}); }
  ValueIndex relu(ValueIndex a) { return op(BodyOpKind::kRelu, {a}); }
  ValueIndex sum(ValueIndex a) { return op(BodyOpKind::kSum, {a}); }
  ValueIndex mm(ValueIndex a, ValueIndex b) { return op(BodyOpKind::kMm, {a, b}); }
  ValueIndex clone(ValueIndex a) { return op(BodyOpKind::kClone, {a}); }
  ValueIndex add_(ValueIndex a, ValueIndex b) { return op(BodyOpKind::kAddInplace, {a, b}); }
  ValueIndex copy_(ValueIndex a, ValueIndex b) { return op(BodyOpKind::kCopyInplace, {a, b}); }
  ValueIndex alias(ValueIndex a) { return op(BodyOpKind::kAlias, {a}); }
  ValueIndex t(ValueIndex a) { return op(BodyOpKind::kTranspose, {a}); }
  ValueIndex relu_backward(ValueIndex grad, ValueIndex result) {
    return op(BodyOpKind::kReluBackward, {grad, result});
  }
  ValueIndex full(Dims sizes, float value) {
    BodyOp o;
    o.kind = BodyOpKind::kFull;
    o.sizes = std::move(sizes);
    o.scalar = value;
    return push(std::move(o));
  }
  // A generic op (an aten op capsim has no exact kernel for) with one fresh
  // tensor result of `result`'s metadata and its non-tensor arguments as
  // `attrs`; its values are generic_mix's.
  ValueIndex generic(std::string target, std::vector<ValueIndex> args, TensorMeta result,
                     std::string attrs = {}) {
    BodyOp o;
    o.kind = BodyOpKind::kGeneric;
    o.args = std::move(args);
    o.generic.target = std::move(target);
    o.generic.attrs = std::move(attrs);
    o.generic.results.emplace_back(std::move(result));
    return push(std::move(o));
  }
  ValueIndex slice(ValueIndex a, std::int64_t start, std::int64_t end) {
    BodyOp o;
    o.kind = BodyOpKind::kSlice;
    o.args = {a};
    o.start = start;
    o.end = end;
    return push(std::move(o));
  }

  FunctionBuilder& static_inputs(std::vector<std::uint32_t> idxs) {
    def_.static_input_idxs = std::move(idxs);
    return *this;
  }
  FunctionBuilder& params(std::vector<std::uint32_t> idxs) {
    def_.param_input_idxs = std::move(idxs);
    return *this;
  }
  FunctionDef returns(std::vector<ValueIndex> outputs) {
    def_.outputs = std::move(outputs);
    return def_;
  }

 private:
  ValueIndex op(BodyOpKind kind, std::vector<ValueIndex> args) {
    BodyOp o;
    o.kind = kind;
    o.args = std::move(args);
    return push(std::move(o));
  }
  ValueIndex push(BodyOp o) {
    def_.ops.push_back(std::move(o));
    return static_cast<ValueIndex>(def_.input_names.size() + def_.ops.size() - 1);
  }
  FunctionDef def_;
};

}  // namespace capsim
