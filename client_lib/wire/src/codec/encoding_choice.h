// The automatic index-encoding choice: one named function so the policy
// (fewest wire bytes, ties to the earlier entry of kAllIndexEncodings) lives
// in one place and is deterministic.
#ifndef ENTROGRAD_CODEC_ENCODING_CHOICE_H_
#define ENTROGRAD_CODEC_ENCODING_CHOICE_H_

#include <cstdint>

#include <optional>

#include "codec/index_encoding.h"
#include "entrograd/codec.h"

namespace entrograd::codec_internal {

// Index bytes plus value bytes of `encoding`: sparse encodings carry
// shape.count values, kDense carries shape.numel. std::nullopt where
// IndexBytesFor has no cost (kGapRange not run).
std::optional<int64_t> WireBytesFor(IndexEncoding encoding,
                                    const SparseShape& shape, ValueType type);

// The encoding with the fewest WireBytesFor among those with a cost; ties
// go to the one earlier in kAllIndexEncodings.
IndexEncoding ChooseIndexEncoding(const SparseShape& shape, ValueType type);

// Whether kGapRange is worth running its coder for: only where a gap code
// already wins, i.e. the choice without it is kDeltaVarint. A trade of
// bytes for time: on a dense or near-dense vector gap_range can beat the
// bitmap's index bytes (a run of consecutive indices codes to almost
// nothing), but costing it there is a pass over up to numel gaps on every
// send, and the values dominate those payloads anyway.
bool WorthCostingGapRange(IndexEncoding choice_without_it);

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_ENCODING_CHOICE_H_
