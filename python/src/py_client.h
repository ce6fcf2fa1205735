// PyClient: the Python Client object. It holds the ClientOptions until the
// optimizer connects it with its layer table (Client::Connect needs the
// model's layers and the hash of its initial parameters), then owns the
// connected entrograd::Client. It also owns the client's Prometheus
// endpoint (ClientMetrics) when one was asked for: the optimizer and the
// DDP hook both report into it.
//
// Thread safety: called from Python, so serialised by the GIL; Connect and
// Close release the GIL while they block, and the connected Client is
// itself thread-safe (its SendLayer runs on autograd threads).
#ifndef ENTROGRAD_PYTHON_SRC_PY_CLIENT_H_
#define ENTROGRAD_PYTHON_SRC_PY_CLIENT_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "entrograd/client.h"
#include "entrograd/client_metrics.h"
#include "python/src/named_tensors.h"

namespace entrograd::python {

class PyClient {
 public:
  // Starts the /metrics endpoint on `metrics_listen` ("host:port", port 0
  // picks one) unless it is empty. Throws StatusError: the errors of
  // ClientMetrics::Start (INVALID_ARGUMENT for a malformed address,
  // UNAVAILABLE when it cannot bind).
  PyClient(ClientOptions options, const std::string& metrics_listen,
           bool per_layer_metrics);
  ~PyClient();

  // Client::Connect with LayerTableOf(parameters) and their hash, Joining
  // as `applied_step` (the checkpoint's step - 1, or -1). Blocks up to
  // `join_timeout` with the GIL released. Throws StatusError: the errors of
  // Client::Connect (INVALID_ARGUMENT for bad options, UNAVAILABLE for an
  // unreachable shard, ...); FAILED_PRECONDITION when already connected or
  // closed.
  void Connect(const NamedTensors& parameters, int64_t applied_step,
               absl::Duration join_timeout);

  // The connected client, or a StatusError FAILED_PRECONDITION naming
  // `user` when not connected (or closed).
  Client* Connected(const char* user);
  bool connected() const { return client_ != nullptr; }
  const ClientOptions& options() const { return options_; }

  // Client::traffic(); zeros before Connect.
  ClientTraffic Traffic() const;

  // The endpoint's metrics, or nullptr without one; owned by this object.
  ClientMetrics* metrics() const { return metrics_.get(); }
  // The endpoint's port, 0 without one.
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  // The name of layer `layer` of the connected layer table ("" if none).
  const std::string& LayerName(uint32_t layer) const;

  // Client::Close with the GIL released; idempotent. Pending waits return
  // CANCELLED; the client cannot be connected again.
  void Close();

 private:
  ClientOptions options_;
  // Declared before client_: the client (and the optimizer it serves) is
  // gone before the metrics it reports into.
  std::unique_ptr<ClientMetrics> metrics_;
  std::vector<std::string> layer_names_;
  std::unique_ptr<Client> client_;
  bool closed_ = false;
};

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_PY_CLIENT_H_
