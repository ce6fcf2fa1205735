#include "aggregator/config/aggregator_config.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "entrograd/common/log.h"

namespace entrograd::aggregator {

namespace {

absl::Status BadFlag(absl::string_view flag, absl::string_view value,
                     absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": ", expected));
}

absl::Status CheckAddress(absl::string_view flag, const std::string& address,
                          bool allow_empty) {
  if (address.empty()) {
    return allow_empty ? absl::OkStatus()
                       : BadFlag(flag, address, "expected host:port");
  }
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return BadFlag(flag, address, "expected host:port with port 0-65535");
  }
  return absl::OkStatus();
}

absl::Status CheckReadable(absl::string_view flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::ifstream file(path);
  if (!file) return BadFlag(flag, path, "the file cannot be read");
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateConfig(const AggregatorConfig& config) {
  if (absl::Status s = CheckAddress("listen", config.listen, false); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckAddress("metrics_listen", config.metrics_listen, true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckAddress("health_listen", config.health_listen,
                                    /*allow_empty=*/true);
      !s.ok()) {
    return s;
  }
  const RegistryOptions& registry = config.registry;
  if (registry.round_timeout <= absl::ZeroDuration()) {
    return BadFlag("round_timeout",
                   absl::FormatDuration(registry.round_timeout),
                   "expected a positive duration such as 60s");
  }
  if (registry.memory_quota_bytes < 1024) {
    return BadFlag("memory_quota_bytes",
                   absl::StrCat(registry.memory_quota_bytes),
                   "expected at least 1024 bytes");
  }
  if (registry.max_jobs < 1) {
    return BadFlag("max_jobs", absl::StrCat(registry.max_jobs),
                   "expected >= 1");
  }
  if (registry.max_world_size < 1 || registry.max_world_size > 1000000) {
    return BadFlag("max_world_size", absl::StrCat(registry.max_world_size),
                   "expected 1 to 1000000");
  }
  if (registry.max_layers < 1 || registry.max_layers > 1000000) {
    return BadFlag("max_layers", absl::StrCat(registry.max_layers),
                   "expected 1 to 1000000");
  }
  if (registry.max_rounds_per_job < 1) {
    return BadFlag("max_rounds_per_job",
                   absl::StrCat(registry.max_rounds_per_job), "expected >= 1");
  }
  if (registry.max_incarnation_lead < absl::ZeroDuration()) {
    return BadFlag("max_incarnation_lead",
                   absl::FormatDuration(registry.max_incarnation_lead),
                   "expected a duration >= 0 such as 1h");
  }
  if (config.max_message_bytes < 1024 ||
      config.max_message_bytes > (int64_t{2} << 30) - 1) {
    return BadFlag("max_message_bytes", absl::StrCat(config.max_message_bytes),
                   "expected 1024 to 2147483647");
  }
  if (config.max_stream_queue_bytes != 0 &&
      config.max_stream_queue_bytes < config.max_message_bytes) {
    return BadFlag("max_stream_queue_bytes",
                   absl::StrCat(config.max_stream_queue_bytes),
                   "expected 0 (4 x --max_message_bytes) or at least "
                   "--max_message_bytes");
  }
  if (config.merge_threads < 0 || config.merge_threads > kMaxMergeThreads) {
    return BadFlag("merge_threads", absl::StrCat(config.merge_threads),
                   absl::StrCat("expected 0 (one per hardware thread) to ",
                                kMaxMergeThreads));
  }
  if (config.keepalive_time < absl::Seconds(1)) {
    return BadFlag("keepalive_time",
                   absl::FormatDuration(config.keepalive_time),
                   "expected at least 1s");
  }
  if (config.keepalive_timeout <= absl::ZeroDuration()) {
    return BadFlag("keepalive_timeout",
                   absl::FormatDuration(config.keepalive_timeout),
                   "expected a positive duration");
  }
  if (config.drain_timeout < absl::ZeroDuration()) {
    return BadFlag("drain_timeout", absl::FormatDuration(config.drain_timeout),
                   "expected a duration >= 0");
  }
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return BadFlag(config.tls_cert_file.empty() ? "tls_key" : "tls_cert",
                   config.tls_cert_file.empty() ? config.tls_key_file
                                                : config.tls_cert_file,
                   "--tls_cert and --tls_key must be given together");
  }
  if (!config.tls_client_ca_file.empty() && config.tls_cert_file.empty()) {
    return BadFlag("tls_client_ca", config.tls_client_ca_file,
                   "mTLS needs --tls_cert and --tls_key too");
  }
  for (const auto& [flag, path] :
       {std::pair<absl::string_view, const std::string&>{"tls_cert",
                                                         config.tls_cert_file},
        {"tls_key", config.tls_key_file},
        {"tls_client_ca", config.tls_client_ca_file},
        {"token_file", config.token_file}}) {
    if (absl::Status s = CheckReadable(flag, path); !s.ok()) return s;
  }
  if (!ParseLogLevel(config.log_level).ok()) {
    return BadFlag("log_level", config.log_level,
                   "expected debug, info, warning or error");
  }
  return absl::OkStatus();
}

int MergeThreads(const AggregatorConfig& config) {
  if (config.merge_threads > 0) return config.merge_threads;
  // hardware_concurrency() may be 0 when it cannot tell.
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string PlaintextWarning(const AggregatorConfig& config) {
  if (!config.tls_cert_file.empty()) return "";
  if (!config.token_file.empty()) {
    return "WARNING: bearer tokens (--token_file) are checked on a plaintext "
           "gRPC port (no --tls_cert): every token crosses the network "
           "readable, and whoever reads one can join its job; give --tls_cert "
           "and --tls_key";
  }
  return "WARNING: serving gRPC in plaintext (no --tls_cert): gradients and "
         "merged updates cross the network readable and alterable; give "
         "--tls_cert and --tls_key unless the network is trusted";
}

}  // namespace entrograd::aggregator
