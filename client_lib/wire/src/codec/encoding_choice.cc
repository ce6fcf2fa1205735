#include "codec/encoding_choice.h"

#include <cstdint>

#include "codec/index_encoding.h"
#include "entrograd/codec.h"

namespace entrograd::codec_internal {

int64_t WireBytesFor(IndexEncoding encoding, const SparseShape& shape,
                     ValueType type) {
  const uint64_t values =
      encoding == IndexEncoding::kDense ? shape.numel : shape.count;
  return IndexBytesFor(encoding, shape.numel, shape.count,
                       shape.delta_varint_bytes) +
         static_cast<int64_t>(values) * ValueTypeBytes(type);
}

IndexEncoding ChooseIndexEncoding(const SparseShape& shape, ValueType type) {
  IndexEncoding best = kAllIndexEncodings[0];
  int64_t best_bytes = WireBytesFor(best, shape, type);
  for (IndexEncoding candidate : kAllIndexEncodings) {
    const int64_t bytes = WireBytesFor(candidate, shape, type);
    if (bytes < best_bytes) {  // strict: an earlier candidate wins ties
      best = candidate;
      best_bytes = bytes;
    }
  }
  return best;
}

}  // namespace entrograd::codec_internal
