// Everything the aggregator binary is configured with, as validated values.
// main.cc turns flags into an AggregatorConfig; tests build one directly.
#ifndef ENTROGRAD_AGGREGATOR_CONFIG_AGGREGATOR_CONFIG_H_
#define ENTROGRAD_AGGREGATOR_CONFIG_AGGREGATOR_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "aggregator/rounds/job_registry.h"

namespace entrograd::aggregator {

struct AggregatorConfig {
  // gRPC address, host:port; port 0 picks a free port. Flag --listen.
  std::string listen = "0.0.0.0:50051";
  // /metrics address, host:port; empty disables. Flag --metrics_listen.
  std::string metrics_listen = "0.0.0.0:9464";
  // A second gRPC address, host:port, serving only grpc.health.v1 and always
  // in plaintext; empty disables. For the kubelet's native gRPC probe, which
  // cannot speak TLS to the main port. Health carries no data and needs no
  // token, so plaintext exposes nothing. Flag --health_listen.
  std::string health_listen;
  // Rounds, quota, limits (flags --round_timeout, --memory_quota_bytes,
  // --max_jobs, --max_world_size, --max_layers, --max_rounds_per_job,
  // --max_steps_ahead, --max_incarnation_lead).
  RegistryOptions registry;
  // Largest message accepted or sent, bytes. Flag --max_message_bytes.
  int64_t max_message_bytes = int64_t{256} << 20;
  // Bytes of answers (merged updates, round errors) queued for one stream;
  // a worker that reads slower than that is ended with RESOURCE_EXHAUSTED
  // and reconnects. 0: 4 x max_message_bytes. Flag --max_stream_queue_bytes.
  int64_t max_stream_queue_bytes = 0;
  // Threads that decode contributions and merge and encode complete rounds,
  // off gRPC's callback threads (the merge pool); 0: one per hardware
  // thread (std::thread::hardware_concurrency()). A stream whose update
  // waits for a pool thread is not read meanwhile. Flag --merge_threads.
  int merge_threads = 0;
  // HTTP/2 keepalive ping interval and ack timeout. Flags --keepalive_time,
  // --keepalive_timeout.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // TLS: PEM certificate chain and key (both or neither); with a client CA,
  // clients must present a certificate it signed (mTLS). Flags --tls_cert,
  // --tls_key, --tls_client_ca.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Bearer tokens (see token_store.h); empty: no authentication. Flag
  // --token_file.
  std::string token_file;
  // gRPC server reflection (off by default). Flag --reflection.
  bool reflection = false;
  // How long SIGTERM waits for rounds in flight before aborting them and
  // shutting down. Flag --drain_timeout.
  absl::Duration drain_timeout = absl::Seconds(20);
  // "debug", "info", "warning", "error". Flag --log_level.
  std::string log_level = "info";
};

// Most threads --merge_threads may ask for.
inline constexpr int kMaxMergeThreads = 1024;

// The merge pool's size for `config`: merge_threads, or when that is 0 the
// hardware threads (at least 1).
int MergeThreads(const AggregatorConfig& config);

// OK, or INVALID_ARGUMENT naming the flag (e.g. "--round_timeout") and the
// bad value. Also checks that the TLS and token files are readable.
absl::Status ValidateConfig(const AggregatorConfig& config);

// One line for stderr at start-up when `config` serves gRPC in plaintext (no
// TLS certificate), or "" when it serves TLS. With bearer tokens too, the
// line says that the tokens themselves cross the network readable, which is
// worse than readable gradients: whoever reads a token can join its job.
// The binary warns rather than refuses because plaintext is right on a
// loopback or inside a mesh that already encrypts (e.g. an mTLS sidecar).
std::string PlaintextWarning(const AggregatorConfig& config);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_CONFIG_AGGREGATOR_CONFIG_H_
