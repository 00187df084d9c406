#include "cli/rerecord_report.hpp"

#include <fmt/format.h>

#include <variant>

namespace capsim::cli {

namespace {

// Whether `action` gives `name` a new storage: a new tensor, a reassigned
// .data, or a call that binds it as an output.
bool binds(const Action& action, const std::string& name) {
  if (const auto* t = std::get_if<NewTensor>(&action)) return t->name == name;
  if (const auto* r = std::get_if<ReassignData>(&action)) return r->name == name;
  if (const auto* c = std::get_if<Call>(&action)) {
    for (const std::string& out : c->outputs) {
      if (out == name) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> explain_rerecord(const Program& program, const Event& event) {
  const std::int64_t* input = event.get_if<std::int64_t>(F::input);
  if (event.kind != EventKind::kRecord || input == nullptr || *input < 0 ||
      event.action >= program.actions.size()) {
    return std::nullopt;
  }
  const auto index = static_cast<std::size_t>(*input);
  const auto* call = std::get_if<Call>(&program.actions[event.action]);
  if (call == nullptr || index >= call->args.size()) return std::nullopt;
  const std::string& name = call->args[index];
  for (std::size_t a = event.action; a-- > 0;) {
    if (binds(program.actions[a], name)) {
      return fmt::format("input {} is '{}'; it last got storage at action {} ({})", index, name, a,
                         action_name(program.actions[a]));
    }
  }
  return fmt::format("input {} is '{}'", index, name);
}

}  // namespace capsim::cli
