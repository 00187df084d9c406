// The checks every subcommand makes before it reads or writes (see input_guards.hpp): outputs
// onto inputs, empty values, decimal-only numbers, --memory-budget and --torch, the stdout and
// out-of-memory endings, and "did you mean".
#include "cli/input_guards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <unistd.h>
#if defined(CAPSIM_MIMALLOC)
#include <mimalloc.h>
#endif

#include "cli/trace_commands.hpp"
#include "model/check.hpp"
#include "model/host_memory.hpp"
#include "model/output_file.hpp"
#include "render/graphviz_output.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "sim/world/world.hpp"

namespace capsim::cli {

int refuse_outputs_onto_inputs(std::span<const std::string> outputs,
                               std::span<const std::string> inputs) {
  for (const std::string& out : outputs) {
    if (Status s = refuse_output_onto_inputs(out, inputs); !s) return fail(s.error().message);
  }
  return 0;
}

int refuse_empty_values(const CLI::App& sub) {
  for (const CLI::Option* option : sub.get_options()) {
    if (option->get_type_size() == 0) continue;  // a flag
    for (const std::string& value : option->results()) {
      if (value.empty()) return fail(fmt::format("{}: an empty value", option->get_name()));
    }
  }
  return 0;
}

std::vector<std::string> drawing_outputs(const std::string& path) {
  if (path.empty()) return {};
  Result<std::vector<std::string>> files = drawing_files(path);
  return files ? *files : std::vector<std::string>{path};
}

std::string operand_file(const std::string& operand) {
  const std::size_t hash = operand.rfind('#');
  return hash == std::string::npos ? operand : operand.substr(0, hash);
}

int finish_stdout(int exit_code, int failed_errno) {
  // A stream in error keeps no errno of its own: the last failed write's is
  // the best witness (the flush below retries what is buffered, and so
  // fails again with the same cause when anything is).
  const int last = errno;
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int why = failed_errno != 0 ? failed_errno : errno != 0 ? errno : last;
    std::fprintf(stderr, "capsim: error: standard output: write failed: %s\n",
                 std::strerror(why != 0 ? why : EIO));
    return kExitBadInput;
  }
  return exit_code;
}

namespace {

[[noreturn]] void out_of_host_memory() {
  // No allocation from here on: a fixed message, written with write(2).
  static constexpr char kLine[] =
      "capsim: error: out of host memory (the machine, or RLIMIT_AS, cannot hold what the input "
      "asks for; try a smaller --memory-budget or a smaller input)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kLine, sizeof kLine - 1);
  std::_Exit(kExitOutOfMemory);
}

#if defined(CAPSIM_MIMALLOC)
// mimalloc reports an allocation it cannot serve here (ENOMEM), before
// returning null or throwing; other errors keep its default output.
void on_mimalloc_error(int err, void*) {
  if (err == ENOMEM) out_of_host_memory();
}
#endif

}  // namespace

void exit_with_a_line_when_out_of_memory() {
  std::set_new_handler(out_of_host_memory);
#if defined(CAPSIM_MIMALLOC)
  mi_register_error(on_mimalloc_error, nullptr);
#endif
}

void add_torch_option(CLI::App* sub, std::optional<TorchProfile>& profile) {
  sub->add_option_function<std::string>(
         "--torch",
         [&profile](const std::string& v) {
           profile = torch_profile_for(v);
           CAPSIM_CHECK(profile.has_value(), "the validator let only known versions through");
         },
         "The PyTorch release whose cudagraph tree manager decides: 2.5 to 2.15, or a profile "
         "(capsim version --profiles)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (torch_profile_for(text)) return "";
            return fmt::format(
                "unknown torch version '{}' (a release from 2.5 to 2.15, or a profile: {})",
                text.substr(0, 40), known_torch_profiles());
          },
          "VERSION"))
      ->type_name("VERSION");
}

CLI::Validator decimal() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool only_digits =
            !text.empty() && text.size() <= 40 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!only_digits) {
          return fmt::format("'{}' is not a non-negative decimal integer", text.substr(0, 40));
        }
        text.erase(0, std::min(text.find_first_not_of('0'), text.size() - 1));
        return "";
      },
      "", kDecimalValidator);
}

CLI::Validator unsigned_64_bit() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [at, ec] = std::from_chars(text.data(), end, v);
        const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        if (!digits || ec != std::errc() || at != end) {
          return fmt::format("'{}' is not an integer from 0 to 2^64-1 (18446744073709551615)",
                             text.substr(0, 40));
        }
        text = std::to_string(v);  // as decimal for CLI11, which reads "010" as 8
        return "";
      },
      "UINT64", kDecimalValidator);
}

namespace {

// Decimal digits, then an optional unit (letters): AsSizeValue alone reads
// "010MiB" as 8 MiB and "0x10" as 16. Runs before it (transforms run
// last-added first) and leaves what it passes unchanged but its zeros.
CLI::Validator size_with_unit() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t unit = text.find_first_not_of("0123456789");
        std::string number = text.substr(0, unit);
        const std::string rest = unit == std::string::npos ? "" : text.substr(unit);
        const bool letters = std::all_of(rest.begin(), rest.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ' ';
        });
        if (!decimal()(number).empty() || !letters) {
          return fmt::format("'{}' is not a decimal size (512MiB, 4GiB, or bytes)",
                             text.substr(0, 40));
        }
        text = number + rest;
        return "";
      },
      "", kDecimalValidator);
}

// Simulated device memory is host memory: a budget the host cannot give
// would end in running out of it midway, so it is refused before the run.
CLI::Validator within_host_memory() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t budget = 0;
        const auto [at, ec] = std::from_chars(text.data(), text.data() + text.size(), budget);
        if (ec != std::errc() || at != text.data() + text.size()) return "";  // Range refused it
        const Status fits = budget_fits_host(budget);
        return fits ? "" : fits.error().message;
      },
      "", "HOST_MEMORY");
}

}  // namespace

void add_memory_budget_option(CLI::App* sub, std::uint64_t& bytes, BudgetOnHost on_host) {
  CLI::Option* option =
      sub->add_option("--memory-budget", bytes,
                      "Simulated device memory the trace's program may take (512MiB, 4GiB, ...); "
                      "more is refused at the action that asks. 0 or left out: 1GiB, or 80GiB "
                      "with values off (which allocates no host memory)")
          ->transform(CLI::AsSizeValue(false))
          ->transform(size_with_unit())
          ->check(CLI::Range(std::uint64_t{1} << 20, kMaxMemoryBudget));
  if (on_host == BudgetOnHost::kCheckNow) option->check(within_host_memory());
}

void add_simulation_options(CLI::App* sub, SimulationFlags& flags) {
  sub->add_option("--values", flags.values,
                  "on: compute every tensor's values; off: sizes, addresses and decisions "
                  "only, for a program larger than the host; auto (default): off for a "
                  "program whose tensors pass 1 GiB or one tensor 2^24 elements")
      ->type_name("MODE")
      ->check(CLI::IsMember({"on", "off", "auto"}));
  // Only a run with values on takes host memory for its budget: checked
  // when the mode is known (simulate_program), not here.
  add_memory_budget_option(sub, flags.budget, BudgetOnHost::kCheckWhenValuesOn);
}

ProgramRunOptions simulation_options(const SimulationFlags& flags, bool keep_going) {
  ProgramRunOptions run;
  run.on_raise = keep_going ? OnRaise::kKeepGoing : OnRaise::kStop;
  run.values = flags.values == "on"    ? ValuesMode::kOn
               : flags.values == "off" ? ValuesMode::kOff
                                       : ValuesMode::kAuto;
  if (flags.budget != 0) run.memory_budget_bytes = flags.budget;
  return run;
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> similar_names(const std::string& name,
                                       const std::vector<std::string>& known) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  const std::string needle = name.substr(0, 128);
  for (const std::string& k : known) {
    const bool contains = needle.size() >= 3 && (k.find(needle) != std::string::npos ||
                                                 needle.find(k) != std::string::npos);
    const std::size_t d = contains ? 0 : edit_distance(needle, k);
    if (d <= std::max<std::size_t>(2, needle.size() / 3)) scored.emplace_back(d, k);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  const std::vector<std::string> near = similar_names(name, known);
  if (near.empty()) return "";
  std::string text = ", did you mean";
  for (std::size_t i = 0; i < near.size(); ++i) {
    text += fmt::format("{}'{}'", i == 0 ? " " : i + 1 == near.size() ? " or " : ", ", near[i]);
  }
  return text + "?";
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const ProgramScenario& s : builtin_program_scenarios()) names.push_back(s.name);
  return names;
}

}  // namespace capsim::cli
