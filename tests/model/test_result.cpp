// Result<T>, CAPSIM_TRY and CAPSIM_TRY_ASSIGN: values pass through, the first
// Error is returned unchanged, and nothing after it runs.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "model/result.hpp"
#include "tests/support/in_child.hpp"

using namespace capsim;

namespace {
Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return make_error(std::string("not a digit: ") + c);
  return c - '0';
}

// `steps_run` says how far it got.
Result<int> sum_digits(char a, char b, int& steps_run) {
  steps_run = 0;
  CAPSIM_TRY_ASSIGN(const int x, parse_digit(a));
  ++steps_run;
  CAPSIM_TRY_ASSIGN(const int y, parse_digit(b));
  ++steps_run;
  return x + y;
}

Status check_both(char a, char b) {
  CAPSIM_TRY(parse_digit(a));
  CAPSIM_TRY(parse_digit(b));
  return {};
}
}  // namespace

TEST_CASE("CAPSIM_TRY_ASSIGN binds values and returns the first error") {
  int steps_run = -1;
  auto ok = sum_digits('3', '4', steps_run);
  REQUIRE(ok.ok());
  CHECK(*ok == 7);
  CHECK(steps_run == 2);

  auto first = sum_digits('x', 'y', steps_run);
  REQUIRE_FALSE(first.ok());
  CHECK(first.error().message == "not a digit: x");
  CHECK(steps_run == 0);

  auto second = sum_digits('1', 'y', steps_run);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().message == "not a digit: y");
  CHECK(steps_run == 1);
}

TEST_CASE("CAPSIM_TRY propagates an error into a Status") {
  CHECK(check_both('1', '2').ok());
  auto bad = check_both('1', '?');
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "not a digit: ?");
}

TEST_CASE("an Error keeps its kind and field through added context") {
  Error e = make_unsupported("view_fn not supported by compiled autograd");
  e.field = "nodes[3].view_fn";
  const Error wrapped = with_context("action 4 (backward)", e);
  CHECK(wrapped.message == "action 4 (backward): view_fn not supported by compiled autograd");
  CHECK(wrapped.kind == ErrorKind::unsupported);
  CHECK(wrapped.field == "nodes[3].view_fn");
  CHECK(make_error("x").kind == ErrorKind::bad_input);
  CHECK(make_error("x").field.empty());
  CHECK(error_kind_name(ErrorKind::bad_input) == "bad input");
  CHECK(error_kind_name(ErrorKind::unsupported) == "unsupported");
}

TEST_CASE("CAPSIM_MUST passes a value through and aborts, at file and line, on an Error") {
  CHECK(CAPSIM_MUST(parse_digit('7')) == 7);
  const auto [status, err] = capsim::testing::in_child([] { (void)CAPSIM_MUST(parse_digit('x')); });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(err.find("capsim: internal invariant broken at") != std::string::npos);
  CHECK(err.find("test_result.cpp") != std::string::npos);
  CHECK(err.find("parse_digit('x'): not a digit: x") != std::string::npos);
}
