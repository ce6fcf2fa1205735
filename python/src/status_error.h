// absl::Status errors of the entrograd C++ API as Python exceptions.
//
// Binding code throws StatusError (ThrowIfError); the translator registered
// by RegisterStatusErrors turns it into an instance of the matching
// entrograd.errors class (entrograd.Error with .code = the gRPC code name,
// e.g. "UNAVAILABLE", and .message), created by
// entrograd.errors._from_status so that the Python classes are defined in
// one place (python/entrograd/errors.py).
//
// Thread safety: ThrowIfError may be called with or without the GIL; the
// translation runs in pybind11 with the GIL held.
#ifndef ENTROGRAD_PYTHON_SRC_STATUS_ERROR_H_
#define ENTROGRAD_PYTHON_SRC_STATUS_ERROR_H_

#include <pybind11/pybind11.h>

#include <exception>
#include <string>

#include "absl/status/status.h"

namespace entrograd::python {

// A non-OK status on its way to Python.
class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status);
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  absl::Status status_;
  std::string what_;
};

// Throws StatusError when `status` is not OK.
void ThrowIfError(const absl::Status& status);
// Throws StatusError(INVALID_ARGUMENT, message).
[[noreturn]] void ThrowInvalidArgument(const std::string& message);

// Registers the StatusError -> entrograd.errors translator.
void RegisterStatusErrors();

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_STATUS_ERROR_H_
