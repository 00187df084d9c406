// The reference.agrees property (see reference_agrees.hpp): each generated program run alone
// and beside a mirror, under trees and under the plain API, and the runs' events compared.
#include "properties/reference_agrees.hpp"

#include <fmt/format.h>

#include "properties/catalogue.hpp"
#include "properties/cudagraph_checks.hpp"
#include "properties/cudagraph_programs_rc.hpp"
#include "properties/trace_checks.hpp"
#include "sim/world/world.hpp"

namespace capsim {

namespace {

// The events without the producer's extensions (the driver's buffer ids),
// which the model cannot predict.
std::vector<Event> comparable(const std::vector<Event>& events) {
  std::vector<Event> out = events;
  for (Event& e : out) {
    std::erase_if(e.fields, [](const EventField& f) { return field_spec(f.key).extension(); });
  }
  return out;
}

std::optional<std::string> compare_runs(const GeneratedProgram& generated, bool plain,
                                        const MirrorFactory& factory, Fault fault) {
  const std::string_view api = plain ? "plain API" : "cudagraph trees";
  WorldOptions options;
  options.config.plain_api = plain;
  options.device_evidence = true;
  options.fault = fault_at(fault, FaultSite::kTree);
  Status model_status;
  const std::unique_ptr<World> model = run_generated(generated, options, model_status);

  Result<std::unique_ptr<ReplayMirror>> mirror = factory(fault_at(fault, FaultSite::kMirror));
  if (!mirror) return fmt::format("{}: the reference backend: {}", api, mirror.error().message);
  options.mirror = mirror->get();
  Status mirrored_status;
  const std::unique_ptr<World> mirrored = run_generated(generated, options, mirrored_status);
  if (const auto& d = (*mirror)->disagreement()) {
    return fmt::format("{}: the {} backend disagrees: {}", api, (*mirror)->name(), *d);
  }
  if (static_cast<bool>(model_status) != static_cast<bool>(mirrored_status)) {
    return fmt::format("{}: the model alone {}, beside the {} backend {}", api,
                       model_status ? "ran" : "failed: " + model_status.error().message,
                       (*mirror)->name(),
                       mirrored_status ? "ran" : "failed: " + mirrored_status.error().message);
  }
  const std::vector<Event> ours = comparable(model->events());
  const std::vector<Event> theirs = comparable(mirrored->events());
  for (std::size_t i = 0; i < std::max(ours.size(), theirs.size()); ++i) {
    if (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) continue;
    return fmt::format("{}: event {} differs: the model {}, beside the {} backend {}", api, i,
                       i < ours.size() ? format_event(ours[i]) : "(none)", (*mirror)->name(),
                       i < theirs.size() ? format_event(theirs[i]) : "(none)");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_reference_agrees(const GeneratedProgram& generated,
                                                  const MirrorFactory& factory, Fault fault) {
  for (bool plain : {false, true}) {
    if (auto failure = compare_runs(generated, plain, factory, fault)) return failure;
  }
  return std::nullopt;
}

Property reference_property(MirrorFactory factory, std::string_view control,
                            const CaseSetting& setting) {
  const Fault injected = setting.injected;
  Property p{"reference.agrees",
             "a reference backend running every graph beside the model bakes the same pointers "
             "and leaves memory bitwise equal after every replay, stale reads included, and the "
             "events (with each replay's device evidence) are the model's",
             "cuda-graphs.md §0, §3.3, §5; architecture.md §2 (Backend)",
             "random cudagraph programs, each run with cudagraph trees and with the plain API",
             control,
             Fault::kSkipUpload};
  p.run = make_case<ProgramPlan>(
      rc_gen::program(setting.torch),
      [factory = std::move(factory), injected](const ProgramPlan& plan, bool control) {
        return check_reference_agrees(lower(plan), factory,
                                      control ? Fault::kSkipUpload : injected);
      },
      [](const ProgramPlan& plan) { return describe(lower(plan)); },
      [](const ProgramPlan& plan, bool) {
        return generated_trace_lines(lower(plan), WorldOptions{}, "capsim-check counterexample");
      });
  return p;
}

std::vector<Property> catalogue_with_reference(std::vector<Property> base, MirrorFactory factory,
                                               std::string_view control,
                                               const CaseSetting& setting) {
  std::vector<Property> out = std::move(base);
  out.push_back(reference_property(std::move(factory), control, setting));
  return out;
}

}  // namespace capsim
