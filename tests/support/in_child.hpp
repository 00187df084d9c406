// in_child: runs a test body in a forked child, for the contracts whose
// breach aborts (CAPSIM_CHECK, CAPSIM_MUST): the parent reads the child's
// exit status and what it wrote to stderr.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace capsim::testing {

// Runs `body` in a child process; its exit status and what it wrote to stderr.
template <typename Body>
std::pair<int, std::string> in_child(Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    body();
    std::_Exit(0);
  }
  ::close(fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, std::size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {status, err};
}

}  // namespace capsim::testing
