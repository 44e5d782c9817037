// Result<T>: a value or an Error{code, where, message}. core/ returns these instead of throwing
// (std::expected is C++23). The CLI turns an Error into one line on stderr and an exit code.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace moetune::core {

/// What kind of failure: "not found" is kept apart from "broken" (STYLE 14).
enum class ErrorCode {
  kInvalidArgument,  ///< bad user input: a value out of range, an unknown name
  kNotFound,         ///< a file, key or row that does not exist
  kParse,            ///< malformed JSON or a field of the wrong type
  kIo,               ///< a read, write, fsync or rename that failed
  kMismatch,         ///< a table or cache used for a problem it was not made for
  kUnsupported,      ///< a config a backend cannot implement (can_implement)
  kVersion,          ///< a stored format whose version this build does not read
  kInternal,         ///< a bug in moetune
};

/// Stable lower-case name of an error code ("invalid_argument", ...).
const char* to_string(ErrorCode code);

/// One failure. `where` is a location a person can open: "recipes/demo.json:14" or
/// "recipes/demo.json: shapes[0].pinned_rows[16]". `message` says what was wrong, what was seen
/// against what was expected, and what to do.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string where;
  std::string message;

  /// "where: message" (or just the message when `where` is empty), on one line.
  std::string to_string() const;
};

/// A value of type T or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T const& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  T const* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return value(); }
  T const& operator*() const& { return value(); }
  Error const& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Success or an Error, for operations that return nothing.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  Error const& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

/// Shorthand: an Error with the given code, location and message.
inline Error make_error(ErrorCode code, std::string where, std::string message) {
  return Error{code, std::move(where), std::move(message)};
}

}  // namespace moetune::core

/// Return early from a function returning Result/Status when `expr` (a Status) failed.
#define MOETUNE_RETURN_IF_ERROR(expr) \
  do {                                \
    auto moetune_status_ = (expr);    \
    if (!moetune_status_.ok()) {      \
      return moetune_status_.error(); \
    }                                 \
  } while (0)
