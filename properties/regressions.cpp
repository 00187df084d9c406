// Loading the failure corpus (see regressions.hpp).
#include "properties/regressions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "properties/property.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

namespace {

// The longest property name that `file` starts with, followed by a dot.
const Property* property_of(const std::string& file, std::span<const Property> catalogue) {
  const Property* best = nullptr;
  for (const Property& p : catalogue) {
    const std::string prefix = std::string(p.name) + ".";
    if (file.rfind(prefix, 0) == 0 && (best == nullptr || p.name.size() > best->name.size())) {
      best = &p;
    }
  }
  return best;
}

Result<Regression> load_one(const std::filesystem::path& path, const Property& property) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, TraceReader::open(path.string()));
  Regression r;
  r.file = path.filename().string();
  r.property = std::string(property.name);
  r.seed = reader->header().seed;
  r.config = reader->header().config;
  for (;;) {
    CAPSIM_TRY_ASSIGN(std::optional<TraceItem> item, reader->next());
    if (!item) break;
    if (item->type == TraceLineType::kFunction) {
      r.program.functions.push_back(std::move(item->function));
    } else if (item->type == TraceLineType::kAction) {
      r.program.actions.push_back(std::move(item->action));
    }
  }
  return r;
}

}  // namespace

Result<std::vector<Regression>> load_regressions(const std::string& dir,
                                                 std::span<const Property> catalogue) {
  std::vector<Regression> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  if (ec) return make_error(fmt::format("{}: {}", dir, ec.message()));
  // By name: directory order is the file system's, not deterministic.
  std::sort(files.begin(), files.end());
  if (files.size() > kMaxRegressions) {
    return make_error(fmt::format("{}: more than {} regressions", dir, kMaxRegressions));
  }
  for (const auto& path : files) {
    const std::string name = path.filename().string();
    const Property* p = property_of(name, catalogue);
    if (p == nullptr) {
      return make_error(fmt::format(
          "{}: the name must start with a property name and a dot (capsim check --list)",
          path.string()));
    }
    if (!p->regression) {
      return make_error(
          fmt::format("{}: property {} does not replay regressions (its inputs are "
                      "not programs)",
                      path.string(), p->name));
    }
    CAPSIM_TRY_ASSIGN(Regression r, load_one(path, *p));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace capsim
