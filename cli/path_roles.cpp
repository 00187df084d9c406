// The one guard between a command's outputs and its inputs (path_roles.hpp).
#include "cli/path_roles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "cli/input_guards.hpp"
#include "cli/trace_commands.hpp"
#include "model/check.hpp"
#include "model/output_file.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

namespace {

struct RoleInfo {
  std::string_view name;
  std::string_view type_name;
};

constexpr RoleInfo kRoleInfo[] = {
#define CAPSIM_PATH_ROLE_INFO(e, name, type) {name, type},
    CAPSIM_PATH_ROLES(CAPSIM_PATH_ROLE_INFO)
#undef CAPSIM_PATH_ROLE_INFO
};

const RoleInfo& info(PathRole role) {
  const auto i = static_cast<std::size_t>(role);
  CAPSIM_CHECK(i < std::size(kRoleInfo), "a PathRole has a row in CAPSIM_PATH_ROLES");
  return kRoleInfo[i];
}

// What an option holds once parsed: the values given, or, for a folder the
// command reads by default (check's --regressions), that default.
std::vector<std::string> values_of(const CLI::Option* option, PathRole role) {
  std::vector<std::string> values = option->results();
  if (values.empty() && role == PathRole::kInputDir && !option->get_default_str().empty()) {
    values.push_back(option->get_default_str());
  }
  return values;
}

// The folder a file path would be written into.
std::string folder_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

struct SubcommandPaths {
  std::vector<std::string> input_files, input_dirs, output_files, output_dirs;
};

void add_paths(SubcommandPaths& paths, PathRole role, const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (v.empty() || v == kStdoutPath) continue;
    switch (role) {
      case PathRole::kInput: paths.input_files.push_back(v); break;
      case PathRole::kInputOperand: paths.input_files.push_back(operand_file(v)); break;
      case PathRole::kInputDir: paths.input_dirs.push_back(v); break;
      case PathRole::kOutput: paths.output_files.push_back(v); break;
      case PathRole::kOutputDrawing:
        for (const std::string& f : drawing_outputs(v)) paths.output_files.push_back(f);
        break;
      case PathRole::kOutputDir: paths.output_dirs.push_back(v); break;
    }
  }
}

std::string refusal(const std::string& output, const std::string& folder) {
  return fmt::format(
      "{}: is in the folder {}, whose files this command reads; writing there could replace "
      "one of them (choose another output)",
      printable_message(output), printable_message(folder));
}

}  // namespace

std::string_view path_role_name(PathRole role) {
  return info(role).name;
}

CLI::Option* PathRoles::mark(CLI::Option* option, PathRole role) {
  CAPSIM_CHECK(option != nullptr && role_of(option) == nullptr, "an option is marked once");
  roles_.emplace_back(option, role);
  option->type_name(std::string(info(role).type_name));
  return option;
}

const PathRole* PathRoles::role_of(const CLI::Option* option) const {
  for (const auto& [o, role] : roles_) {
    if (o == option) return &role;
  }
  return nullptr;
}

namespace {

bool has_decimal_validator(CLI::Option* option) {
  try {
    return option->get_validator(kDecimalValidator) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

}  // namespace

void PathRoles::check_complete(CLI::App& app) const {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* option : sub->get_options()) {
      if (option->get_type_size() == 0) continue;  // a flag
      const std::string type = option->get_type_name();
      CAPSIM_CHECK(!type.starts_with("TEXT") || role_of(option) != nullptr,
                   "every string option is marked as a path or typed as what it holds");
      const bool numeric =
          type.starts_with("INT") || type.starts_with("UINT") || type.starts_with("FLOAT");
      CAPSIM_CHECK(!numeric || has_decimal_validator(option),
                   "every numeric option reads decimal digits only (input_guards.hpp)");
    }
  }
}

int PathRoles::refuse_outputs_onto_inputs(const CLI::App& sub) const {
  SubcommandPaths paths;
  for (const CLI::Option* option : sub.get_options()) {
    if (const PathRole* role = role_of(option)) add_paths(paths, *role, values_of(option, *role));
  }
  // Standard input is read once: two inputs cannot both be it.
  if (std::count(paths.input_files.begin(), paths.input_files.end(), kStdinPath) > 1) {
    return fail("'-' (standard input) is given for more than one input; it can be read once");
  }
  for (const std::string& out : paths.output_files) {
    if (int refused = cli::refuse_outputs_onto_inputs({&out, 1}, paths.input_files)) {
      return refused;
    }
    for (const std::string& dir : paths.input_dirs) {
      if (same_file(folder_of(out), dir)) return fail(refusal(out, dir));
    }
  }
  for (const std::string& out : paths.output_dirs) {
    for (const std::string& dir : paths.input_dirs) {
      if (same_file(out, dir)) return fail(refusal(out, dir));
    }
  }
  return 0;
}

std::vector<std::string> PathRoles::listing(const CLI::App& app) const {
  std::vector<std::string> lines;
  for (const CLI::App* sub : app.get_subcommands({})) {
    for (const CLI::Option* option : sub->get_options()) {
      if (const PathRole* role = role_of(option)) {
        lines.push_back(
            fmt::format("{} {} {}", sub->get_name(), option->get_name(), path_role_name(*role)));
      }
    }
  }
  return lines;
}

}  // namespace capsim::cli
