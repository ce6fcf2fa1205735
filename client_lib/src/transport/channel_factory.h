// The gRPC channel to one aggregator shard, configured from ClientOptions:
// keepalive, message size limits, reconnect backoff, TLS (with an optional
// client certificate) or plaintext. The bearer token is not part of the
// channel; the shard stream adds it to each call's metadata.
#ifndef ENTROGRAD_TRANSPORT_CHANNEL_FACTORY_H_
#define ENTROGRAD_TRANSPORT_CHANNEL_FACTORY_H_

#include <memory>
#include <string>

#include "entrograd/client.h"
#include "grpcpp/channel.h"

namespace entrograd {

// A new channel (its own connection, not shared with other clients in the
// process) to `address`. Does not connect yet. `options` must be valid
// (ValidateClientOptions).
std::shared_ptr<grpc::Channel> MakeShardChannel(const std::string& address,
                                                const ClientOptions& options);

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_CHANNEL_FACTORY_H_
