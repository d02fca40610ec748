// Result<T>: a value or an Error, for everything that can fail because of its input.
//
// docs/conventions.md §6: bad input (a packet, a TOML file, a cron expression, an API request) is
// an error value with a message a person can act on, never a crash.  Local misuse of an
// API is an assert instead.  GCC 12 has no std::expected, so this is the small subset
// the project needs.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace caesium {

struct Error {
  std::string message;  // full sentence(s) a person can act on
  std::string field;    // the offending field/key/column name, when there is one

  Error() = default;
  explicit Error(std::string msg, std::string fld = {})
      : message(std::move(msg)), field(std::move(fld)) {}
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // REQUIRES: !ok()
  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status success() { return Status(); }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  // REQUIRES: !ok()
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace caesium
