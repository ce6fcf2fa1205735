// Serves GET /metrics of a prometheus-cpp registry over HTTP on its own
// port, beside the gRPC port (docs/DESIGN.md "Metrics"). Shared by the aggregator
// and the client library.
//
// Thread safety: Start is thread-safe; the server scrapes the registry on its
// own threads (prometheus-cpp metrics are thread-safe).
#ifndef ENTROGRAD_COMMON_METRICS_SERVER_H_
#define ENTROGRAD_COMMON_METRICS_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace prometheus {
class Registry;
class Exposer;
}  // namespace prometheus

namespace entrograd {

// Serves GET /metrics for `registry` over HTTP on `address`: "host:port"
// where host is an IPv4 literal ("0.0.0.0", "127.0.0.1") or a bracketed IPv6
// literal ("[::]", "[::1]"), and port is 0..65535 (0 picks a free port; see
// port()). Errors: INVALID_ARGUMENT for a malformed address or a null
// registry, UNAVAILABLE when it cannot bind (port in use, address not local,
// or an IPv6 address with a civetweb built without IPv6, as Debian 12's is).
// The server keeps `registry` alive and serves on its own threads until it
// is destroyed; the destructor stops them and closes the port, and may block
// up to ~2 s (civetweb's accept-poll quantum). Besides `registry`, the
// response carries prometheus-cpp's own exposer_* scrape metrics.
class MetricsServer {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address,
      std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The port actually bound (never 0 after a successful Start).
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace entrograd

#endif  // ENTROGRAD_COMMON_METRICS_SERVER_H_
