// Always-on assertions for contracts inside the model.
//
// A broken internal invariant is a bug in capsim, not bad user input, so it
// aborts with the file, line and the failed condition. These checks stay on in
// every build type (TigerBeetle style): a simulator that silently continues past
// a broken invariant produces confident, wrong answers. Bad *input* never goes
// through here; it is reported as an `Error` value (see result.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace capsim::detail {
[[noreturn]] inline void check_failed(const char* file, int line, const char* cond,
                                      const char* msg) {
  std::fprintf(stderr, "capsim: internal invariant broken at %s:%d: %s%s%s\n", file, line, cond,
               msg[0] != '\0' ? ": " : "", msg);
  std::abort();
}
}  // namespace capsim::detail

// CAPSIM_CHECK(cond) or CAPSIM_CHECK(cond, "why it must hold").
#define CAPSIM_CHECK(cond, ...)                                                  \
  do {                                                                           \
    if (!(cond)) [[unlikely]]                                                    \
      ::capsim::detail::check_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (false)
