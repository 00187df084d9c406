// The loop checks of training_checks.hpp.
#include "properties/training_checks.hpp"

#include <fmt/format.h>

#include <vector>

namespace capsim {

namespace {

// The index of the first error event, or the number of events.
std::size_t contract_end(const World& world) {
  const std::vector<Event>& events = world.events();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == EventKind::kError) return i;
  }
  return events.size();
}

}  // namespace

CheckResult check_loop_equals_eager(const World& world, const World& eager) {
  if (contract_end(eager) != eager.events().size()) {
    return fmt::format("the all-eager run raised: {}",
                       format_event(eager.events()[contract_end(eager)]));
  }
  std::vector<const Event*> want;
  for (const Event& e : eager.events()) {
    if (e.kind == EventKind::kRead) want.push_back(&e);
  }
  std::size_t k = 0;
  const std::size_t end = contract_end(world);
  for (std::size_t i = 0; i < end; ++i) {
    const Event& e = world.events()[i];
    if (e.kind != EventKind::kRead) continue;
    if (k >= want.size()) return fmt::format("read {} has no all-eager counterpart", k);
    const Event& w = *want[k++];
    if (e.get<Digest>(F::digest) != w.get<Digest>(F::digest)) {
      return fmt::format("read {} of '{}' (action {}) differs from the all-eager run: {} vs {}",
                         k - 1, e.printed(F::name).value_or("?"), e.action,
                         e.printed(F::values).value_or("?"), w.printed(F::values).value_or("?"));
    }
  }
  return std::nullopt;
}

CheckResult check_loop_grad_copies(const World& world, const TrainingProgram& t) {
  if (!t.grads_from_recorded_backward && !t.grads_eager) return std::nullopt;
  const std::int64_t want = t.grads_from_recorded_backward ? 0 : t.grad_bytes;
  const std::size_t end = contract_end(world);
  for (std::size_t i = 0; i < end; ++i) {
    const Event& e = world.events()[i];
    if (e.kind != EventKind::kCopyIn || e.text(F::function) != "opt.step") continue;
    const std::int64_t bytes = e.get<std::int64_t>(F::bytes);
    if (bytes != want) {
      return fmt::format(
          "action {}: the optimizer step's replay copied {} bytes; its grads came from {} "
          "backward, so it must copy {}",
          e.action, bytes, t.grads_eager ? "an eager" : "a recorded", want);
    }
  }
  return std::nullopt;
}

CheckResult check_loop_no_metadata_read(const World& world) {
  for (const Event& e : world.events()) {
    if (e.kind == EventKind::kMetadataRead) {
      return fmt::format("action {}: a compiled backward's capture read {}", e.action,
                         format_event(e));
    }
  }
  return std::nullopt;
}

}  // namespace capsim
