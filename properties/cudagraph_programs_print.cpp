// The printer of generated programs (see cudagraph_programs.hpp): one line per
// function and per action, in a Python-like notation, for counterexamples.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "properties/cudagraph_programs.hpp"
#include "traces/format/program_json.hpp"

namespace capsim {

namespace {

std::string dims(const Dims& d) {
  std::string out = "[";
  for (std::size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + std::to_string(d[i]);
  return out + "]";
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

std::string describe_function(const FunctionDef& def) {
  std::vector<std::string> inputs;
  for (std::uint32_t i = 0; i < def.num_inputs(); ++i) {
    std::string tag;
    if (std::count(def.param_input_idxs.begin(), def.param_input_idxs.end(), i)) tag = "param";
    if (std::count(def.static_input_idxs.begin(), def.static_input_idxs.end(), i)) {
      tag += tag.empty() ? "static" : ",static";
    }
    inputs.push_back(fmt::format("v{}{}", i, tag.empty() ? "" : ":" + tag));
  }
  std::string out =
      fmt::format("def {}({}):  # {}\n", def.name, join(inputs), compilation_mode_name(def.mode));
  const std::size_t n = def.num_inputs();
  for (std::size_t k = 0; k < def.ops.size(); ++k) {
    const BodyOp& op = def.ops[k];
    std::vector<std::string> args;
    for (ValueIndex v : op.args) args.push_back(fmt::format("v{}", v));
    if (op.kind == BodyOpKind::kSlice) {
      args.push_back(fmt::format("{}:{}", op.start, op.end));
    } else if (op.kind == BodyOpKind::kFull) {
      args.push_back(dims(op.sizes));
      args.push_back(fmt::format("{}", op.scalar));
    }
    std::string cut;
    for (const PartitionCut& c : def.partition_cuts) {
      if (k >= c.begin && k < c.end)
        cut = fmt::format("  # cut: {}", partition_cut_reason_name(c.reason));
    }
    out += fmt::format("    v{} = {}({}){}\n", n + k, body_op_name(op.kind), join(args), cut);
  }
  std::vector<std::string> outs;
  for (ValueIndex v : def.outputs) outs.push_back(fmt::format("v{}", v));
  out += fmt::format("    return {}\n", join(outs));
  return out;
}

namespace {

// One line of Python per action kind, as a reader of the counterexample
// would write the program.
std::string line_of(const NewTensor& a) {
  std::string what = a.parameter ? "Parameter(randn" : "randn";
  if (a.fill) what = fmt::format("{}full", a.parameter ? "Parameter(" : "");
  std::string extra = a.fill ? fmt::format(", {}", *a.fill) : "";
  if (a.offset != 0) extra += fmt::format(", offset={}", a.offset);
  if (a.strides) extra += fmt::format(", strides={}", dims(*a.strides));
  if (a.requires_grad) extra += ", requires_grad=True";
  return fmt::format("{} = {}({}{}){}", a.name, what, dims(a.sizes), extra, a.parameter ? ")" : "");
}
std::string line_of(const MarkStatic& a) {
  return fmt::format("mark_static_address({}, guard={})", a.name, a.guard ? "True" : "False");
}
std::string line_of(const Call& a) {
  std::vector<std::string> outs;
  for (const std::string& o : a.outputs) outs.push_back(o.empty() ? "_" : o);
  std::string line =
      fmt::format("{} = {}({})", outs.empty() ? "_" : join(outs), a.function, join(a.args));
  if (a.new_invocation) line += *a.new_invocation ? "  # new invocation" : "  # same invocation";
  if (!a.consume.empty()) line += "  # consumes " + join(a.consume);
  if (!a.int_key.empty()) {
    std::vector<std::string> k;
    for (auto v : a.int_key) k.push_back(std::to_string(v));
    line += "  # int key " + join(k);
  }
  return line;
}
std::string line_of(const EagerCall& a) {
  return fmt::format("{} = eager {}({})", join(a.outputs), a.function, join(a.args));
}
std::string line_of(const Del& a) {
  return "del " + a.name;
}
std::string line_of(const Read& a) {
  return fmt::format("read({})", a.name);
}
std::string line_of(const ReassignData& a) {
  return fmt::format("{}.data = {}", a.name,
                     a.fill ? fmt::format("full_like({}, {})", a.name, *a.fill)
                            : fmt::format("randn_like({})", a.name));
}
std::string line_of(const MarkStepBegin&) {
  return "cudagraph_mark_step_begin()";
}
std::string line_of(const CreateOptimizer& a) {
  const std::string momentum = a.kind == OptimizerKind::kSgd && a.sgd.momentum != 0.0f
                                   ? fmt::format(", momentum={}", a.sgd.momentum)
                                   : "";
  return fmt::format("{} = {}([{}]{})", a.name, optimizer_kind_name(a.kind), join(a.params),
                     momentum);
}
std::string line_of(const OptimizerStep& a) {
  return a.name + ".step()";
}
std::string line_of(const ZeroGrad& a) {
  return fmt::format("{}.zero_grad(set_to_none={})", a.name, a.set_to_none ? "True" : "False");
}
std::string line_of(const ClearGrads& a) {
  return fmt::format("{}.zero_grad(set_to_none={})  # {}", a.name, a.set_to_none ? "True" : "False",
                     join(a.params));
}
std::string line_of(const DropOptimizer& a) {
  return "del " + a.name;
}
std::string line_of(const DefineAutogradGraph& a) {
  return fmt::format("{} = <autograd graph of {} nodes>", a.name, a.nodes.size());
}
std::string line_of(const CompiledBackward& a) {
  return fmt::format("compiled_backward({}, dynamic={})", a.graph, a.dynamic ? "True" : "False");
}
std::string line_of(const Backward& a) {
  std::string args;
  if (a.grad) args += "gradient=" + *a.grad;
  if (a.retain_graph) args += std::string(args.empty() ? "" : ", ") + "retain_graph=True";
  return fmt::format("{}{}.backward({})", a.compiled ? "with compiled_autograd: " : "", a.tensor,
                     args);
}
std::string line_of(const Reset&) {
  return "torch._dynamo.reset()";
}

// --- Every other kind, from sim/program/actions.def -----------------------
//
// `kind(key=value, ...)`, its fields in the table's order, an optional one
// only where it differs from its default: a kind needs a line_of above only
// where Python says it better.

std::string value_text(const std::string& v) {
  return v;
}
std::string value_text(const std::vector<std::string>& v) {
  return "[" + join(v) + "]";
}
std::string value_text(const Dims& v) {
  return dims(v);
}
std::string value_text(std::int64_t v) {
  return std::to_string(v);
}
std::string value_text(bool v) {
  return v ? "True" : "False";
}
std::string value_text(float v) {
  return fmt::format("{}", v);
}
std::string value_text(DType v) {
  return std::string(dtype_name(v));
}
std::string value_text(OptimizerKind v) {
  return std::string(optimizer_kind_name(v));
}
std::string value_text(CaptureMode v) {
  return std::string(capture_mode_name(v));
}
std::string value_text(const SgdHyper& v) {
  return fmt::format("dict(lr={}, momentum={})", v.lr, v.momentum);
}
std::string value_text(const AdamHyper& v) {
  return fmt::format("dict(lr={}, betas=({}, {}))", v.lr, v.beta1, v.beta2);
}
template <typename T>
std::string value_text(const std::optional<T>& v) {
  return v ? value_text(*v) : "None";
}

#define CAPSIM_ACTION(Type, name)                  \
  [[maybe_unused]] std::string table_line(const Type& a) { \
    [[maybe_unused]] static const Type defaults{}; \
    (void)a;                                       \
    std::vector<std::string> args;
#define CAPSIM_FIELD(Type, FieldType, member, key, default_value, presence) \
  if (field::written(CAPSIM_PRESENCE_##presence, a.member, defaults.member)) { \
    args.push_back(key "=" + value_text(a.member));                            \
  }
#define CAPSIM_FIELD_WHEN(Type, FieldType, member, key, default_value, condition) \
  if (condition) args.push_back(key "=" + value_text(a.member));
#define CAPSIM_ACTION_END(Type)                                             \
  return fmt::format("{}({})", action_kind_name<Type>(), join(args)); \
  }
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_FIELD
#undef CAPSIM_FIELD_WHEN
#undef CAPSIM_ACTION_END

}  // namespace

std::string describe_action(const Action& action) {
  return std::visit(
      [](const auto& a) {
        if constexpr (requires { line_of(a); }) {
          return line_of(a);
        } else {
          return table_line(a);
        }
      },
      action);
}

std::string describe(const GeneratedProgram& generated) {
  std::ostringstream os;
  os << "# seed " << generated.seed << ", numel " << generated.numel << ", torch "
     << torch_profile_name(generated.torch_profile) << "\n";
  if (!generated.swarm_off.empty()) os << "# swarm: off " << join(generated.swarm_off) << "\n";
  CudagraphConfig knobs;
  knobs.torch_profile = generated.torch_profile;
  apply_knobs(generated.knobs, generated.numel, knobs);
  if (const Json set = newer_config_to_json(knobs); !set.empty())
    os << "# knobs " << set.dump() << "\n";
  if (generated.contract_end) {
    os << fmt::format("# #{} takes an output kept across a generation (PyTorch's contract ends)\n",
                      *generated.contract_end);
  }
  for (const FunctionDef& def : generated.program.functions) os << describe_function(def);
  for (std::size_t i = 0; i < generated.program.actions.size(); ++i) {
    os << fmt::format("#{:<3} ", i) << describe_action(generated.program.actions[i]) << "\n";
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const GeneratedProgram& generated) {
  return os << "\n" << describe(generated);
}

}  // namespace capsim
