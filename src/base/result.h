// Result<T> and Status: the error channel of every rung. An error carries one or more
// diagnostics (a validator reports every problem it finds, not just the first).
#pragma once

#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "base/diagnostic.h"

namespace scellis {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Diagnostic d) { errors_.push_back(std::move(d)); }  // NOLINT: implicit on purpose
  Status(std::vector<Diagnostic> ds) : errors_(std::move(ds)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return errors_.empty(); }
  const std::vector<Diagnostic>& errors() const { return errors_; }
  const Diagnostic& first() const { return errors_.front(); }

 private:
  std::vector<Diagnostic> errors_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}    // NOLINT
  Result(Diagnostic d) : status_(std::move(d)) {}  // NOLINT
  Result(Status s) : status_(std::move(s)) {}      // NOLINT: must hold an error

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const std::vector<Diagnostic>& errors() const { return status_.errors(); }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace scellis

#define SCELLIS_CONCAT_INNER(a, b) a##b
#define SCELLIS_CONCAT(a, b) SCELLIS_CONCAT_INNER(a, b)

// Propagates a failed Status.
#define SCELLIS_TRY(expr)           \
  do {                              \
    ::scellis::Status _st = (expr); \
    if (!_st.ok()) return _st;      \
  } while (0)

// `SCELLIS_ASSIGN_OR_RETURN(auto x, Compute());`
#define SCELLIS_ASSIGN_OR_RETURN(lhs, expr) \
  SCELLIS_ASSIGN_OR_RETURN_IMPL(SCELLIS_CONCAT(_res_, __LINE__), lhs, expr)
#define SCELLIS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
