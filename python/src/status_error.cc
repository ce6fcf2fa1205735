#include "python/src/status_error.h"

#include <utility>

#include "absl/status/status.h"

namespace entrograd::python {

namespace py = pybind11;

StatusError::StatusError(absl::Status status)
    : status_(std::move(status)), what_(status_.ToString()) {}

void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

void ThrowInvalidArgument(const std::string& message) {
  throw StatusError(absl::InvalidArgumentError(message));
}

void RegisterStatusErrors() {
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const StatusError& error) {
      // absl's code names are the gRPC ones ("UNAVAILABLE", ...).
      py::object exception =
          py::module_::import("entrograd.errors")
              .attr("_from_status")(
                  absl::StatusCodeToString(error.status().code()),
                  std::string(error.status().message()));
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())),
                      exception.ptr());
    }
  });
}

}  // namespace entrograd::python
