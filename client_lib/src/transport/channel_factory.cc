#include "transport/channel_factory.h"

#include <algorithm>
#include <climits>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace entrograd {

namespace {

int Milliseconds(absl::Duration duration) {
  return static_cast<int>(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(duration), 1, INT_MAX));
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeShardChannel(const std::string& address,
                                                const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, Milliseconds(options.keepalive_time));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              Milliseconds(options.keepalive_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // unlimited
  args.SetMaxSendMessageSize(
      static_cast<int>(std::min<int64_t>(options.max_message_bytes, INT_MAX)));
  // What the shard sends is bounded by its own limit (the JoinAck's
  // max_message_bytes), which may exceed ours: a merged update carries the
  // union of every rank's indices. Never refuse it here.
  args.SetMaxReceiveMessageSize(-1);
  // The channel's own reconnect follows the client's backoff, so a shard
  // that comes back is reachable by the next attempt of the shard stream.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              Milliseconds(options.reconnect_initial_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              Milliseconds(options.reconnect_max_backoff));
  // Each client owns its connections: two workers in one process (tests,
  // the local launcher) must not share a socket, nor fail together.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);

  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls_root_certs.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs;
    ssl.pem_private_key = options.tls_client_key;
    ssl.pem_cert_chain = options.tls_client_cert;
    credentials = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(address, credentials, args);
}

}  // namespace entrograd
