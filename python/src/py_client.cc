#include "python/src/py_client.h"

#include <pybind11/pybind11.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "python/src/status_error.h"
#include "python/src/tensor_checks.h"

namespace entrograd::python {

namespace py = pybind11;

PyClient::PyClient(ClientOptions options, const std::string& metrics_listen,
                   bool per_layer_metrics)
    : options_(std::move(options)) {
  if (metrics_listen.empty()) return;
  absl::StatusOr<std::unique_ptr<ClientMetrics>> started = ClientMetrics::Start(
      {metrics_listen, options_.job_id, options_.rank, per_layer_metrics});
  if (!started.ok()) {
    throw StatusError(absl::Status(
        started.status().code(),
        absl::StrCat("metrics_listen: ", started.status().message())));
  }
  metrics_ = std::move(*started);
}

PyClient::~PyClient() {
  // Closing joins the client's threads; none of them needs the GIL.
  if (client_ != nullptr) client_->Close();
}

void PyClient::Connect(const NamedTensors& parameters, int64_t applied_step,
                       absl::Duration join_timeout) {
  if (closed_) {
    throw StatusError(absl::FailedPreconditionError(
        "the client is closed; create a new entrograd.Client"));
  }
  if (client_ != nullptr) {
    throw StatusError(absl::FailedPreconditionError(
        "the client is already connected (one DistributedOptimizer per "
        "client)"));
  }
  if (parameters.empty()) ThrowInvalidArgument("the model has no parameters");
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, tensor] : parameters) {
    CheckParameter(name, tensor);
    tensors.push_back(tensor);
  }
  ClientOptions options = options_;
  options.applied_step = applied_step;
  std::vector<LayerSpecification> layers = LayerTableOf(parameters);
  const uint64_t hash = HashOfParameters(tensors);
  absl::StatusOr<std::unique_ptr<Client>> client;
  {
    py::gil_scoped_release release;
    client = Client::Connect(std::move(options), std::move(layers), hash,
                             join_timeout);
  }
  if (!client.ok()) {
    throw StatusError(absl::Status(
        client.status().code(), absl::StrCat("connecting to the aggregator: ",
                                             client.status().message())));
  }
  options_.applied_step = applied_step;
  layer_names_.clear();
  for (const auto& [name, tensor] : parameters) layer_names_.push_back(name);
  client_ = std::move(*client);
}

const std::string& PyClient::LayerName(uint32_t layer) const {
  static const std::string* const kNone = new std::string();
  return layer < layer_names_.size() ? layer_names_[layer] : *kNone;
}

Client* PyClient::Connected(const char* user) {
  if (client_ == nullptr || closed_) {
    throw StatusError(absl::FailedPreconditionError(absl::StrCat(
        user, ": the client is ", closed_ ? "closed" : "not connected")));
  }
  return client_.get();
}

ClientTraffic PyClient::Traffic() const {
  return client_ != nullptr ? client_->traffic() : ClientTraffic{};
}

void PyClient::Close() {
  closed_ = true;
  if (client_ == nullptr) return;
  {
    py::gil_scoped_release release;
    client_->Close();
  }
}

}  // namespace entrograd::python
