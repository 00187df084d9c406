// Errors as values at library boundaries.
//
// Every operation that can be handed bad input (an unknown address, a zero-byte
// allocation, a checkpoint of another pool) returns `Result<T>`: either a value
// or an `Error` carrying one precise, lower-case, single-line message. The CLI
// turns an Error into "capsim: error: <message>" and exit code 2; nothing in the
// library throws across its boundary for user errors.
//
// An Error is only ever about input. A state capsim built itself that turns out
// wrong (a tensor it holds that is gone, a copy between shapes it made) is a
// bug: a CAPSIM_CHECK (check.hpp), which aborts at file and line. The Error's
// kind says which input was at fault, and its field names the JSON field, so no
// caller has to parse a message to learn either.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "model/check.hpp"

namespace capsim {

// X(kind, name): what an Error blames.
#define CAPSIM_ERROR_KINDS(X)                                                       \
  /* A flag, a program, an action or a value capsim was asked to work on. */        \
  X(bad_input, "bad input")                                                         \
  /* A trace line that does not read: JSON, the schema, a limit (file:line:col). */ \
  X(bad_trace, "bad trace")                                                         \
  /* Well-formed input that asks for what capsim does not model. */                 \
  X(unsupported, "unsupported")                                                     \
  /* More than capsim computes values for (one tensor, the host's memory): the */   \
  /* same run goes on with values off where the caller lets values be chosen. */    \
  X(values_limit, "values limit")

enum class ErrorKind : std::uint8_t {
#define CAPSIM_ERROR_KIND_ENUM_(kind, name) kind,
  CAPSIM_ERROR_KINDS(CAPSIM_ERROR_KIND_ENUM_)
#undef CAPSIM_ERROR_KIND_ENUM_
};

// "bad input", "bad trace", "unsupported".
constexpr std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
#define CAPSIM_ERROR_KIND_NAME_(kind, name) \
  case ErrorKind::kind: return name;
    CAPSIM_ERROR_KINDS(CAPSIM_ERROR_KIND_NAME_)
#undef CAPSIM_ERROR_KIND_NAME_
  }
  return "?";
}

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::bad_input;
  // The dotted path, from the root of a JSON line, of the field the message is
  // about ("ops[2].scalar"), or empty when it is about no one field.
  std::string field;
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

// Drops a Status whose failure changes nothing where it is dropped, and says
// why (LLVM's consumeError): a release in a destructor or on a path that has
// already failed, where there is no caller to tell. A bare `(void)` would
// hide the reason, and a reader could not tell a decision from an oversight.
inline void consume_error(const Status& status, std::string_view why) {
  static_cast<void>(status);
  static_cast<void>(why);
}

inline Error make_error(std::string message) {
  return Error{std::move(message), ErrorKind::bad_input, {}};
}

// Valid input that capsim does not model (a view_fn under compiled autograd, a
// newer trace version).
inline Error make_unsupported(std::string message) {
  return Error{std::move(message), ErrorKind::unsupported, {}};
}

// The same error, its message now `prefix: message`; kind and field are kept.
// The error (or a failed Status) blamed on a limit of values on, which
// values off would not meet (ErrorKind::values_limit).
inline Error values_limit(Error e) {
  e.kind = ErrorKind::values_limit;
  return e;
}
inline Status values_limit(Status s) {
  if (s.ok()) return s;
  return values_limit(s.error());
}

inline Error with_context(std::string_view prefix, Error e) {
  e.message = std::string(prefix) + ": " + e.message;
  return e;
}

}  // namespace capsim

namespace capsim::detail {
// The value of a Result that holds one by construction; see CAPSIM_MUST.
template <typename T>
T must(Result<T> r, const char* file, int line, const char* expr) {
  if (!r.ok()) [[unlikely]]
    check_failed(file, line, expr, r.error().message.c_str());
  return std::move(r).value();
}
inline void must(Status s, const char* file, int line, const char* expr) {
  if (!s.ok()) [[unlikely]]
    check_failed(file, line, expr, s.error().message.c_str());
}
}  // namespace capsim::detail

// `CAPSIM_MUST(expr)`: the value of a Result that cannot be an Error because
// capsim built what it is about (a copy between two tensors it made the same
// shape, a view it sized to fit). An Error here is a bug: it aborts at file
// and line with the message, like CAPSIM_CHECK. Input goes through CAPSIM_TRY.
#define CAPSIM_MUST(expr) ::capsim::detail::must((expr), __FILE__, __LINE__, #expr)

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
