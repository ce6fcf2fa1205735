#include "aggregator/config/aggregator_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "gRPC address host:port (port 0: any free port)");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics address host:port; empty disables");
ABSL_FLAG(std::string, health_listen, "",
          "plaintext address host:port serving only grpc.health.v1 (for "
          "probes when the main port uses TLS); empty disables");
ABSL_FLAG(absl::Duration, round_timeout, absl::Seconds(60),
          "abort a round not complete this long after its first contribution");
ABSL_FLAG(int64_t, memory_quota_bytes, int64_t{4} << 30,
          "bytes of contributions and merged updates held at once");
ABSL_FLAG(int32_t, max_jobs, 64, "jobs served at once");
ABSL_FLAG(uint32_t, max_world_size, 4096,
          "largest world size a Join may declare");
ABSL_FLAG(int32_t, max_layers, entrograd::aggregator::RegistryOptions{}.max_layers,
          "largest layer table a Join may declare");
ABSL_FLAG(int32_t, max_rounds_per_job,
          entrograd::aggregator::RegistryOptions{}.max_rounds_per_job,
          "rounds in flight per job (more: RESOURCE_EXHAUSTED, retryable); "
          "also the aborted-round records a job keeps");
ABSL_FLAG(absl::Duration, max_incarnation_lead,
          entrograd::aggregator::RegistryOptions{}.max_incarnation_lead,
          "how far a Join's incarnation may be ahead of this shard's clock "
          "in microseconds since the Unix epoch (FAILED_PRECONDITION beyond)");
ABSL_FLAG(int64_t, max_stream_queue_bytes, 0,
          "bytes of answers queued for one stream; a slower reader is ended "
          "with RESOURCE_EXHAUSTED (0: 4 x --max_message_bytes)");
ABSL_FLAG(int32_t, merge_threads,
          entrograd::aggregator::AggregatorConfig{}.merge_threads,
          "threads that decode contributions and merge rounds, off the gRPC "
          "threads (0: one per hardware thread); a stream waiting for one is "
          "not read");
ABSL_FLAG(uint32_t, max_steps_ahead, 4,
          "steps a contribution may run ahead of the slowest rank");
ABSL_FLAG(int64_t, max_message_bytes, int64_t{256} << 20,
          "largest gRPC message received or sent, bytes");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(30),
          "HTTP/2 keepalive ping interval");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(10),
          "HTTP/2 keepalive ping ack timeout");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA that must sign client certificates (mTLS)");
ABSL_FLAG(std::string, token_file, "",
          "bearer tokens, lines of 'JOB_ID TOKEN' ('*' for every job)");
ABSL_FLAG(bool, reflection, false, "enable gRPC server reflection");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(20),
          "on SIGTERM, how long rounds in flight may take before abort");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");
ABSL_FLAG(std::string, shard_name, "aggregator",
          "this replica's name, reported to workers in JoinAck");

namespace entrograd::aggregator {

absl::StatusOr<AggregatorConfig> ConfigFromFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "entrograd-aggregator: merges the sparse gradient updates of a job's "
      "workers and streams the merged update back.\n"
      "Usage: entrograd-aggregator --listen=HOST:PORT [--metrics_listen=...] "
      "[flags]");
  absl::ParseCommandLine(argc, argv);
  AggregatorConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  config.health_listen = absl::GetFlag(FLAGS_health_listen);
  config.registry.round_timeout = absl::GetFlag(FLAGS_round_timeout);
  config.registry.memory_quota_bytes = absl::GetFlag(FLAGS_memory_quota_bytes);
  config.registry.max_jobs = absl::GetFlag(FLAGS_max_jobs);
  config.registry.max_world_size = absl::GetFlag(FLAGS_max_world_size);
  config.registry.max_steps_ahead = absl::GetFlag(FLAGS_max_steps_ahead);
  config.registry.max_layers = absl::GetFlag(FLAGS_max_layers);
  config.registry.max_rounds_per_job = absl::GetFlag(FLAGS_max_rounds_per_job);
  config.registry.max_incarnation_lead =
      absl::GetFlag(FLAGS_max_incarnation_lead);
  config.max_stream_queue_bytes = absl::GetFlag(FLAGS_max_stream_queue_bytes);
  config.merge_threads = absl::GetFlag(FLAGS_merge_threads);
  config.registry.shard_name = absl::GetFlag(FLAGS_shard_name);
  config.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  config.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  config.keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  config.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  config.token_file = absl::GetFlag(FLAGS_token_file);
  config.reflection = absl::GetFlag(FLAGS_reflection);
  config.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  config.log_level = absl::GetFlag(FLAGS_log_level);
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  return config;
}

}  // namespace entrograd::aggregator
