// Writing and reading the index_bytes of a SparsePayload, one function per
// direction for every sparse IndexEncoding (kDense has no index bytes).
#ifndef ENTROGRAD_CODEC_INDEX_ENCODING_H_
#define ENTROGRAD_CODEC_INDEX_ENCODING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"

namespace entrograd::codec_internal {

// Bytes the LEB128 varint of `value` takes: 1 to 5.
inline int VarintBytes(uint32_t value) {
  return 1 + (value >= (1u << 7)) + (value >= (1u << 14)) +
         (value >= (1u << 21)) + (value >= (1u << 28));
}

// Bytes of the kDeltaVarint encoding of strictly ascending `indices`.
int64_t DeltaVarintBytes(absl::Span<const uint32_t> indices);

// What costing the encodings needs to know about a sparse vector, so that
// most of them can be costed without materialising the indices.
struct SparseShape {
  uint64_t numel = 0;
  uint64_t count = 0;              // indices a sparse encoding would carry
  int64_t delta_varint_bytes = 0;  // DeltaVarintBytes of those indices
  // kGapRange's index bytes, known only by running its coder; unset when
  // it was not run (then kGapRange is no candidate).
  std::optional<int64_t> gap_range_bytes;
};

// Index bytes of `encoding` for the vector `shape` describes; std::nullopt
// for kGapRange when shape.gap_range_bytes is unset.
std::optional<int64_t> IndexBytesFor(IndexEncoding encoding,
                                     const SparseShape& shape);

// Replaces *out with the index bytes of `indices` (already validated:
// strictly ascending, each < numel). kDense writes none.
void WriteIndices(IndexEncoding encoding, uint64_t numel,
                  absl::Span<const uint32_t> indices, std::string* out);

// Decodes and validates `bytes` as `count` indices of a vector of `numel`
// elements (numel in [1, kMaxPayloadNumel], count <= numel). `encoding` must
// not be kDense. On success *indices holds exactly `count` strictly
// ascending indices < numel. Checks byte sizes against count before
// allocating. Errors are INVALID_ARGUMENT prefixed "index_bytes: " or
// "count: ".
absl::Status ReadIndices(IndexEncoding encoding, uint64_t numel, uint64_t count,
                         absl::string_view bytes,
                         std::vector<uint32_t>* indices);

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_INDEX_ENCODING_H_
