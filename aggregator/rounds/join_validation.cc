#include "aggregator/rounds/join_validation.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "aggregator/rounds/log_text.h"
#include "entrograd/codec.h"
#include "entrograd/wire/job_id.h"

namespace entrograd::aggregator {

namespace {

absl::Status ValidateLayerName(int index, absl::string_view name) {
  const auto printable = [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 &&
           static_cast<unsigned char>(c) <= 0x7e;
  };
  if (name.empty() || name.size() > kMaxLayerNameBytes ||
      !std::all_of(name.begin(), name.end(), printable)) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.layers[", index, "].name \"", LogText(name), "\" (",
                     name.size(), " bytes) is invalid; expected 1 to ",
                     kMaxLayerNameBytes, " printable ASCII bytes (0x20-0x7e)"));
  }
  return absl::OkStatus();
}

// The largest incarnation a Join may carry now: the shard's clock in
// microseconds plus the lead.
uint64_t IncarnationLimit(absl::Duration lead) {
  const int64_t now_us = absl::ToUnixMicros(absl::Now());
  const int64_t lead_us = absl::ToInt64Microseconds(lead);
  return static_cast<uint64_t>(std::max<int64_t>(now_us, 0)) +
         static_cast<uint64_t>(std::max<int64_t>(lead_us, 0));
}

}  // namespace

absl::Status ValidateJoinShape(const v1::Join& join,
                               const RegistryOptions& options) {
  if (!IsValidJobId(join.job_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.job_id \"", LogText(join.job_id()),
                     "\" is invalid; expected 1 to 128 of [A-Za-z0-9._-]"));
  }
  if (join.world_size() < 1 || join.world_size() > options.max_world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.world_size = ", join.world_size(),
                     " is out of range [1, ", options.max_world_size, "]"));
  }
  if (join.rank() >= join.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat("join.rank = ", join.rank(),
                                                   " is not below world_size ",
                                                   join.world_size()));
  }
  if (join.applied_step() < -1 || join.applied_step() >= kMaxStep) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.applied_step = ", join.applied_step(),
                     " is out of range [-1, ", kMaxStep, ")"));
  }
  if (join.layers_size() < 1 || join.layers_size() > options.max_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.layers has ", join.layers_size(),
                     " entries; expected 1 to ", options.max_layers));
  }
  for (int l = 0; l < join.layers_size(); ++l) {
    if (absl::Status status = ValidateLayerName(l, join.layers(l).name());
        !status.ok()) {
      return status;
    }
    const uint64_t numel = join.layers(l).numel();
    if (numel < 1 || numel > kMaxPayloadNumel) {
      return absl::InvalidArgumentError(absl::StrCat(
          "join.layers[", l, "] (\"", LogText(join.layers(l).name()),
          "\") has numel ", numel, "; expected 1 to ", kMaxPayloadNumel));
    }
  }
  return absl::OkStatus();
}

absl::Status CompareJoinWithJob(const JobState& job, const v1::Join& join) {
  const std::string prefix = absl::StrCat(
      "rank ", join.rank(), " does not match job \"", job.id, "\": ");
  if (join.world_size() != job.world_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, "world_size ", join.world_size(), " vs ", job.world_size));
  }
  if (static_cast<size_t>(join.layers_size()) != job.layers.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "layer table has ", join.layers_size(),
                     " layers vs ", job.layers.size()));
  }
  for (int l = 0; l < join.layers_size(); ++l) {
    const v1::LayerInfo& mine = join.layers(l);
    const v1::LayerInfo& theirs = job.layers[l];
    if (mine.name() != theirs.name() || mine.numel() != theirs.numel()) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "layer ", l, " is \"", LogText(mine.name()),
                       "\" with ", mine.numel(), " elements vs \"",
                       LogText(theirs.name()), "\" with ", theirs.numel()));
    }
  }
  if (join.initial_params_hash() != job.params_hash) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "initial parameter hash ",
                     absl::Hex(join.initial_params_hash(), absl::kZeroPad16),
                     " vs ", absl::Hex(job.params_hash, absl::kZeroPad16),
                     " (replicas did not start from the same weights)"));
  }
  return absl::OkStatus();
}

absl::Status CheckIncarnationLead(const v1::Join& join,
                                  absl::Duration max_lead) {
  const uint64_t limit = IncarnationLimit(max_lead);
  if (join.incarnation() <= limit) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "join.incarnation ", join.incarnation(),
      " is too far ahead of this shard's clock: at most ", limit,
      " (now in microseconds since the Unix epoch + --max_incarnation_lead "
      "of ",
      absl::FormatDuration(max_lead),
      "); use the process start time in microseconds"));
}

}  // namespace entrograd::aggregator
