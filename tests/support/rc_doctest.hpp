// RapidCheck inside doctest.
//
// Debian's RapidCheck snapshot has no doctest extra, so this is ours
// (docs/architecture.md, "Tests"). Each property gets a stable id
// ("<test case>/<name>"), so RC_PARAMS="reproduce=..." works, and failures
// are reported with CHECK_MESSAGE, which doctest's JUnit reporter counts
// (FAIL_CHECK does not).
//
// `rc_prop(name, fn)` checks a property that must hold. `rc_expect_failure`
// runs a negative control: the property against a deliberately broken model,
// which RapidCheck must falsify (and shrink) within the default case count.
#pragma once

#include <doctest/doctest.h>
#include <rapidcheck.h>

#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace capsim::testing {

// Fails the running property with a plain check's line (the checks of
// properties/ return nullopt when the property holds).
inline void rc_require(const std::optional<std::string>& failure) {
  if (failure) RC_FAIL(*failure);
}

inline std::string rc_property_id(const std::string& name) {
  const doctest::TestCaseData* tc = doctest::getContextOptions()->currentTest;
  return std::string(tc != nullptr ? tc->m_name : "?") + "/" + name;
}

// `reproducible` gives the property an id, which RapidCheck's reproduce map
// keys on. Negative controls get none: their failure is the expected outcome,
// so it must not end up in the "To reproduce these" line.
template <typename Testable>
rc::detail::TestResult rc_run(const std::string& name, Testable&& testable, bool reproducible) {
  rc::detail::TestMetadata metadata;
  if (reproducible) metadata.id = rc_property_id(name);
  metadata.description = name;
  return rc::detail::checkTestable(std::forward<Testable>(testable), metadata);
}

template <typename Testable>
void rc_prop(const std::string& name, Testable&& testable) {
  const auto result = rc_run(name, std::forward<Testable>(testable), true);
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  if (result.template is<rc::detail::SuccessResult>()) {
    MESSAGE(name << ": " << os.str());
  } else {
    CHECK_MESSAGE(false, name << ": " << os.str());
  }
}

// Returns the shrunk counterexample's description, for further assertions.
template <typename Testable>
std::string rc_expect_failure(const std::string& name, Testable&& testable) {
  const auto result = rc_run(name, std::forward<Testable>(testable), false);
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  const bool failed = result.template is<rc::detail::FailureResult>();
  CHECK_MESSAGE(failed, "negative control '" << name << "' was not caught: " << os.str());
  if (failed) MESSAGE("negative control '" << name << "' caught as expected: " << os.str());
  return os.str();
}

}  // namespace capsim::testing
