// _C.Client: PyClient for Python (see py_client.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include "absl/time/time.h"
#include "python/src/bindings.h"
#include "python/src/py_client.h"
#include "python/src/status_error.h"

namespace entrograd::python {

namespace py = pybind11;

void RegisterClient(py::module_& module) {
  py::class_<PyClient>(module, "Client")
      .def(py::init<ClientOptions, const std::string&, bool>(),
           py::arg("options"), py::arg("metrics_listen") = "",
           py::arg("per_layer_metrics") = false)
      .def_property_readonly("metrics_port", &PyClient::metrics_port)
      .def(
          "connect",
          [](PyClient& self, const NamedTensors& parameters,
             int64_t applied_step, double join_timeout_seconds) {
            if (!(join_timeout_seconds > 0)) {
              ThrowInvalidArgument("join_timeout must be > 0 seconds");
            }
            self.Connect(parameters, applied_step,
                         absl::Seconds(join_timeout_seconds));
          },
          py::arg("named_parameters"), py::arg("applied_step"),
          py::arg("join_timeout"))
      .def_property_readonly("connected", &PyClient::connected)
      .def_property_readonly("options", &PyClient::options)
      .def("traffic",
           [](const PyClient& self) {
             const ClientTraffic traffic = self.Traffic();
             py::dict out;
             out["uplink_wire_bytes"] = traffic.uplink_wire_bytes;
             out["uplink_dense_bytes"] = traffic.uplink_dense_bytes;
             out["downlink_wire_bytes"] = traffic.downlink_wire_bytes;
             out["downlink_dense_bytes"] = traffic.downlink_dense_bytes;
             out["reconnects"] = traffic.reconnects;
             out["saturated_values"] = traffic.saturated_values;
             return out;
           })
      .def("close", &PyClient::Close);
}

}  // namespace entrograd::python
