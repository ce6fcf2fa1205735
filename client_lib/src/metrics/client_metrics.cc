#include "entrograd/client_metrics.h"

#include <map>
#include <mutex>

#include "entrograd/common/metrics_server.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace entrograd {

namespace {

// 100 us .. ~26 s, doubling: compressing a layer spans that range from
// biases to 100M-element embeddings.
prometheus::Histogram::BucketBoundaries CompressBuckets() {
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = 1e-4; bound < 30.0; bound *= 2.0) buckets.push_back(bound);
  return buckets;
}

}  // namespace

struct ClientMetrics::State {
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<MetricsServer> server;
  bool per_layer = false;
  prometheus::Labels labels;
  prometheus::Histogram* compress = nullptr;
  prometheus::Counter* uplink_wire = nullptr;
  prometheus::Counter* uplink_dense = nullptr;
  prometheus::Counter* downlink_wire = nullptr;
  prometheus::Counter* downlink_dense = nullptr;
  prometheus::Counter* reconnects = nullptr;
  prometheus::Counter* saturated = nullptr;
  prometheus::Family<prometheus::Gauge>* entropy_family = nullptr;
  prometheus::Family<prometheus::Gauge>* keep_family = nullptr;
  std::mutex mutex;  // guards `last` and the layer maps
  ClientTraffic last;
  std::map<std::string, std::pair<prometheus::Gauge*, prometheus::Gauge*>> layers;
};

ClientMetrics::ClientMetrics(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
ClientMetrics::~ClientMetrics() = default;

absl::StatusOr<std::unique_ptr<ClientMetrics>> ClientMetrics::Start(
    const ClientMetricsOptions& options) {
  auto state = std::make_unique<State>();
  state->registry = std::make_shared<prometheus::Registry>();
  state->per_layer = options.per_layer;
  state->labels = {{"job", options.job_id}, {"rank", std::to_string(options.rank)}};
  prometheus::Registry& registry = *state->registry;
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add(
        state->labels);
  };
  state->compress = &prometheus::BuildHistogram()
                         .Name("entrograd_client_compress_duration_seconds")
                         .Help("Time to compress one layer's gradient: entropy, "
                               "keep count, selection, residual update.")
                         .Register(registry)
                         .Add(state->labels, CompressBuckets());
  state->uplink_wire = counter("entrograd_client_uplink_wire_bytes_total",
                               "Payload bytes this worker sent (resends included).");
  state->uplink_dense = counter(
      "entrograd_client_uplink_dense_bytes_total",
      "Bytes the sent layers would take as dense float32 (4 per element).");
  state->downlink_wire = counter("entrograd_client_downlink_wire_bytes_total",
                                 "Payload bytes of merged layers received.");
  state->downlink_dense = counter(
      "entrograd_client_downlink_dense_bytes_total",
      "Bytes the received merged layers would take as dense float32.");
  state->reconnects = counter("entrograd_client_reconnects_total",
                              "Streams re-established after a break.");
  state->saturated = counter(
      "entrograd_client_saturated_values_total",
      "Values clipped to the largest finite f16/bf16/e5m2 value when encoding.");
  state->entropy_family = &prometheus::BuildGauge()
                               .Name("entrograd_client_layer_entropy_nats")
                               .Help("Interval entropy H of the layer's last gradient.")
                               .Register(registry);
  state->keep_family = &prometheus::BuildGauge()
                            .Name("entrograd_client_layer_keep_ratio")
                            .Help("Share of the layer's entries sent last step.")
                            .Register(registry);
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start(options.listen, state->registry);
  if (!server.ok()) return server.status();
  state->server = std::move(*server);
  return std::unique_ptr<ClientMetrics>(new ClientMetrics(std::move(state)));
}

void ClientMetrics::ObserveCompress(double seconds) {
  state_->compress->Observe(seconds);
}

void ClientMetrics::UpdateTraffic(const ClientTraffic& totals) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  ClientTraffic& last = state_->last;
  auto advance = [](prometheus::Counter* counter, int64_t now, int64_t& before) {
    if (now > before) counter->Increment(static_cast<double>(now - before));
    before = std::max(before, now);
  };
  advance(state_->uplink_wire, totals.uplink_wire_bytes, last.uplink_wire_bytes);
  advance(state_->uplink_dense, totals.uplink_dense_bytes, last.uplink_dense_bytes);
  advance(state_->downlink_wire, totals.downlink_wire_bytes, last.downlink_wire_bytes);
  advance(state_->downlink_dense, totals.downlink_dense_bytes,
          last.downlink_dense_bytes);
  advance(state_->reconnects, totals.reconnects, last.reconnects);
  advance(state_->saturated, totals.saturated_values, last.saturated_values);
}

void ClientMetrics::ObserveLayer(const std::string& layer, double entropy,
                                 double keep_ratio) {
  if (!state_->per_layer) return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto it = state_->layers.find(layer);
  if (it == state_->layers.end()) {
    prometheus::Labels labels = state_->labels;
    labels["layer"] = layer;
    it = state_->layers
             .emplace(layer, std::make_pair(&state_->entropy_family->Add(labels),
                                            &state_->keep_family->Add(labels)))
             .first;
  }
  it->second.first->Set(entropy);
  it->second.second->Set(keep_ratio);
}

int ClientMetrics::port() const { return state_->server->port(); }

}  // namespace entrograd
