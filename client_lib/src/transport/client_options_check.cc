#include "transport/client_options_check.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "entrograd/shard_map.h"
#include "entrograd/wire/job_id.h"

namespace entrograd {

namespace {

// gRPC metadata values must be printable ASCII.
bool IsValidToken(absl::string_view token) {
  for (char c : token) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

absl::Status Positive(absl::string_view field, absl::Duration value) {
  if (value > absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("options.", field, " = ",
                                                 absl::FormatDuration(value),
                                                 " must be positive"));
}

}  // namespace

absl::Status ValidateClientOptions(const ClientOptions& options) {
  if (absl::StatusOr<ShardMap> map = ShardMap::Create(options.shards);
      !map.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.shards: ", map.status().message()));
  }
  if (!IsValidJobId(options.job_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.job_id \"", options.job_id.substr(0, 200),
                     "\" is invalid; expected 1 to 128 of [A-Za-z0-9._-]"));
  }
  if (options.world_size < 1) {
    return absl::InvalidArgumentError("options.world_size must be >= 1");
  }
  if (options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.rank = ", options.rank,
        " is not below options.world_size = ", options.world_size));
  }
  if (options.applied_step < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.applied_step = ", options.applied_step, " is below -1"));
  }
  if (!IsValidToken(options.token)) {
    return absl::InvalidArgumentError(
        "options.token holds a character that is not printable ASCII");
  }
  if (options.tls_client_cert.empty() != options.tls_client_key.empty()) {
    return absl::InvalidArgumentError(
        "options.tls_client_cert and options.tls_client_key go together");
  }
  if (!options.tls_client_cert.empty() && options.tls_root_certs.empty()) {
    return absl::InvalidArgumentError(
        "options.tls_client_cert needs options.tls_root_certs (TLS)");
  }
  const int value_type = static_cast<int>(options.value_type);
  if (value_type < static_cast<int>(ValueType::kF32) ||
      value_type > static_cast<int>(ValueType::kE5M2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.value_type = ", value_type, " is unknown"));
  }
  for (const auto& [field, value] :
       {std::pair<absl::string_view, absl::Duration>{"merge_timeout",
                                                     options.merge_timeout},
        {"reconnect_initial_backoff", options.reconnect_initial_backoff},
        {"reconnect_max_backoff", options.reconnect_max_backoff},
        {"reconnect_give_up_after", options.reconnect_give_up_after},
        {"keepalive_time", options.keepalive_time},
        {"keepalive_timeout", options.keepalive_timeout}}) {
    if (absl::Status status = Positive(field, value); !status.ok()) {
      return status;
    }
  }
  if (options.reconnect_max_backoff < options.reconnect_initial_backoff) {
    return absl::InvalidArgumentError(
        "options.reconnect_max_backoff is below "
        "options.reconnect_initial_backoff");
  }
  if (!(options.reconnect_jitter >= 0.0 && options.reconnect_jitter < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.reconnect_jitter = ", options.reconnect_jitter,
                     " is outside [0, 1)"));
  }
  if (options.max_message_bytes < 1024 || options.max_message_bytes > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_message_bytes = ", options.max_message_bytes,
                     " is outside [1024, ", INT_MAX, "]"));
  }
  if (options.partition_bytes < 0 ||
      (options.partition_bytes > 0 &&
       options.partition_bytes < static_cast<int64_t>(sizeof(float)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.partition_bytes = ", options.partition_bytes,
                     " must be 0 (never cut layers) or at least 4"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLayerTable(const std::vector<LayerSpecification>& layers) {
  if (layers.empty()) {
    return absl::InvalidArgumentError("the layer table is empty");
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].numel < 1 || layers[l].numel > kMaxPayloadNumel) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", l, " (\"", layers[l].name, "\") has numel ",
                       layers[l].numel, "; expected 1 to ", kMaxPayloadNumel));
    }
  }
  return absl::OkStatus();
}

}  // namespace entrograd
