// What a JobRegistry counts against its memory quota for each thing a
// client can make it hold, in bytes. Each is known before the thing is
// allocated, so a refusal comes before the memory exists. Exposed so tests
// and docs can size a quota. All functions are pure and thread-safe.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_MEMORY_ACCOUNTING_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_MEMORY_ACCOUNTING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// A map node and the bookkeeping beside each kept record, approximately.
inline constexpr int64_t kRecordOverheadBytes = 64;

// A round's fixed part and its per-rank slots.
int64_t RoundOverheadBytes(uint32_t world_size);
// Upper bound of merging a round of a `numel`-element layer whose ranks
// carry `entries` (index, value) pairs in all (numel per dense rank): the
// merged entries, the encoded payload and its copy into the message.
int64_t MergeBytesBound(uint64_t numel, uint64_t entries);
// A job's layer table and member slots, as declared by `join`.
int64_t JobTableBytes(const v1::Join& join);

// What DecodePayload may allocate for `payload` of a `numel`-element layer,
// known before decoding: numel values when dense, else count indices and
// values (a count above numel is refused by the decoder before it
// allocates).
int64_t DecodedBytesBound(const v1::SparsePayload& payload, uint64_t numel);
// What a decoded contribution holds.
int64_t DecodedBytes(const DecodedPayload& payload);
// Entries a decoded contribution adds to its round's merge.
uint64_t EntriesOf(const DecodedPayload& payload);
// A kept record of why a round was aborted.
int64_t AbortRecordBytes(const absl::Status& reason);
// A merged update kept for resends.
int64_t CompletedRecordBytes(const v1::AggregatorMessage& merged);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_MEMORY_ACCOUNTING_H_
