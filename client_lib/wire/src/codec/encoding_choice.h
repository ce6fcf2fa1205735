// The automatic index-encoding choice: one named function so the policy
// (fewest wire bytes, ties to the earlier entry of kAllIndexEncodings) lives
// in one place and is deterministic.
#ifndef ENTROGRAD_CODEC_ENCODING_CHOICE_H_
#define ENTROGRAD_CODEC_ENCODING_CHOICE_H_

#include <cstdint>

#include "entrograd/codec.h"

namespace entrograd::codec_internal {

// What the choice needs to know about a sparse vector, so candidates can be
// costed without materialising their indices.
struct SparseShape {
  uint64_t numel = 0;
  uint64_t count = 0;              // indices a sparse encoding would carry
  int64_t delta_varint_bytes = 0;  // DeltaVarintBytes of those indices
};

// Index bytes plus value bytes of `encoding`: sparse encodings carry
// shape.count values, kDense carries shape.numel.
int64_t WireBytesFor(IndexEncoding encoding, const SparseShape& shape,
                     ValueType type);

// The encoding with the fewest WireBytesFor; ties go to the one earlier in
// kAllIndexEncodings.
IndexEncoding ChooseIndexEncoding(const SparseShape& shape, ValueType type);

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_ENCODING_CHOICE_H_
