#include "cli/input_guards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "cli/trace_commands.hpp"
#include "model/check.hpp"
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

std::vector<std::string> drawing_outputs(const std::string& path) {
  if (path.empty()) return {};
  Result<std::vector<std::string>> files = drawing_files(path);
  return files ? *files : std::vector<std::string>{path};
}

std::string operand_file(const std::string& operand) {
  const std::size_t hash = operand.rfind('#');
  return hash == std::string::npos ? operand : operand.substr(0, hash);
}

int finish_stdout(int exit_code) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "capsim: error: standard output: write failed: %s\n",
                 std::strerror(errno != 0 ? errno : EIO));
    return kExitBadInput;
  }
  return exit_code;
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
          "VERSION"));
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
        return "";
      },
      "UINT64");
}

void add_memory_budget_option(CLI::App* sub, std::uint64_t& bytes) {
  sub->add_option("--memory-budget", bytes,
                  "Simulated device memory the trace's program may take (512MiB, 4GiB, ...); "
                  "more is refused at the action that asks")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{1} << 20, kMaxMemoryBudget));
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
