// The aggregator process's server: the Exchange service on the gRPC port
// (callback API), grpc.health.v1 (SERVING; NOT_SERVING while draining),
// optional reflection, TLS and bearer tokens, /metrics on its own port, an
// optional plaintext port with grpc.health.v1 alone, and the round reaper
// that aborts rounds past their timeout.
//
// Thread safety: Start, Drain and Wait may be called from different threads;
// Drain is idempotent.
#ifndef ENTROGRAD_AGGREGATOR_SERVER_AGGREGATOR_SERVER_H_
#define ENTROGRAD_AGGREGATOR_SERVER_AGGREGATOR_SERVER_H_

#include <memory>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "aggregator/config/aggregator_config.h"
#include "aggregator/metrics/aggregator_metrics.h"
#include "aggregator/rounds/job_registry.h"
#include "aggregator/auth/token_store.h"
#include "grpcpp/grpcpp.h"

namespace entrograd::aggregator {

class AggregatorService;

class AggregatorServer {
 public:
  // Validates `config`, binds both ports and starts serving. Errors:
  // INVALID_ARGUMENT (config, token file, TLS files), UNAVAILABLE (a port
  // cannot be bound).
  static absl::StatusOr<std::unique_ptr<AggregatorServer>> Start(
      const AggregatorConfig& config);
  ~AggregatorServer();

  int port() const { return port_; }
  int metrics_port() const;  // 0 when metrics are off
  // The plaintext health-only port; 0 when config.health_listen is empty.
  int health_port() const { return health_port_; }
  JobRegistry& registry() { return *registry_; }
  // What /metrics serves; there also when metrics_listen is empty, so that
  // tests can read the counters in process.
  prometheus::Registry& metrics_registry() { return *metrics_registry_; }

  // Graceful stop: health NOT_SERVING, no new Joins, rounds in flight get
  // until `timeout` (the config's drain_timeout by default) to finish, the
  // rest are aborted, then the gRPC server shuts down.
  void Drain(std::optional<absl::Duration> timeout = std::nullopt);
  // Blocks until the server has shut down.
  void Wait();

  // Stops at once as if the process were killed: no drain, no round errors,
  // streams cancelled. For fault-injection tests of the resend protocol.
  void Abandon();

 private:
  AggregatorServer() = default;
  void ReapLoop();
  // Both servers' health: "" and the Exchange service.
  void SetServing(bool serving);

  AggregatorConfig config_;
  std::shared_ptr<prometheus::Registry> metrics_registry_;
  std::unique_ptr<AggregatorMetrics> metrics_;
  std::unique_ptr<MetricsServer> metrics_server_;
  std::optional<TokenStore> tokens_;
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<AggregatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  // The plaintext health-only server (config.health_listen); null when off.
  std::unique_ptr<grpc::Server> health_server_;
  int health_port_ = 0;
  absl::Notification stop_reaper_;
  std::thread reaper_;
  absl::Mutex drain_mutex_;
  bool drained_ ABSL_GUARDED_BY(drain_mutex_) = false;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVER_AGGREGATOR_SERVER_H_
