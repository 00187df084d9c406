// The name tables of CAPSIM_FAULTS (fault.hpp).
#include "model/fault.hpp"

#include <array>

#include "model/check.hpp"

namespace capsim {
namespace {

struct FaultRow {
  Fault fault;
  std::string_view name;
  FaultSite site;
  std::string_view meaning;
};

constexpr std::array<FaultRow, kNumFaults> kFaultRows = {{
#define CAPSIM_ROW_(e, name, site, meaning) {Fault::e, name, FaultSite::site, meaning},
    CAPSIM_FAULTS(CAPSIM_ROW_)
#undef CAPSIM_ROW_
}};

constexpr std::array<std::string_view, 0
#define CAPSIM_COUNT_(e, name) +1
                     CAPSIM_FAULT_SITES(CAPSIM_COUNT_)
#undef CAPSIM_COUNT_
                     >
    kSiteNames = {
#define CAPSIM_NAME_(e, name) name,
        CAPSIM_FAULT_SITES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
};

// The rows are in enumerator order, so a fault indexes its own row.
constexpr bool rows_in_order() {
  for (std::size_t i = 0; i < kFaultRows.size(); ++i) {
    if (static_cast<std::size_t>(kFaultRows[i].fault) != i) return false;
  }
  return true;
}
static_assert(rows_in_order());

const FaultRow& fault_row(Fault fault) {
  const auto i = static_cast<std::size_t>(fault);
  CAPSIM_CHECK(i < kFaultRows.size(), "a Fault outside CAPSIM_FAULTS");
  return kFaultRows[i];
}

}  // namespace

std::string_view fault_name(Fault fault) {
  return fault_row(fault).name;
}
std::string_view fault_meaning(Fault fault) {
  return fault_row(fault).meaning;
}
FaultSite fault_site(Fault fault) {
  return fault_row(fault).site;
}

std::string_view fault_site_name(FaultSite site) {
  const auto i = static_cast<std::size_t>(site);
  CAPSIM_CHECK(i < kSiteNames.size(), "a FaultSite outside CAPSIM_FAULT_SITES");
  return kSiteNames[i];
}

std::optional<Fault> fault_from_name(std::string_view name) {
  for (const FaultRow& r : kFaultRows) {
    if (r.name == name) return r.fault;
  }
  return std::nullopt;
}

void check_fault_site(Fault fault, FaultSite site, const char* file, int line) {
  if (fault == Fault::kNone || fault_site(fault) == site) return;
  detail::check_failed(file, line, "fault_site(fault) == site",
                       "a component was handed another site's fault, and would run sound");
}

}  // namespace capsim
