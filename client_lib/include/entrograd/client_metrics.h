// Client-side Prometheus metrics of a training worker, on an optional HTTP
// port: compress duration, uplink/downlink wire and dense-equivalent bytes,
// reconnects, saturated f16/bf16/e5m2 values and, opt-in, each layer's entropy
// and keep ratio (docs/DESIGN.md "Metrics"; names carry the entrograd_client_
// prefix, base units, _total counters). Every series carries the job and
// rank as labels; per-layer series add the layer name, a bounded set (the
// model's parameters).
//
// Thread safety: every method may be called concurrently.
#ifndef ENTROGRAD_CLIENT_METRICS_H_
#define ENTROGRAD_CLIENT_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "entrograd/client.h"

namespace entrograd {

struct ClientMetricsOptions {
  // host:port of the /metrics endpoint ("127.0.0.1:0" picks a free port).
  std::string listen;
  std::string job_id;
  uint32_t rank = 0;
  // Per-layer entropy and keep-ratio gauges (one series per layer).
  bool per_layer = false;
};

class ClientMetrics {
 public:
  // Errors: those of the HTTP server (INVALID_ARGUMENT for a malformed
  // address, UNAVAILABLE when it cannot bind).
  static absl::StatusOr<std::unique_ptr<ClientMetrics>> Start(
      const ClientMetricsOptions& options);
  ~ClientMetrics();

  // entrograd_client_compress_duration_seconds (histogram), per layer.
  void ObserveCompress(double seconds);
  // Advances the byte, reconnect and saturation counters to `totals` (the
  // client's cumulative counters; only the increase since the last call is
  // added).
  void UpdateTraffic(const ClientTraffic& totals);
  // entrograd_client_layer_entropy_nats / _keep_ratio{layer}; ignored unless
  // per_layer.
  void ObserveLayer(const std::string& layer, double entropy,
                    double keep_ratio);

  int port() const;

 private:
  struct State;
  explicit ClientMetrics(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_CLIENT_METRICS_H_
