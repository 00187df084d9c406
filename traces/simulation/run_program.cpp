// run_program, the one loop that runs a program through a World (see
// run_program.hpp), RunObserver's default hooks and a trace's World options.
#include "traces/simulation/run_program.hpp"

#include <fmt/format.h>

#include <utility>

#include "sim/scenarios/autograd_scenarios.hpp"

namespace capsim {

Status RunObserver::before_action(const TraceItem&, const World&) {
  return {};
}
Status RunObserver::after_action(const TraceItem&, World&, std::vector<Event>&) {
  return {};
}
Status RunObserver::on_refused(const TraceItem* action, const std::string& source,
                               const Error& why) {
  // The World quotes the program's names as they are: escaped here, as
  // replay escapes them, so that a refusal stays one line.
  const std::string text = printable_message(why.message);
  // The message gains where; the error keeps what it blames.
  const auto kept = [&why](Error e) {
    e.kind = why.kind;
    return e;
  };
  if (action == nullptr) return kept(make_error(fmt::format("{}: {}", source, text)));
  // An action without a line (one a what-if's edit added) is named by its
  // index alone.
  const std::string where = action->line == 0 ? source : fmt::format("{}:{}", source, action->line);
  // The World names the action itself in some refusals ("action 16
  // (new_tensor): ..."): once is enough.
  if (text.starts_with(fmt::format("action {} ", action->action_index))) {
    return kept(make_error(fmt::format("{}: {}", where, text)));
  }
  return kept(make_error(fmt::format("{}: action {}: {}", where, action->action_index, text)));
}
Status RunObserver::on_event(const TraceItem&) {
  return {};
}
Status RunObserver::on_unsimulated_action(const TraceItem&) {
  return {};
}
Status RunObserver::on_end(const World&, const RunEnd&) {
  return {};
}

Result<WorldOptions> replay_world_options(const TraceHeader& header, WorldOptions options,
                                          std::optional<TorchProfile> torch_profile) {
  options.config = header.config;
  if (torch_profile) options.config.torch_profile = *torch_profile;
  options.seed = header.seed;
  options.device_evidence = header.has_device_evidence();
  // A trace written with values off is re-simulated so: it may hold tensors
  // values on refuses, and its reads carry no digest to compare. Its default
  // device is the values-off one (nothing stands behind it on the host). So
  // is one the caller asked to re-simulate with values off.
  if (!header.values || !options.values) {
    if (options.mirror != nullptr) {
      return make_error("a trace written with values off cannot run beside a reference backend");
    }
    options.values = false;
    options.verify_replays = false;  // no values to compare with eager
    options.device_evidence = false;
  }
  if (options.memory_budget_bytes == 0) {
    options.memory_budget_bytes = options.values ? kDefaultMemoryBudget : kValuesOffMemoryBudget;
  }
  return options;
}

namespace {

// The loop's state between lines: the World, the functions it was begun
// with, and where the simulation stands under the stop rule.
struct Run {
  World& world;
  ProgramSource& source;
  RunObserver& observer;
  OnRaise on_raise;
  Program program;  // its functions only; World::begin keeps a pointer to it
  bool begun = false;
  bool simulating = true;
  RunEnd end;

  // Begins the World with the functions read so far; false when it refused
  // them and the observer took the refusal (an Error: it ended the run).
  Result<bool> begin() {
    begun = true;
    Status s = world.begin(program);
    if (!s) CAPSIM_TRY(observer.on_refused(nullptr, source.name(), s.error()));
    return s.ok();
  }

  // Stops the simulation before `index`, the first action it does not run.
  void stop_before(std::size_t index, RunStop why) {
    simulating = false;
    end.stopped_at = index;
    end.stop = why;
  }

  Status action(TraceItem& item) {
    if (simulating && end.error_at && on_raise == OnRaise::kStop) {
      stop_before(item.action_index, RunStop::kRaise);
    }
    if (!simulating) return observer.on_unsimulated_action(item);
    CAPSIM_TRY(observer.before_action(item, world));
    if (!begun) {
      // The reader refuses a function line after the first action, so the
      // functions begin() sees are all there will be (and never move).
      CAPSIM_TRY_ASSIGN(const bool ok, begin());
      if (!ok) {
        stop_before(item.action_index, RunStop::kRefused);
        return {};
      }
    }
    if (Status ran = world.run_action(item.action_index, item.action); !ran) {
      if (end.error_at) {
        stop_before(item.action_index, RunStop::kRefusedAfterRaise);
        return {};
      }
      CAPSIM_TRY(observer.on_refused(&item, source.name(), ran.error()));
      stop_before(item.action_index, RunStop::kRefused);
      return {};
    }
    std::vector<Event> events = world.take_events();
    for (const Event& e : events) {
      if (e.kind == EventKind::kError && !end.error_at) end.error_at = item.action_index;
    }
    return observer.after_action(item, world, events);
  }
};

}  // namespace

Status run_program(ProgramSource& source, WorldOptions options, OnRaise on_raise,
                   RunObserver& observer) {
  // A program's run_capture_scenario actions name built-in scenarios.
  if (!options.autograd_scenarios) options.autograd_scenarios = find_autograd_scenario;
  World world(std::move(options));
  Run run{world, source, observer, on_raise, {}, false, true, {}};
  for (;;) {
    CAPSIM_TRY_ASSIGN(TraceItem* const item, source.next());
    if (!item) break;
    switch (item->type) {
      case TraceLineType::kHeader: break;  // the reader refuses a second header
      case TraceLineType::kFunction:
        run.program.functions.push_back(std::move(item->function));
        break;
      case TraceLineType::kEvent: CAPSIM_TRY(observer.on_event(*item)); break;
      case TraceLineType::kAction: CAPSIM_TRY(run.action(*item)); break;
    }
  }
  // A program without actions is still checked: its functions alone may be
  // refused (one defined twice).
  if (!run.begun) CAPSIM_TRY(run.begin());
  return observer.on_end(world, run.end);
}

}  // namespace capsim
