// Errors as values at library boundaries.
//
// Every operation that can be handed bad input (an unknown address, a zero-byte
// allocation, a checkpoint of another pool) returns `Result<T>`: either a value
// or an `Error` carrying one precise, lower-case, single-line message. The CLI
// turns an Error into "capsim: error: <message>" and exit code 2; nothing in the
// library throws across its boundary for user errors.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "model/check.hpp"

namespace capsim {

struct Error {
  std::string message;
};

// Result<T>: a value or an Error. Accessing the wrong alternative is a bug in
// the caller and aborts (CAPSIM_CHECK), rather than being undefined behaviour.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    CAPSIM_CHECK(ok(), "value() on an error result");
    return std::get<0>(state_);
  }
  const T& value() const& {
    CAPSIM_CHECK(ok(), "value() on an error result");
    return std::get<0>(state_);
  }
  T&& value() && {
    CAPSIM_CHECK(ok(), "value() on an error result");
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    CAPSIM_CHECK(!ok(), "error() on a success result");
    return std::get<1>(state_);
  }

 private:
  std::variant<T, Error> state_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    CAPSIM_CHECK(failed_, "error() on a success result");
    return error_;
  }

 private:
  Error error_;
  bool failed_ = false;
};

using Status = Result<void>;

inline Error make_error(std::string message) {
  return Error{std::move(message)};
}

}  // namespace capsim

// Propagates an Error from an expression returning Result<...>.
#define CAPSIM_TRY(expr)                                             \
  do {                                                               \
    auto capsim_try_result_ = (expr);                                \
    if (!capsim_try_result_.ok()) return capsim_try_result_.error(); \
  } while (false)

// `CAPSIM_TRY_ASSIGN(auto x, expr);` declares `x` from a Result's value, or
// returns its Error. The temporary is named after the line, so several may
// stand in one scope.
#define CAPSIM_TRY_CONCAT_INNER_(a, b) a##b
#define CAPSIM_TRY_CONCAT_(a, b) CAPSIM_TRY_CONCAT_INNER_(a, b)
#define CAPSIM_TRY_ASSIGN(lhs, expr) \
  CAPSIM_TRY_ASSIGN_IMPL_(CAPSIM_TRY_CONCAT_(capsim_try_assign_, __LINE__), lhs, expr)
#define CAPSIM_TRY_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return tmp.error();            \
  lhs = std::move(tmp).value()
