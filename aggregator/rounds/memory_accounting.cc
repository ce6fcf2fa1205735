#include "aggregator/rounds/memory_accounting.h"

#include <algorithm>
#include <optional>

#include "aggregator/rounds/job_state.h"

namespace entrograd::aggregator {

namespace {

// At least sizeof(RoundState) and sizeof(JobState::Member), so the counted
// sizes cannot fall behind the structs.
constexpr int64_t kRoundFixedBytes = 128;
constexpr int64_t kMemberBytes = 48;
static_assert(sizeof(RoundState) <= kRoundFixedBytes);
static_assert(sizeof(JobState::Member) <= kMemberBytes);

}  // namespace

int64_t RoundOverheadBytes(uint32_t world_size) {
  return kRecordOverheadBytes + kRoundFixedBytes +
         static_cast<int64_t>(world_size) *
             static_cast<int64_t>(sizeof(std::optional<DecodedPayload>));
}

int64_t MergeBytesBound(uint64_t numel, uint64_t entries) {
  const uint64_t merged = std::min(numel, entries);
  // The merged indices and values; the encoding picks the smallest layout,
  // never larger than raw indices and values nor than a bitmap plus dense
  // values; PayloadToProto copies it into the message.
  const uint64_t merged_bytes = merged * (sizeof(uint32_t) + sizeof(float));
  const uint64_t encoded =
      std::min(merged_bytes, numel * sizeof(float) + numel / 8 + 64);
  return static_cast<int64_t>(merged_bytes + 2 * encoded);
}

int64_t JobTableBytes(const v1::Join& join) {
  int64_t bytes = kRecordOverheadBytes + 512;  // the job record itself
  for (const v1::LayerInfo& layer : join.layers()) {
    bytes += static_cast<int64_t>(sizeof(v1::LayerInfo) + layer.name().size());
  }
  // A Member is an incarnation, a flag, a sink pointer and an applied step.
  bytes += static_cast<int64_t>(join.world_size()) * kMemberBytes;
  return bytes;
}

int64_t DecodedBytesBound(const v1::SparsePayload& payload, uint64_t numel) {
  if (payload.index_encoding() == v1::INDEX_ENCODING_DENSE) {
    return static_cast<int64_t>(numel * sizeof(float));
  }
  const uint64_t count = std::min<uint64_t>(payload.count(), numel);
  return static_cast<int64_t>(count * (sizeof(uint32_t) + sizeof(float)));
}

int64_t DecodedBytes(const DecodedPayload& payload) {
  return static_cast<int64_t>(payload.indices.size() * sizeof(uint32_t) +
                              payload.values.size() * sizeof(float));
}

uint64_t EntriesOf(const DecodedPayload& payload) {
  return payload.dense ? payload.numel : payload.indices.size();
}

int64_t AbortRecordBytes(const absl::Status& reason) {
  return kRecordOverheadBytes +
         static_cast<int64_t>(sizeof(absl::Status) + reason.message().size());
}

int64_t CompletedRecordBytes(const v1::AggregatorMessage& merged) {
  return kRecordOverheadBytes + static_cast<int64_t>(merged.ByteSizeLong());
}

}  // namespace entrograd::aggregator
