// CompressionOptions and ClientOptions for Python: every field as an
// attribute of the same name, durations in seconds (float), enums by their
// names ("entropy", "f32"). The defaults are the C++ structs' own, so they
// cannot drift.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "entrograd/client.h"
#include "entrograd/codec.h"
#include "entrograd/compression_options.h"
#include "python/src/bindings.h"
#include "python/src/status_error.h"

namespace entrograd::python {

namespace py = pybind11;

namespace {

// A read/write float-seconds attribute over an absl::Duration field.
template <typename Class>
void DurationSeconds(py::class_<Class>& cls, const char* name,
                     absl::Duration Class::*field) {
  cls.def_property(
      name,
      [field](const Class& self) { return absl::ToDoubleSeconds(self.*field); },
      [name, field](Class& self, double seconds) {
        if (!(seconds > 0)) {
          ThrowInvalidArgument(std::string(name) + " = " +
                               std::to_string(seconds) +
                               "; expected seconds > 0");
        }
        self.*field = absl::Seconds(seconds);
      });
}

}  // namespace

void RegisterOptions(py::module_& module) {
  py::class_<CompressionOptions> compression(module, "CompressionOptions");
  compression.def(py::init<>())
      .def_property(
          "policy",
          [](const CompressionOptions& self) {
            return std::string(KeepPolicyName(self.policy));
          },
          [](CompressionOptions& self, const std::string& name) {
            absl::StatusOr<KeepPolicy> policy = ParseKeepPolicy(name);
            ThrowIfError(policy.status());
            self.policy = *policy;
          })
      .def_property(
          "entropy_of",
          [](const CompressionOptions& self) {
            return std::string(EntropySourceName(self.entropy_of));
          },
          [](CompressionOptions& self, const std::string& name) {
            absl::StatusOr<EntropySource> source = ParseEntropySource(name);
            ThrowIfError(source.status());
            self.entropy_of = *source;
          })
      .def_readwrite("rho", &CompressionOptions::rho)
      .def_readwrite("min_keep_ratio", &CompressionOptions::min_keep_ratio)
      .def_readwrite("share_hold_steps", &CompressionOptions::share_hold_steps)
      .def_readwrite("budget_density", &CompressionOptions::budget_density)
      .def_readwrite("threshold", &CompressionOptions::threshold)
      .def_readwrite("intervals", &CompressionOptions::intervals)
      .def_readwrite("dense_below", &CompressionOptions::dense_below)
      .def_readwrite("warmup_steps", &CompressionOptions::warmup_steps)
      .def_readwrite("momentum_correction",
                     &CompressionOptions::momentum_correction)
      .def_readwrite("momentum", &CompressionOptions::momentum)
      .def("validate", [](const CompressionOptions& self) {
        ThrowIfError(ValidateCompressionOptions(self));
      });

  py::class_<ClientOptions> client(module, "ClientOptions");
  client.def(py::init<>())
      .def_readwrite("shards", &ClientOptions::shards)
      .def_readwrite("job_id", &ClientOptions::job_id)
      .def_readwrite("rank", &ClientOptions::rank)
      .def_readwrite("world_size", &ClientOptions::world_size)
      .def_readwrite("incarnation", &ClientOptions::incarnation)
      .def_readwrite("applied_step", &ClientOptions::applied_step)
      .def_readwrite("token", &ClientOptions::token)
      .def_readwrite("tls_root_certs", &ClientOptions::tls_root_certs)
      .def_readwrite("tls_client_cert", &ClientOptions::tls_client_cert)
      .def_readwrite("tls_client_key", &ClientOptions::tls_client_key)
      .def_property(
          "value_type",
          [](const ClientOptions& self) {
            return std::string(ValueTypeName(self.value_type));
          },
          [](ClientOptions& self, const std::string& name) {
            absl::StatusOr<ValueType> type = ParseValueType(name);
            ThrowIfError(type.status());
            self.value_type = *type;
          })
      .def_readwrite("gap_range_indices", &ClientOptions::gap_range_indices)
      .def_readwrite("reconnect_jitter", &ClientOptions::reconnect_jitter)
      .def_readwrite("max_message_bytes", &ClientOptions::max_message_bytes)
      .def_readwrite("partition_bytes", &ClientOptions::partition_bytes);
  DurationSeconds(client, "merge_timeout", &ClientOptions::merge_timeout);
  DurationSeconds(client, "reconnect_initial_backoff",
                  &ClientOptions::reconnect_initial_backoff);
  DurationSeconds(client, "reconnect_max_backoff",
                  &ClientOptions::reconnect_max_backoff);
  DurationSeconds(client, "reconnect_give_up_after",
                  &ClientOptions::reconnect_give_up_after);
  DurationSeconds(client, "keepalive_time", &ClientOptions::keepalive_time);
  DurationSeconds(client, "keepalive_timeout",
                  &ClientOptions::keepalive_timeout);
}

}  // namespace entrograd::python
