// PyClient: the Python Client object. It holds the ClientOptions until the
// optimizer connects it with its layer table (Client::Connect needs the
// model's layers and the hash of its initial parameters), then owns the
// connected entrograd::Client.
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
#include "python/src/named_tensors.h"

namespace entrograd::python {

class PyClient {
 public:
  explicit PyClient(ClientOptions options) : options_(std::move(options)) {}
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

  // Client::Close with the GIL released; idempotent. Pending waits return
  // CANCELLED; the client cannot be connected again.
  void Close();

 private:
  ClientOptions options_;
  std::unique_ptr<Client> client_;
  bool closed_ = false;
};

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_PY_CLIENT_H_
