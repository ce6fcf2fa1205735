// The kGapRange index encoding: the gaps between ascending indices, range
// coded. The indices a 1000x selection sends are clustered (top-k of a
// fully connected layer falls on a few rows and columns), so their gaps
// are far from the geometric distribution a fixed code such as the delta
// varint or Golomb-Rice assumes; an adaptive coder learns each message's
// distribution as it goes and needs no side table.
//
// Format (INDEX_ENCODING_GAP_RANGE in protos/entrograd/v1/aggregator.proto,
// the contract): each index i_j becomes
// v = i_j - i_{j-1} (with i_{-1} = -1), so v >= 1. Its bit length minus one,
// b = floor(log2 v) in [0, 31], is coded with an adaptive binary model (a
// 5-level bit tree, 11-bit probabilities, adaptation shift 4, as LZMA's
// bit trees); then the b bits of v below its leading one, most significant
// first, with probability 1/2 each. The range coder is LZMA's (32-bit range,
// carry propagated through a cached byte), with its always-zero first byte
// left out: the stream is 4 bytes plus one per renormalisation, and a
// decoder reading the same model consumes it exactly and ends with code 0.
// The model starts afresh in every payload, so a payload decodes on its own.
#ifndef ENTROGRAD_CODEC_GAP_RANGE_CODER_H_
#define ENTROGRAD_CODEC_GAP_RANGE_CODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace entrograd::codec_internal {

// Replaces *out with the kGapRange bytes of `indices` (strictly ascending;
// not validated). Deterministic: the same indices give the same bytes.
// Empty indices give an empty string.
void WriteGapRange(absl::Span<const uint32_t> indices, std::string* out);

// The size WriteGapRange's output would have, without building it (the
// coder runs, its bytes are only counted).
int64_t GapRangeBytes(absl::Span<const uint32_t> indices);

// Decodes `bytes` as `count` kGapRange indices of a vector of `numel`
// elements (count <= numel, numel <= kMaxPayloadNumel). On success
// *indices holds exactly `count` strictly ascending indices < numel. The
// output grows as symbols decode (never beyond count), so a count the bytes
// cannot hold fails on the bytes running out, not on an allocation.
// Errors, INVALID_ARGUMENT: "index_bytes: truncated" when the stream ends
// before `count` indices; "index_bytes: trailing bytes" when bytes remain
// after them; "index_bytes: index ... >= numel"; "index_bytes: not an
// encoder's gap_range stream" when the code does not end at 0 (an encoder
// always ends there, so a stream that decodes is the one an encoder writes
// for its indices).
absl::Status ReadGapRange(uint64_t numel, uint64_t count,
                          absl::string_view bytes,
                          std::vector<uint32_t>* indices);

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_GAP_RANGE_CODER_H_
