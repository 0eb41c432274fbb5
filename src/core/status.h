// Status and Result<T>: the one error type of stallscope.
//
// Every fallible function returns a [[nodiscard]] Status (no value) or a
// Result<T> (a value or the Status that says why not). Messages name the
// thing that failed (file and line, flag, PID) and carry the errno text, so a
// caller can print them as they are. Exceptions never cross a module
// boundary; code that calls a throwing library catches at its edge.
// Values of these types are plain data and thread-compatible.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace stallscope {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk,
    kNotFound,
    kPermissionDenied,
    kIoError,
    kParseError,
    kInvalidArgument,
    kUnavailable
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status NotFound(std::string_view what) { return Status(Code::kNotFound, what); }
  static Status InvalidArgument(std::string_view what) {
    return Status(Code::kInvalidArgument, what);
  }
  static Status Unavailable(std::string_view what) { return Status(Code::kUnavailable, what); }
  // From a failed system call: "<context>: <strerror(err)>"; ENOENT maps to
  // kNotFound and EACCES/EPERM to kPermissionDenied so callers can degrade.
  static Status FromErrno(std::string_view context, int err);
  // A malformed input: "<source>:<line>: <what>". line 0 means the whole file.
  static Status ParseError(std::string_view source, int line, std::string_view what);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string_view message) : code_(code), message_(message) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that says why there is none. Holds an optional and a
// Status rather than a std::variant: g++ 12 reports false maybe-uninitialized
// warnings on variant<T, Status> at -O2, and warnings are errors here.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::InvalidArgument("Result built from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace stallscope
